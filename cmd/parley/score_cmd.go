package main

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"

	"github.com/parleyhq/parley/config"
	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/internal/summary"
	"github.com/parleyhq/parley/internal/textfile"
	"github.com/parleyhq/parley/train"
	"github.com/spf13/cobra"
)

func newScoreCmd(a *cli) *cobra.Command {
	var path, in, out string
	var step, policyVersion int
	var force bool
	cmd := &cobra.Command{
		Use:   "score --config F --in ROLLOUTS.parquet --out DIR",
		Short: "Judge a rollouts parquet, compute advantages and write the batch (re-score without rolling out again)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, log, err := a.setup(cmd, path)
			if err != nil {
				return err
			}
			if in == "" || out == "" {
				return fmt.Errorf("score: --in and --out are required")
			}
			if err := dataset.CheckRolloutsFile(in); err != nil {
				return fmt.Errorf("score: --in: %w", err)
			}
			if err := preflightJudge(cmd.Context(), cfg, log); err != nil {
				return fmt.Errorf("score: %w", err)
			}
			judge, closeJudge, err := newJudge(cfg, out, nil, log)
			if err != nil {
				return err
			}
			defer closeJudge()
			bars := a.bars()
			sum, err := train.Rescore(cmd.Context(), train.RescoreOptions{
				In: in, Out: dataset.RunDir(out), Step: step, PolicyVersion: policyVersion, Force: force,
				MaxFailedFraction: cfg.Train.MaxFailedFraction,
				Score:             train.ScoreOptions{RunID: cfg.Run.Name, Advantage: advantageOptions(cfg.GRPO), Mask: cfg.GRPO.Mask, JudgeConcurrency: cfg.Judge.Concurrency},
				Judge:             judge, Progress: bars.Start, Logger: log,
			})
			bars.Wait()
			if err != nil {
				return err
			}
			a.summarize(summary.New("score").
				Add("judged", sum.Judge.Judged).AddIf(sum.Judge.Failed > 0, "judge failed", sum.Judge.Failed).AddIf(sum.Judge.Cached > 0, "from cache", sum.Judge.Cached).
				Add("groups", sum.Advantage.Groups).Add("dropped (zero variance)", sum.Advantage.DroppedZeroVariance).
				Add("score mean", sum.Advantage.ScoreMean).Add("rows", sum.Ready.Rows).Add("tokens", sum.Ready.Tokens).
				Add("batch", sum.BatchPath))
			return nil
		},
	}
	configFlags(cmd, &path)
	cmd.Flags().StringVar(&in, "in", "", "rollouts parquet to score")
	cmd.Flags().StringVar(&out, "out", "", "output directory: batches/, rollouts/, the judge cache and score-summary.json")
	cmd.Flags().IntVar(&step, "step", -1, "step number of the batch (default: the rollouts' step, at least 1)")
	cmd.Flags().IntVar(&policyVersion, "policy-version", -1, "policy version (default: the rollouts')")
	cmd.Flags().BoolVar(&force, "force", false, "replace a batch already written for the step")
	return cmd
}

const exportLong = `Exports rollouts as JSONL (one rollout a line, its dialogue as chat
messages) or as a Hugging Face dataset folder (parquet shards and a README.md
card), streaming, in constant memory.

--from takes a run directory (RUN/rollouts/step-N.parquet: parley train, or
parley score's --out), the output directory of parley rollout
(DIR/rollouts.parquet), or a rollouts parquet file; --in takes rollouts files
one by one instead. Scores are labelled by the scale their judge gave them on
(CA 1–5, rule <kind> 0–1), as recorded in the rollouts files or, for older
files, by the run directory's config.yaml.`

func newExportCmd(a *cli) *cobra.Command {
	var o dataset.ExportOptions
	var minReward float64
	var where []string
	var force bool
	cmd := &cobra.Command{
		Use:   "export --from RUN|DIR|FILE [--in FILE]... --format jsonl|hf --out DIR",
		Short: "Export rollouts (a run's, parley rollout's, or files) as JSONL chat messages or a Hugging Face dataset folder",
		Long:  exportLong,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := a.logger(nil)
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("min-reward") {
				o.MinReward = &minReward
			}
			if err := exportInputs(&o, where, force); err != nil {
				return fmt.Errorf("export: %w", err)
			}
			o.Logger = log
			st, err := dataset.Export(cmd.Context(), o)
			if err != nil {
				return err
			}
			a.summarize(summary.New("export").
				Add("read", st.Read).Add("written", st.Written).
				Add("skipped (failed)", st.SkippedFailed).Add("skipped (filters)", st.SkippedFilters).
				Add("outputs", st.Outputs))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.From, "from", "", "a run directory (RUN/rollouts/step-*.parquet), parley rollout's output directory (DIR/rollouts.parquet), or a rollouts file")
	f.StringArrayVar(&o.In, "in", nil, "a rollouts parquet file, repeatable (instead of --from)")
	f.StringVar(&o.Format, "format", "jsonl", "jsonl or hf")
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

// exportInputs checks export's flags before anything is read or written:
// one source, the --role filters, an --out that is new or forced; it sets
// the score scale of a run directory.
func exportInputs(o *dataset.ExportOptions, where []string, force bool) error {
	switch {
	case o.From != "" && len(o.In) > 0:
		return fmt.Errorf("give --from or --in, not both")
	case o.From == "" && len(o.In) == 0:
		return fmt.Errorf("--from or --in is required")
	case o.Out == "":
		return fmt.Errorf("--out is required")
	}
	for _, w := range where {
		c, err := dataset.ParseCondition(w)
		if err != nil {
			return fmt.Errorf("flag --where: %w", err)
		}
		o.Where = append(o.Where, c)
	}
	if (len(o.Where) > 0 || len(o.Models) > 0 || o.Traces) && o.Role == "" {
		return fmt.Errorf("--where, --model and --traces need --role")
	}
	if err := checkOut(o.Out, force); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	var err error
	o.Scale, err = runScale(o.From)
	return err
}

// runScale is the score scale of the run directory dir by its frozen
// config.yaml: the zero scale when dir is not a run directory with one.
func runScale(dir string) (dataset.ScoreScale, error) {
	b, err := textfile.ReadFile(dataset.RunDir(dir).ConfigPath())
	if dir == "" || errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return dataset.ScoreScale{}, nil
	}
	if err != nil {
		return dataset.ScoreScale{}, err
	}
	s, err := config.ScoreScaleOf(b)
	if err != nil {
		return dataset.ScoreScale{}, fmt.Errorf("%s: %w", dataset.RunDir(dir).ConfigPath(), err)
	}
	return s, nil
}
