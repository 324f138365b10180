package dataset

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/parleyhq/parley/internal/fsutil"
	"github.com/parquet-go/parquet-go"
	"go.uber.org/zap"
)

// Export formats.
const (
	FormatJSONL = "jsonl" // one JSON object a line
	FormatHF    = "hf"    // a Hugging Face dataset folder: parquet shards and a README.md card
)

// Defaults of ExportOptions.
const (
	DefaultShardRows    = 50_000 // rows per parquet shard of an HF export
	exportRowGroupRows  = 1_000  // rows per row group of an HF shard
	exportJSONLFileName = "rollouts.jsonl"
	// RolloutFileName is the rollouts file `parley rollout` writes in its
	// output directory.
	RolloutFileName = "rollouts.parquet"
)

// ExportOptions selects what Export reads and writes.
type ExportOptions struct {
	// From is where the rollouts are: a run directory (its
	// rollouts/step-*.parquet in step order: parley train, or parley
	// score's --out), the output directory of parley rollout (its
	// rollouts.parquet), or a rollouts parquet file.
	From string
	// In are rollouts parquet files read in the order given, instead of
	// From.
	In []string
	// Format is FormatJSONL or FormatHF.
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
	// given, with an outcome (RoleOutcome.Outcome) that meets every
	// condition of Where: the distillation corpora of seed 001 (table 1),
	// for example Role "holder", Where share_given<=0.01.
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
	Scale ScoreScale
	// Logger logs progress per file at info level; nil means no logging.
	Logger *zap.Logger
}

// ExportStats counts what Export did.
type ExportStats struct {
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

// Float is a float32 that JSON always writes with a fraction or an
// exponent ("3.0", never "3"), so that every reader infers a float column
// from every file, also one whose values happen to be integral (CA scores);
// a value that is not finite is written as null.
type Float float32

// MarshalJSON writes f as a JSON number with a fraction or an exponent.
func (f Float) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte("null"), nil
	}
	b := strconv.AppendFloat(nil, v, 'g', -1, 32)
	if !bytes.ContainsAny(b, ".e") {
		b = append(b, ".0"...)
	}
	return b, nil
}

// ChatMessage is one message of an exported rollout. Every message has the
// same keys (name is null when the message has none), so that readers
// infer one struct for the messages column.
//
// Messages scheme: first the system prompt of each role that had one, in
// the order the roles first spoke, as {role: "system", name: the role,
// content: its system prompt}; then the task, {role: "user", name: null,
// content: task}; then each turn of the rollout in order as {role:
// "assistant", name: the turn's agent ("A" or "B" in the deliberation game,
// "single" for the single-agent baseline, "final" for the final completion,
// or the game's role names), content: the turn's text}. The final
// completion is also in the record's "final" field.
type ChatMessage struct {
	Role    string  `json:"role" parquet:"role"`
	Name    *string `json:"name" parquet:"name,optional"`
	Content string  `json:"content" parquet:"content"`
}

// ExportPersonas are the personas of roles A and B of an exported rollout
// and their short names; null when the rollout has none (single-agent).
type ExportPersonas struct {
	A     *string `json:"a" parquet:"a,optional"`
	B     *string `json:"b" parquet:"b,optional"`
	NameA *string `json:"name_a" parquet:"name_a,optional"`
	NameB *string `json:"name_b" parquet:"name_b,optional"`
}

