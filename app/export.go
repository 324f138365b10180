package app

import (
	"context"
	"fmt"

	"github.com/parleyhq/parley/dataset/export"
	"github.com/parleyhq/parley/internal/summary"
)

// Export writes rollouts in one of export.Formats (export.Rollouts) after
// checking the options: where are --where conditions, force replaces what
// o.Out holds.
func Export(ctx context.Context, env Env, o export.Options, where []string, force bool) error {
	if err := exportInputs(&o, where, force); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	o.Logger = env.log()
	st, err := export.Rollouts(ctx, o)
	if err != nil {
		return err
	}
	env.summarize(summary.New("export").
		Add("read", st.Read).Add("written", st.Written).
		Add("skipped (failed)", st.SkippedFailed).Add("skipped (filters)", st.SkippedFilters).
		Add("outputs", st.Outputs))
	return nil
}

// exportInputs checks export's flags before anything is read or written:
// one source, the --role filters, an --out that is new or forced; it sets
// the score scale of a run directory.
func exportInputs(o *export.Options, where []string, force bool) error {
	switch {
	case o.From != "" && len(o.In) > 0:
		return fmt.Errorf("give --from or --in, not both")
	case o.From == "" && len(o.In) == 0:
		return fmt.Errorf("--from or --in is required")
	case o.Out == "":
		return fmt.Errorf("--out is required")
	}
	for _, w := range where {
		c, err := export.ParseCondition(w)
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
