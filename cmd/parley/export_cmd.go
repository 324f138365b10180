package main

import (
	"strings"

	"github.com/parleyhq/parley/app"
	"github.com/parleyhq/parley/dataset/export"
	"github.com/spf13/cobra"
)

// exportSources is the second paragraph of parley export's help: what it
// reads.
const exportSources = `--from takes a run directory (RUN/rollouts/step-N.parquet: parley train, or
parley score's --out), the output directory of parley rollout
(DIR/rollouts.parquet), or a rollouts parquet file; --in takes rollouts files
one by one instead. Scores are labelled by the scale their judge gave them on
(CA 1–5, rule <kind> 0–1), as recorded in the rollouts files or, for older
files, by the run directory's config.yaml.`

// exportHelp builds parley export's usage line, short and long help and
// --format flag usage from the export's format table (export.Formats).
func exportHelp(formats []export.Format) (use, short, long, formatUsage string) {
	var names, shorts, longs []string
	for _, f := range formats {
		names, shorts, longs = append(names, f.Name), append(shorts, f.Short), append(longs, f.Long)
	}
	use = "export --from RUN|DIR|FILE [--in FILE]... --format " + strings.Join(names, "|") + " --out DIR"
	short = "Export rollouts (a run's, parley rollout's, or files) as " + strings.Join(shorts, " or ")
	long = wrapText("Exports rollouts as "+strings.Join(longs, " or as ")+", streaming, in constant memory.", 78) +
		"\n\n" + exportSources
	return use, short, long, strings.Join(names, " or ")
}

// wrapText breaks s into lines of at most width columns between words.
func wrapText(s string, width int) string {
	var b strings.Builder
	line := 0
	for _, w := range strings.Fields(s) {
		n := len([]rune(w))
		switch {
		case line == 0:
		case line+1+n > width:
			b.WriteByte('\n')
			line = 0
		default:
			b.WriteByte(' ')
			line++
		}
		b.WriteString(w)
		line += n
	}
	return b.String()
}

func newExportCmd(a *cli) *cobra.Command {
	var o export.Options
	var minReward float64
	var where []string
	var force bool
	use, short, long, formatUsage := exportHelp(export.Formats())
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Long:  long,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := a.logger(nil)
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("min-reward") {
				o.MinReward = &minReward
			}
			return app.Export(cmd.Context(), a.env(cmd, log), o, where, force)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.From, "from", "", "a run directory (RUN/rollouts/step-*.parquet), parley rollout's output directory (DIR/rollouts.parquet), or a rollouts file")
	f.StringArrayVar(&o.In, "in", nil, "a rollouts parquet file, repeatable (instead of --from)")
	f.StringVar(&o.Format, "format", export.FormatJSONL, formatUsage)
	f.StringVar(&o.Out, "out", "", "output directory (or .jsonl file)")
	f.IntVar(&o.MinStep, "min-step", 0, "first step to export")
	f.IntVar(&o.MaxStep, "max-step", 0, "last step to export (0: no limit)")
	f.Float64Var(&minReward, "min-reward", 0, "keep rollouts with at least this reward")
	f.BoolVar(&o.AgreedOnly, "agreed-only", false, "keep only rollouts whose agents agreed")
	f.BoolVar(&o.IncludeFailed, "include-failed", false, "keep failed rollouts too")
	f.StringVar(&o.Role, "role", "", "export each rollout as this role's chat, with its reward (for example holder)")
	f.StringSliceVar(&o.Models, "model", nil, "with --role: keep rollouts where the role was played by these models (a tournament's agent names)")
	f.StringArrayVar(&where, "where", nil, "with --role: keep rollouts whose role outcome meets KEY OP VALUE, e.g. share_given<=0.01 (repeatable)")
	f.BoolVar(&o.Traces, "traces", false, "with --role: keep the role's private <think> traces")
	f.BoolVar(&force, "force", false, "replace what --out holds")
	return cmd
}