// ExportRecord is one exported rollout: a JSONL line, or a row of the HF
// parquet shards (messages as list<struct<role,name,content>>, personas as
// struct<a,b,name_a,name_b>). Every record has every key; a value that
// does not apply is null, never a zero that could be read as data: an
// unjudged rollout (its judging failed, or it was never scored) has null
// score, reward and advantage.
type ExportRecord struct {
	ID             string         `json:"id" parquet:"id"`
	RunID          string         `json:"run_id" parquet:"run_id"`
	Step           int32          `json:"step" parquet:"step"`
	PolicyVersion  int32          `json:"policy_version" parquet:"policy_version"`
	Env            string         `json:"env" parquet:"env"`
	PromptID       string         `json:"prompt_id" parquet:"prompt_id"`
	GroupID        string         `json:"group_id" parquet:"group_id"`
	Category       string         `json:"category" parquet:"category"`
	Split          *string        `json:"split" parquet:"split,optional"`
	Task           string         `json:"task" parquet:"task"`
	PersonaPairID  *string        `json:"persona_pair_id" parquet:"persona_pair_id,optional"`
	Personas       ExportPersonas `json:"personas" parquet:"personas"`
	Messages       []ChatMessage  `json:"messages" parquet:"messages,list"`
	Final          string         `json:"final" parquet:"final"`
	Agreed         bool           `json:"agreed" parquet:"agreed"`
	Rounds         int32          `json:"rounds" parquet:"rounds"`
	Judged         bool           `json:"judged" parquet:"judged"`
	JudgeModel     *string        `json:"judge_model" parquet:"judge_model,optional"`
	JudgeRationale *string        `json:"judge_rationale" parquet:"judge_rationale,optional"`
	JudgeError     *string        `json:"judge_error" parquet:"judge_error,optional"`
	Score          *Float         `json:"score" parquet:"score,optional"`
	ScoreScale     *string        `json:"score_scale" parquet:"score_scale,optional"`
	Reward         *Float         `json:"reward" parquet:"reward,optional"`
	Advantage      *Float         `json:"advantage" parquet:"advantage,optional"`
	Failed         bool           `json:"failed" parquet:"failed"`
	Error          *string        `json:"error" parquet:"error,optional"`
}

// exportSource is the projection of Rollout that Export reads: the token
// sequences are never decoded.
type exportSource struct {
	RunID          string         `parquet:"run_id"`
	RolloutID      string         `parquet:"rollout_id"`
	Step           int32          `parquet:"step"`
	PolicyVersion  int32          `parquet:"policy_version"`
	Env            string         `parquet:"env"`
	PromptID       string         `parquet:"prompt_id"`
	GroupID        string         `parquet:"group_id"`
	Category       string         `parquet:"category"`
	Split          string         `parquet:"split"`
	Task           string         `parquet:"task"`
	PersonaPairID  string         `parquet:"persona_pair_id"`
	Personas       []Persona      `parquet:"personas,list"`
	SystemPrompts  []SystemPrompt `parquet:"system_prompts,list"`
	Roles          []RoleOutcome  `parquet:"roles,list"`
	Turns          []Turn         `parquet:"turns,list"`
	Agreed         bool           `parquet:"agreed"`
	Rounds         int32          `parquet:"rounds"`
	Final          string         `parquet:"final"`
	Failed         bool           `parquet:"failed"`
	Error          string         `parquet:"error"`
	Score          float32        `parquet:"score"`
	Judged         bool           `parquet:"judged"`
	JudgeModel     string         `parquet:"judge_model"`
	JudgeRationale string         `parquet:"judge_rationale"`
	JudgeError     string         `parquet:"judge_error"`
	Outcome        string         `parquet:"outcome"`

	// Schema version 1 columns.
	PersonaA        string  `parquet:"persona_a"`
	PersonaB        string  `parquet:"persona_b"`
	LegacyReward    float32 `parquet:"reward"`
	LegacyAdvantage float32 `parquet:"advantage"`
}

// NewExportRecord turns a rollout into its export record; scale labels its
// score (zero: unlabelled).
func NewExportRecord(r Rollout, scale ScoreScale) ExportRecord {
	return exportSource{
		RunID: r.RunID, RolloutID: r.RolloutID, Step: r.Step, PolicyVersion: r.PolicyVersion,
		Env: r.Env, PromptID: r.PromptID, GroupID: r.GroupID, Category: r.Category, Split: r.Split,
		Task: r.Task, PersonaPairID: r.PersonaPairID, Personas: r.Personas, SystemPrompts: r.SystemPrompts,
		Roles: r.Roles, Turns: r.Turns, Agreed: r.Agreed, Rounds: r.Rounds, Final: r.Final,
		Failed: r.Failed, Error: r.Error, Score: r.Score, Judged: r.Judged, JudgeModel: r.JudgeModel,
		JudgeRationale: r.JudgeRationale, JudgeError: r.JudgeError, Outcome: r.Outcome,
	}.record(scale)
}

