package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/parleyhq/parley/config"
	"github.com/spf13/cobra"
)

func newConfigCmd(a *cli) *cobra.Command {
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
	var markdown bool
	keys := &cobra.Command{
		Use:   "keys [--markdown]",
		Short: "List every config key with its type, default and meaning (docs/config.md is --markdown's output)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if markdown {
				return config.WriteKeysMarkdown(cmd.OutOrStdout())
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "KEY\tTYPE\tDEFAULT\tMEANING")
			for _, k := range config.KeyInfos() {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", k.Key, k.Type, k.Default, k.Doc)
			}
			return w.Flush()
		},
	}
	keys.Flags().BoolVar(&markdown, "markdown", false, "write the reference as a markdown table")
	cmd.AddCommand(show, keys)
	return cmd
}
