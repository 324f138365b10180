package main

import (
	_ "github.com/parquet-go/parquet-go"
	_ "github.com/sashabaranov/go-openai"
	_ "github.com/spf13/cobra"
	_ "github.com/spf13/viper"
	_ "github.com/vbauerster/mpb/v8"
	_ "go.uber.org/zap"
	_ "golang.org/x/term"
	_ "golang.org/x/time/rate"
	_ "gopkg.in/yaml.v3"
	_ "gonum.org/v1/plot"
	_ "github.com/abadojack/whatlanggo"
	_ "golang.org/x/sync/errgroup"
)

func main() {}
