// Package export writes rollouts as datasets: a run's (its
// rollouts/step-N.parquet), the output of parley rollout, or given files,
// streamed in constant memory into one of the formats of its format → sink
// table (formats: JSONL chat messages, a Hugging Face dataset folder), with
// filters by step, reward, agreement and, for one role's chats, by the
// role's outcome.
//
// The exported record is declared once, as Record: its fields are the
// JSONL keys and the parquet columns, and the Hugging Face features of the
// dataset card are derived from it (features). The rollouts are read
// through source, a projection of dataset.Rollout.
package export

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/parleyhq/parley/dataset"
	"go.uber.org/zap"
)

// DefaultShardRows is the number of rows per parquet shard of an HF export
// when Options.ShardRows is zero.
const DefaultShardRows = 50_000

// Options selects what Rollouts reads and writes.
type Options struct {
	// From is where the rollouts are: a run directory (its
	// rollouts/step-*.parquet in step order: parley train, or parley
	// score's --out), the output directory of parley rollout (its
	// rollouts.parquet), or a rollouts parquet file.
	From string
	// In are rollouts parquet files read in the order given, instead of
	// From.
	In []string
	// Format is the name of one of Formats: FormatJSONL or FormatHF.
	Format string
	// Out is where the export goes. For FormatJSONL it is a file if it ends
	// in ".jsonl", else a directory that gets rollouts.jsonl. For FormatHF
	// it is the dataset folder: Out/data/train-00000-of-0000N.parquet and
	// Out/README.md (earlier train-*.parquet shards there are replaced).
	Out string
	// MinStep and MaxStep bound the steps exported, inclusive; MaxStep 0
	// means no upper bound. A run directory's step files outside the
	// bounds are not read; other rows are kept by their step column.
	MinStep, MaxStep int
	// MinReward, if set, keeps rollouts whose reward is at least this
	// (rollouts without a reward are left out).
	MinReward *float64
	// AgreedOnly keeps only rollouts whose dialogue ended in agreement.
	AgreedOnly bool
	// IncludeFailed keeps failed rollouts (excluded by default).
	IncludeFailed bool
	// Role, when set, exports each rollout as that role's chat (its own
	// view of the conversation when the game recorded one, as seed 001's
	// endowment game does; see roleRecord) with that role's reward, and
	// keeps only rollouts where the role played, by one of Models when
	// given, with an outcome (dataset.RoleOutcome.Outcome) that meets
	// every condition of Where: the distillation corpora of seed 001
	// (table 1), for example Role "holder", Where share_given<=0.01.
	Role   string
	Models []string
	Where  []Condition
	// Traces keeps the role's private <think> traces in its messages
	// (they are dropped by default).
	Traces bool
	// ShardRows is the number of rows per HF parquet shard; zero means
	// DefaultShardRows.
	ShardRows int
	// Scale labels the scores of files that record no ScoreScale (files
	// written before scales were recorded): the run's config's
	// ScoreScale. Zero leaves them unlabelled.
	Scale dataset.ScoreScale
	// Logger logs progress per file at info level; nil means no logging.
	Logger *zap.Logger
}

// Stats counts what Rollouts did.
type Stats struct {
	Files          int      // rollout files read
	Read           int64    // rollouts read
	Written        int64    // rollouts exported
	SkippedFailed  int64    // failed rollouts left out
	SkippedFilters int64    // rollouts left out by the step bounds, MinReward or AgreedOnly
	Outputs        []string // files written (for HF, the shards then README.md)
	// FirstStep and LastStep are the smallest and largest step of the
	// rollouts exported (0 when none were).
	FirstStep, LastStep int32
	// Scales are the score scales of the rollouts exported, by label, in
	// the order first seen ("" for unjudged rollouts is not listed).
	Scales []string
}

// Rollouts streams rollouts — a run's, the output of parley rollout, or
// given files (see Options.From and In) — into the format opts.Format
// names, in constant memory: rollout files are read a few rows at a time
// (token sequences are skipped) and output is written as it comes.
// Outputs appear atomically: a failed or cancelled export leaves nothing
// at the final paths.
func Rollouts(ctx context.Context, opts Options) (Stats, error) {
	stats, err := rollouts(ctx, opts)
	if err != nil {
		return stats, fmt.Errorf("export.Rollouts: %w", err)
	}
	return stats, nil
}

// file is one rollouts file to export and the scale of its scores.
type file struct {
	path  string
	scale dataset.ScoreScale
}

// inputs resolves From or In into the rollouts files to read, in order,
// each checked to be a rollouts file, and says what they are for the
// dataset card.
func inputs(opts Options) (files []file, what string, err error) {
	var paths []string
	switch {
	case opts.From != "" && len(opts.In) > 0:
		return nil, "", errors.New("give the rollouts by From (a directory or a file) or by In (files), not both")
	case len(opts.In) > 0:
		paths, what = opts.In, "files "+quoteBases(opts.In)
	case opts.From == "":
		return nil, "", errors.New("no rollouts given: name a run directory, the output directory of parley rollout, or rollouts files")
	default:
		paths, what, err = fromPaths(opts)
		if err != nil {
			return nil, "", err
		}
	}
	for _, p := range paths {
		if err := dataset.CheckRolloutsFile(p); err != nil {
			return nil, "", err
		}
		s, ok, err := dataset.ReadScoreScale(p)
		if err != nil {
			return nil, "", err
		}
		if !ok {
			s = opts.Scale
		}
		files = append(files, file{path: p, scale: s})
	}
	return files, what, nil
}