// opt is s as a nullable value: nil for "".
func opt(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func num(v float32) *Float {
	f := Float(v)
	return &f
}

func (s exportSource) record(scale ScoreScale) ExportRecord {
	msgs := make([]ChatMessage, 0, len(s.SystemPrompts)+len(s.Turns)+1)
	for _, sp := range s.SystemPrompts {
		msgs = append(msgs, ChatMessage{Role: "system", Name: opt(sp.Role), Content: sp.Text})
	}
	msgs = append(msgs, ChatMessage{Role: "user", Content: s.Task})
	for _, t := range s.Turns {
		msgs = append(msgs, ChatMessage{Role: "assistant", Name: opt(t.Agent), Content: t.Text})
	}
	personas := ExportPersonas{A: opt(s.PersonaA), B: opt(s.PersonaB)}
	for _, p := range s.Personas {
		switch p.Role {
		case "A":
			personas.A, personas.NameA = opt(p.Text), opt(p.Name)
		case "B":
			personas.B, personas.NameB = opt(p.Text), opt(p.Name)
		}
	}
	rec := ExportRecord{
		ID: s.RolloutID, RunID: s.RunID, Step: s.Step, PolicyVersion: s.PolicyVersion, Env: s.Env,
		PromptID: s.PromptID, GroupID: s.GroupID, Category: s.Category, Split: opt(s.Split), Task: s.Task,
		PersonaPairID: opt(s.PersonaPairID), Personas: personas, Messages: msgs, Final: s.Final,
		Agreed: s.Agreed, Rounds: s.Rounds, Judged: s.Judged, JudgeError: opt(s.JudgeError),
		Failed: s.Failed, Error: opt(s.Error),
	}
	if s.Judged {
		rec.JudgeModel, rec.JudgeRationale, rec.Score = opt(s.JudgeModel), opt(s.JudgeRationale), num(s.Score)
		if !scale.IsZero() {
			rec.ScoreScale = opt(scale.Label())
		}
	}
	if len(s.Roles) == 0 { // schema version 1: one reward for the rollout
		if s.Judged {
			rec.Reward, rec.Advantage = num(s.LegacyReward), num(s.LegacyAdvantage)
		}
		return rec
	}
	for _, ro := range s.Roles {
		if ro.Trained && ro.Scored {
			rec.Reward, rec.Advantage = num(ro.Reward), num(ro.Advantage)
			break
		}
	}
	return rec
}

// exportSink receives export records and finishes or discards the output.
type exportSink interface {
	write(*ExportRecord) error
	close(stats ExportStats) ([]string, error)
	abort()
}

// Export streams rollouts — a run's, the output of parley rollout, or
// given files (see ExportOptions.From and In) — into a JSONL file or a
// Hugging Face dataset folder, in constant memory: rollout files are read
// a few rows at a time (token sequences are skipped) and output is written
// as it comes. Outputs appear atomically: a failed or cancelled export
// leaves nothing at the final paths.
func Export(ctx context.Context, opts ExportOptions) (ExportStats, error) {
	stats, err := export(ctx, opts)
	if err != nil {
		return stats, fmt.Errorf("dataset.Export: %w", err)
	}
	return stats, nil
}

// exportFile is one rollouts file to export and the scale of its scores.
type exportFile struct {
	path  string
	scale ScoreScale
}

// exportFiles resolves From or In into the rollouts files to read, in
// order, each checked to be a rollouts file, and says what they are for
// the dataset card.
func exportFiles(opts ExportOptions) (files []exportFile, source string, err error) {
	var paths []string
	switch {
	case opts.From != "" && len(opts.In) > 0:
		return nil, "", errors.New("give the rollouts by From (a directory or a file) or by In (files), not both")
	case len(opts.In) > 0:
		paths, source = opts.In, "files "+quoteBases(opts.In)
	case opts.From == "":
		return nil, "", errors.New("no rollouts given: name a run directory, the output directory of parley rollout, or rollouts files")
	default:
		paths, source, err = fromPaths(opts)
		if err != nil {
			return nil, "", err
		}
	}
	for _, p := range paths {
		if err := CheckRolloutsFile(p); err != nil {
			return nil, "", err
		}
		s, ok, err := ReadScoreScale(p)
		if err != nil {
			return nil, "", err
		}
		if !ok {
			s = opts.Scale
		}
		files = append(files, exportFile{path: p, scale: s})
	}
	return files, source, nil
}

// fromPaths lists the rollouts files of From: a run directory's step files
// within the step bounds, parley rollout's rollouts.parquet, or From
// itself when it is a file.
func fromPaths(opts ExportOptions) ([]string, string, error) {
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
	rd := RunDir(opts.From)
	if _, err := os.Stat(rd.RolloutsDir()); err == nil {
		steps, err := RolloutFiles(rd.RolloutsDir(), opts.MinStep, opts.MaxStep)
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
	one := filepath.Join(opts.From, RolloutFileName)
	if _, err := os.Stat(one); err == nil {
		return []string{one}, "`parley rollout` output `" + name + "`", nil
	}
	return nil, "", fmt.Errorf("%s holds neither %s/step-N.parquet (a run of parley train, or parley score's output) nor %s (parley rollout's output)",
		opts.From, RolloutsDirName, RolloutFileName)
}

func quoteBases(paths []string) string {
	q := make([]string, len(paths))
	for i, p := range paths {
		q[i] = "`" + filepath.Base(p) + "`"
	}
	return strings.Join(q, ", ")
}

func export(ctx context.Context, opts ExportOptions) (ExportStats, error) {
	var stats ExportStats
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	if opts.Out == "" {
		return stats, errors.New("no output path")
	}
	if opts.Format != FormatJSONL && opts.Format != FormatHF {
		return stats, fmt.Errorf("unknown format %q (want %s or %s)", opts.Format, FormatJSONL, FormatHF)
	}
	files, source, err := exportFiles(opts)
	if err != nil {
		return stats, err
	}
	var sink exportSink
	if opts.Format == FormatJSONL {
		sink, err = newJSONLSink(opts.Out)
	} else {
		sink, err = newHFSink(opts, source)
	}
	if err != nil {
		return stats, err
	}
	inSteps := func(step int32) bool {
		return int(step) >= opts.MinStep && (opts.MaxStep == 0 || int(step) <= opts.MaxStep)
	}
	var catalog roleCatalog
	for _, ef := range files {
		err := streamParquet(ef.path, func(s exportSource) error {
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
			if err := sink.write(&rec); err != nil {
				return err
			}
			stats.count(&rec)
			return nil
		})
		var stop fnError
		if errors.As(err, &stop) {
			err = stop.err
		}
		if err == nil {
			err = ctx.Err()
		}
		if err != nil {
			sink.abort()
			return stats, err
		}
		stats.Files++
		log.Info("exported rollout file", zap.String("path", ef.path), zap.Int64("written", stats.Written))
	}
	if opts.Role != "" {
		if err := catalog.check(opts, stats.Read); err != nil {
			sink.abort()
			return stats, err
		}
	}
	outs, err := sink.close(stats)
	if err != nil {
		return stats, err
	}
	stats.Outputs = outs
	return stats, nil
}

// count adds an exported record to the stats.
func (s *ExportStats) count(r *ExportRecord) {
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

// StepFile is a per-step file of a run directory.
type StepFile struct {
	Step int
	Path string
}

// RolloutFiles lists dir/step-N.parquet files with minStep <= N and
// (maxStep == 0 or N <= maxStep), in step order.
func RolloutFiles(dir string, minStep, maxStep int) ([]StepFile, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []StepFile
	for _, e := range entries {
		name, isParquet := strings.CutSuffix(e.Name(), ParquetExt)
		step, ok := ParseStepName(name)
		if !isParquet || !ok || e.IsDir() || step < minStep || (maxStep != 0 && step > maxStep) {
			continue
		}
		out = append(out, StepFile{Step: step, Path: filepath.Join(dir, e.Name())})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Step < out[j].Step })
	return out, nil
}

// jsonlSink writes one JSON object a line to an atomic file.
type jsonlSink struct {
	file *fsutil.File
	bw   *bufio.Writer
	enc  *json.Encoder
}

func newJSONLSink(out string) (*jsonlSink, error) {
	path := out
	if !strings.HasSuffix(strings.ToLower(out), ".jsonl") {
		path = filepath.Join(out, exportJSONLFileName)
	}
	f, err := fsutil.MkdirCreate(path, 0o644)
	if err != nil {
		return nil, err
	}
	bw := bufio.NewWriterSize(f, 256<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	return &jsonlSink{file: f, bw: bw, enc: enc}, nil
}

func (s *jsonlSink) write(r *ExportRecord) error { return s.enc.Encode(r) }

func (s *jsonlSink) close(ExportStats) ([]string, error) {
	if err := s.bw.Flush(); err != nil {
		s.file.Abort()
		return nil, err
	}
	if err := s.file.Commit(); err != nil {
		return nil, err
	}
	return []string{s.file.Name()}, nil
}

func (s *jsonlSink) abort() { s.file.Abort() }

// hfSink writes parquet shards of ExportRecord under hidden temporary names
// and renames them to data/train-%05d-of-%05d.parquet once their number is
// known, then writes README.md.
type hfSink struct {
	opts    ExportOptions
	source  string // what was exported, for the card
	dataDir string
	shardN  int
	shards  []string // committed temporary shard paths
	cur     *fsutil.File
	pw      *parquet.GenericWriter[ExportRecord]
	buf     []ExportRecord // rows not yet handed to pw
	inShard int
	inGroup int
}

func newHFSink(opts ExportOptions, source string) (*hfSink, error) {
	if opts.ShardRows <= 0 {
		opts.ShardRows = DefaultShardRows
	}
	dataDir := filepath.Join(opts.Out, "data")
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, err
	}
	return &hfSink{opts: opts, source: source, dataDir: dataDir, shardN: opts.ShardRows}, nil
}

func (s *hfSink) openShard() error {
	f, err := fsutil.MkdirCreate(filepath.Join(s.dataDir, fmt.Sprintf(".shard-%05d.parquet", len(s.shards))), 0o644)
	if err != nil {
		return err
	}
	s.cur = f
	s.pw = parquet.NewGenericWriter[ExportRecord](f, parquet.Compression(&parquet.Zstd))
	s.inShard, s.inGroup = 0, 0
	return nil
}

// flushBuf hands the buffered rows to the parquet writer.
func (s *hfSink) flushBuf() error {
	if len(s.buf) == 0 {
		return nil
	}
	_, err := s.pw.Write(s.buf)
	clear(s.buf)
	s.buf = s.buf[:0]
	return err
}

func (s *hfSink) closeShard() error {
	if err := s.flushBuf(); err != nil {
		s.cur.Abort()
		s.cur = nil
		return err
	}
	if err := s.pw.Close(); err != nil {
		s.cur.Abort()
		s.cur = nil
		return err
	}
	err := s.cur.Commit()
	if err == nil {
		s.shards = append(s.shards, s.cur.Name())
	}
	s.cur = nil
	return err
}

func (s *hfSink) write(r *ExportRecord) error {
	if s.cur == nil {
		if err := s.openShard(); err != nil {
			return err
		}
	}
	s.buf = append(s.buf, *r)
	s.inShard++
	s.inGroup++
	if len(s.buf) >= readBatchRows {
		if err := s.flushBuf(); err != nil {
			return err
		}
	}
	if s.inGroup >= exportRowGroupRows {
		if err := s.flushBuf(); err != nil {
			return err
		}
		if err := s.pw.Flush(); err != nil {
			return err
		}
		s.inGroup = 0
	}
	if s.inShard >= s.shardN {
		return s.closeShard()
	}
	return nil
}

func (s *hfSink) close(stats ExportStats) ([]string, error) {
	if s.cur == nil && len(s.shards) == 0 {
		// No rows: still write one empty shard so the folder loads.
		if err := s.openShard(); err != nil {
			return nil, err
		}
	}
	if s.cur != nil {
		if err := s.closeShard(); err != nil {
			s.abort()
			return nil, err
		}
	}
	// Replace shards of an earlier export.
	old, _ := filepath.Glob(filepath.Join(s.dataDir, "train-*-of-*.parquet"))
	for _, p := range old {
		if err := os.Remove(p); err != nil {
			s.abort()
			return nil, err
		}
	}
	var outs []string
	for i, tmp := range s.shards {
		final := filepath.Join(s.dataDir, fmt.Sprintf("train-%05d-of-%05d.parquet", i, len(s.shards)))
		if err := os.Rename(tmp, final); err != nil {
			s.abort()
			return nil, err
		}
		outs = append(outs, final)
	}
	s.shards = nil
	if err := fsutil.SyncDir(s.dataDir); err != nil {
		return nil, err
	}
	readme := filepath.Join(s.opts.Out, "README.md")
	if err := fsutil.WriteFileAtomic(readme, []byte(datasetCard(s.opts, s.source, stats)), 0o644); err != nil {
		return nil, err
	}
	return append(outs, readme), nil
}

func (s *hfSink) abort() {
	if s.cur != nil {
		s.cur.Abort()
		s.cur = nil
	}
	s.buf = s.buf[:0]
	for _, p := range s.shards {
		os.Remove(p)
	}
	s.shards = nil
}

// cardFeatures is the features block of the dataset card: the columns of
// ExportRecord in order, with their Hugging Face dtypes.
const cardFeatures = `  features:
  - name: id
    dtype: string
  - name: run_id
    dtype: string
  - name: step
    dtype: int32
  - name: policy_version
    dtype: int32
  - name: env
    dtype: string
  - name: prompt_id
    dtype: string
  - name: group_id
    dtype: string
  - name: category
    dtype: string
  - name: split
    dtype: string
  - name: task
    dtype: string
  - name: persona_pair_id
    dtype: string
  - name: personas
    struct:
    - name: a
      dtype: string
    - name: b
      dtype: string
    - name: name_a
      dtype: string
    - name: name_b
      dtype: string
  - name: messages
    list:
    - name: role
      dtype: string
    - name: name
      dtype: string
    - name: content
      dtype: string
  - name: final
    dtype: string
  - name: agreed
    dtype: bool
  - name: rounds
    dtype: int32
  - name: judged
    dtype: bool
  - name: judge_model
    dtype: string
  - name: judge_rationale
    dtype: string
  - name: judge_error
    dtype: string
  - name: score
    dtype: float32
  - name: score_scale
    dtype: string
  - name: reward
    dtype: float32
  - name: advantage
    dtype: float32
  - name: failed
    dtype: bool
  - name: error
    dtype: string
`

// datasetCard renders README.md for an HF export: YAML front matter with
// the configs and features, then a description of the data and its schema,
// with scores labelled by the scale they were given on.
func datasetCard(opts ExportOptions, source string, stats ExportStats) string {
	var b strings.Builder
	b.WriteString("---\nconfigs:\n- config_name: default\n  data_files:\n  - split: train\n    path: data/train-*\ndataset_info:\n")
	b.WriteString(cardFeatures)
	b.WriteString("tags:\n- parley\n- rlaif\n- self-play\n- negotiation\n---\n\n")
	title := source[strings.LastIndex(source, " `")+1:] // the run, directory or last file
	fmt.Fprintf(&b, "# parley rollouts: %s\n\n", strings.Trim(title, "`"))
	files := fmt.Sprintf("%d files", stats.Files)
	if stats.Files == 1 {
		files = "1 file"
	}
	fmt.Fprintf(&b, "Rollouts exported by `parley export` from %s (%s)", source, files)
	if stats.Written > 0 {
		fmt.Fprintf(&b, ", steps %d to %d", stats.FirstStep, stats.LastStep)
	}
	fmt.Fprintf(&b, ".\n%d rollouts read, %d exported", stats.Read, stats.Written)
	var filters []string
	if !opts.IncludeFailed {
		filters = append(filters, fmt.Sprintf("failed rollouts excluded (%d)", stats.SkippedFailed))
	}
	if opts.MinStep > 0 || opts.MaxStep > 0 {
		filters = append(filters, fmt.Sprintf("steps %d to %s", opts.MinStep, maxStepString(opts.MaxStep)))
	}
	if opts.AgreedOnly {
		filters = append(filters, "only dialogues that reached agreement")
	}
	if opts.MinReward != nil {
		filters = append(filters, fmt.Sprintf("reward ≥ %g", *opts.MinReward))
	}
	if opts.Role != "" {
		f := "the " + opts.Role + "'s chat"
		if len(opts.Models) > 0 {
			f += " played by " + strings.Join(opts.Models, ", ")
		}
		for _, c := range opts.Where {
			f += ", " + c.String()
		}
		if !opts.Traces {
			f += ", private traces dropped"
		}
		filters = append(filters, f)
	}
	if len(filters) > 0 {
		fmt.Fprintf(&b, "; filters: %s", strings.Join(filters, "; "))
	}
	b.WriteString(".\n\n")
	scale := "not recorded"
	if len(stats.Scales) > 0 {
		scale = strings.Join(stats.Scales, ", ")
	}
	fmt.Fprintf(&b, "Scores: %s (the `score_scale` column names each row's).\n\n", scale)
	b.WriteString(`Each row is one rollout: two copies of the policy with opposed personas
negotiate a task (or, for the single-agent baseline, one agent answers it),
then a final completion is scored by the run's judge.

## Schema

Every row has every column; a value that does not apply is null. A rollout
that was not judged (its judging failed, or it was never scored) has null
score, reward and advantage: never a score of 0.

| column | type | meaning |
|---|---|---|
| ` + "`id`, `run_id`" + ` | string | rollout id, run id |
| ` + "`step`, `policy_version`" + ` | int32 | training step that sampled it; the policy version (adapter) that played it |
| ` + "`env`" + ` | string | environment (game) |
| ` + "`prompt_id`, `group_id`" + ` | string | curriculum prompt and GRPO group |
| ` + "`category`" + ` | string | professional, interpersonal, micro_ethics or open_ended |
| ` + "`split`" + ` | string | the prompt's curriculum split (train, eval) |
| ` + "`task`" + ` | string | the dilemma or question |
| ` + "`persona_pair_id`" + ` | string | the persona pair's id in the library |
| ` + "`personas`" + ` | struct<a, b, name_a, name_b> | the personas of agents A and B and their short names (null for single-agent) |
| ` + "`messages`" + ` | list<struct<role, name, content>> | the system prompts and the dialogue as chat messages, see below |
| ` + "`final`" + ` | string | the final completion that was judged |
| ` + "`agreed`" + ` | bool | whether both agents agreed before the round limit |
| ` + "`rounds`" + ` | int32 | negotiation rounds |
| ` + "`judged`" + ` | bool | whether the judge (or scorer) gave a score |
| ` + "`judge_model`, `judge_rationale`" + ` | string | the judge model or rule, and its explanation |
| ` + "`judge_error`" + ` | string | why judging failed |
| ` + "`score`" + ` | float32 | judge score, on the scale in ` + "`score_scale`" + ` |
| ` + "`score_scale`" + ` | string | what scored it and its range: ` + "`CA 1–5`" + ` (Collective Agency rubric), ` + "`rule <kind> 0–1`" + `, a game's scorer |
| ` + "`reward`" + ` | float32 | reward used for training (of the first trained role) |
| ` + "`advantage`" + ` | float32 | its group-relative advantage |
| ` + "`failed`, `error`" + ` | bool, string | whether the rollout failed, and why |

## Messages

Every message has the keys role, name and content (name null when it has
none). First the system prompt of each role that had one, in the order
the roles first spoke: ` + "`{role: \"system\", name: role, content: prompt}`" + `. Then
the task, ` + "`{role: \"user\", name: null, content: task}`" + `. Each turn follows in
order as ` + "`{role: \"assistant\", name: agent, content: text}`" + `, where ` + "`name`" + ` is
the agent that spoke: ` + "`A`" + ` or ` + "`B`" + ` in the deliberation game, ` + "`single`" + ` for
the single-agent baseline, ` + "`final`" + ` for the final completion. The final
completion is also in ` + "`final`" + `.
`)
	return b.String()
}
