package main

import (
	"errors"
	"fmt"
	"testing"
)

func TestUserMessage(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"bench chain", errors.New("harness.Suite.ReadResponses: bench.ReadResponses: bench.ReadJSONL: resp.jsonl line 2: malformed JSON: unexpected EOF"),
			"resp.jsonl line 2: malformed JSON: unexpected EOF"},
		{"after a context", errors.New("config key curriculum.path: dataset.LoadPrompts: cur.jsonl:1: field category: unknown category \"x\""),
			"config key curriculum.path: cur.jsonl:1: field category: unknown category \"x\""},
		{"operation with an argument", errors.New("train.Rescore in.parquet: 3 of 4 rollouts failed"),
			"in.parquet: 3 of 4 rollouts failed"},
		{"wrapped", fmt.Errorf("export.Rollouts: %w", errors.New("open nowhere/rollouts: no such file or directory")),
			"open nowhere/rollouts: no such file or directory"},
		{"file names stay", errors.New("config.yaml: line 3: bad key"), "config.yaml: line 3: bad key"},
		{"a key stays", errors.New("config key judge.kind: unknown kind"), "config key judge.kind: unknown kind"},
		{"mid-sentence names stay", errors.New("x.jsonl: see dataset.Export docs"), "x.jsonl: see dataset.Export docs"},
		{"nothing to strip", errors.New("interrupted"), "interrupted"},
	}
	for _, tt := range tests {
		if got := userMessage(tt.err); got != tt.want {
			t.Errorf("%s: userMessage(%q) = %q, want %q", tt.name, tt.err, got, tt.want)
		}
	}
}