// fromPaths lists the rollouts files of From: a run directory's step files
// within the step bounds, parley rollout's rollouts.parquet, or From
// itself when it is a file.
func fromPaths(opts Options) ([]string, string, error) {
	st, err := os.Stat(opts.From)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", fmt.Errorf("%s: no such file or directory (give a run directory, parley rollout's output directory or a rollouts file)", opts.From)
	}
	if err != nil {
		return nil, "", err
	}
	name := filepath.Base(filepath.Clean(opts.From))
	if !st.IsDir() {
		return []string{opts.From}, "file `" + name + "`", nil
	}
	rd := dataset.RunDir(opts.From)
	if _, err := os.Stat(rd.RolloutsDir()); err == nil {
		steps, err := dataset.RolloutFiles(rd.RolloutsDir(), opts.MinStep, opts.MaxStep)
		if err != nil {
			return nil, "", err
		}
		if len(steps) == 0 {
			return nil, "", fmt.Errorf("%s: no rollout files in steps [%d, %s]", rd.RolloutsDir(), opts.MinStep, maxStepString(opts.MaxStep))
		}
		paths := make([]string, len(steps))
		for i, s := range steps {
			paths[i] = s.Path
		}
		return paths, "run `" + name + "`", nil
	}
	one := filepath.Join(opts.From, dataset.RolloutFileName)
	if _, err := os.Stat(one); err == nil {
		return []string{one}, "`parley rollout` output `" + name + "`", nil
	}
	return nil, "", fmt.Errorf("%s holds neither %s/step-N.parquet (a run of parley train, or parley score's output) nor %s (parley rollout's output)",
		opts.From, dataset.RolloutsDirName, dataset.RolloutFileName)
}

func quoteBases(paths []string) string {
	q := make([]string, len(paths))
	for i, p := range paths {
		q[i] = "`" + filepath.Base(p) + "`"
	}
	return strings.Join(q, ", ")
}

func rollouts(ctx context.Context, opts Options) (Stats, error) {
	var stats Stats
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	if opts.Out == "" {
		return stats, errors.New("no output path")
	}
	format, err := formatOf(opts.Format)
	if err != nil {
		return stats, err
	}
	files, what, err := inputs(opts)
	if err != nil {
		return stats, err
	}
	out, err := format.open(opts, what)
	if err != nil {
		return stats, err
	}
	inSteps := func(step int32) bool {
		return int(step) >= opts.MinStep && (opts.MaxStep == 0 || int(step) <= opts.MaxStep)
	}
	var catalog roleCatalog
	for _, ef := range files {
		err := dataset.StreamRows(ef.path, func(s source) error {
			stats.Read++
			if stats.Read%256 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			if opts.Role != "" {
				catalog.add(s, opts)
			}
			if s.Failed && !opts.IncludeFailed && inSteps(s.Step) {
				stats.SkippedFailed++
				return nil
			}
			rec := s.record(ef.scale)
			if opts.Role != "" {
				var keep bool
				if rec, keep = s.roleRecord(rec, opts); !keep {
					stats.SkippedFilters++
					return nil
				}
			}
			if !inSteps(s.Step) || (opts.AgreedOnly && !s.Agreed) ||
				(opts.MinReward != nil && (rec.Reward == nil || float64(*rec.Reward) < *opts.MinReward)) {
				stats.SkippedFilters++
				return nil
			}
			if err := out.write(&rec); err != nil {
				return err
			}
			stats.count(&rec)
			return nil
		})
		if err == nil {
			err = ctx.Err()
		}
		if err != nil {
			out.abort()
			return stats, err
		}
		stats.Files++
		log.Info("exported rollout file", zap.String("path", ef.path), zap.Int64("written", stats.Written))
	}
	if opts.Role != "" {
		if err := catalog.check(opts, stats.Read); err != nil {
			out.abort()
			return stats, err
		}
	}
	outs, err := out.close(stats)
	if err != nil {
		return stats, err
	}
	stats.Outputs = outs
	return stats, nil
}

// count adds an exported record to the stats.
func (s *Stats) count(r *Record) {
	if s.Written == 0 || r.Step < s.FirstStep {
		s.FirstStep = r.Step
	}
	if s.Written == 0 || r.Step > s.LastStep {
		s.LastStep = r.Step
	}
	s.Written++
	if r.ScoreScale != nil && !slices.Contains(s.Scales, *r.ScoreScale) {
		s.Scales = append(s.Scales, *r.ScoreScale)
	}
}

func maxStepString(max int) string {
	if max == 0 {
		return "∞"
	}
	return strconv.Itoa(max)
}
