package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newConfigCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{Use: "config", Short: "Inspect configuration"}
	var path string
	show := &cobra.Command{
		Use:   "show",
		Short: "Print the effective config (file, then PARLEY_* variables, then flags), secrets redacted",
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.loadConfig(cmd, path)
			if err != nil {
				return err
			}
			b, err := cfg.YAML()
			if err != nil {
				return err
			}
			fmt.Fprint(cmd.OutOrStdout(), string(b))
			return nil
		},
	}
	configFlags(show, &path)
	cmd.AddCommand(show)
	return cmd
}
