package multiparty

import (
	"fmt"

	"github.com/parleyhq/parley/internal/command"
	"github.com/parleyhq/parley/rollout/multiparty/scenario"
	"github.com/spf13/cobra"
)

// The game's command, `parley scenario`, joins the command line through
// package command, so cmd/parley does not import the game.
func init() { command.Register(command.Command{Name: "scenario", New: newScenarioCmd}) }

// newScenarioCmd is `parley scenario`: seed 002's negotiation scenarios
// (generate a set, report the structure of sets).
func newScenarioCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "scenario",
		Short: "Generate and inspect the five-party negotiation scenarios of seed 002",
	}
	cmd.AddCommand(newScenarioGenerateCmd(), newScenarioReportCmd())
	return cmd
}

func newScenarioGenerateCmd() *cobra.Command {
	var (
		opts   scenario.GenerateOptions
		out    string
		target string
	)
	cmd := &cobra.Command{
		Use:   "generate --type 2hb2g|1hb3g --out FILE.jsonl [--n 20] [--seed S] [--target paper|none]",
		Short: "Generate a seeded scenario set with the structure of seed 002's table 5, each scenario validated by enumerating its packages and kept inside the stated difficulty range",
		Long: `Draws --pool candidates per scenario and chooses the set whose table 5
(honest-feasible mean, most constrained party per package, option changes
from the ideal) is closest to the seed's; every row must be within its
tolerance (rollout/multiparty/scenario/sets/README.md). --target none draws
each scenario alone, with no set target.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return fmt.Errorf("scenario generate: --out FILE is required")
			}
			switch target {
			case "paper":
			case "none":
				opts.NoTarget = true
			default:
				return fmt.Errorf("scenario generate: flag --target: %q, want paper or none", target)
			}
			sps, err := scenario.GenerateSet(out, opts)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s\n\n%s", out, scenario.PropertiesTable(sps))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Type, "type", scenario.Type2HB2G, "scenario type: 2hb2g or 1hb3g, or both comma separated")
	f.IntVar(&opts.N, "n", 20, "number of scenarios per type")
	f.Int64Var(&opts.Seed, "seed", scenario.FixedSetSeed, "generator seed")
	f.StringVar(&opts.IDPrefix, "id-prefix", "", "id prefix (default: the type)")
	f.IntVar(&opts.Difficulty.FeasibleMin, "feasible-min", 0, "least honest-feasible packages (default: the type's stated range)")
	f.IntVar(&opts.Difficulty.FeasibleMax, "feasible-max", 0, "most honest-feasible packages (default: the type's stated range)")
	f.IntVar(&opts.Difficulty.LossMax, "loss-max", 0, "most points any honest party may lose from its ideal to its best feasible package (default: the type's)")
	f.StringVar(&target, "target", "paper", "set structure to meet: paper (the seed's table 5, per type) or none")
	f.IntVar(&opts.Pool, "pool", 0, "candidates drawn per scenario, among which the set is chosen (default 128)")
	f.StringVar(&out, "out", "", "output curriculum file (.jsonl)")
	return cmd
}

func newScenarioReportCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "report FILE...",
		Short: "Print the structural properties of scenario sets (seed 002's table 5)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			table, _, err := scenario.ReportSets(args)
			if err != nil {
				return err
			}
			fmt.Fprint(cmd.OutOrStdout(), table)
			return nil
		},
	}
}
