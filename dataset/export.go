package dataset

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
)

// ExportOptions selects what Export reads and writes.
type ExportOptions struct {
	// From is a run directory; Export reads From/rollouts/step-*.parquet in
	// step order.
	From string
	// Format is FormatJSONL or FormatHF.
	Format string
	// Out is where the export goes. For FormatJSONL it is a file if it ends
	// in ".jsonl", else a directory that gets rollouts.jsonl. For FormatHF
	// it is the dataset folder: Out/data/train-00000-of-0000N.parquet and
	// Out/README.md (earlier train-*.parquet shards there are replaced).
	Out string
	// MinStep and MaxStep bound the steps read, inclusive; MaxStep 0 means
	// no upper bound.
	MinStep, MaxStep int
	// MinReward, if set, keeps rollouts whose reward is at least this.
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
	// Logger logs progress per file at info level; nil means no logging.
	Logger *zap.Logger
}

// ExportStats counts what Export did.
type ExportStats struct {
	Files          int      // rollout files read
	Read           int64    // rollouts read
	Written        int64    // rollouts exported
	SkippedFailed  int64    // failed rollouts left out
	SkippedFilters int64    // rollouts left out by MinReward or AgreedOnly
	Outputs        []string // files written (for HF, the shards then README.md)
}

// ChatMessage is one message of an exported rollout.
//
// Messages scheme: the first message is the task, {role: "user", content:
// task}; then each turn of the rollout in order is {role: "assistant",
// name: the turn's agent ("A" or "B" in the deliberation game, "single"
// for the single-agent baseline, "final" for a final completion recorded
// as a turn, or the game's role names), content: the turn's text}. The
// final completion is also in the record's "final" field.
type ChatMessage struct {
	Role    string `json:"role" parquet:"role"`
	Name    string `json:"name,omitempty" parquet:"name"`
	Content string `json:"content" parquet:"content"`
}

// ExportPersonas is the persona pair of an exported rollout.
type ExportPersonas struct {
	A string `json:"a" parquet:"a"`
	B string `json:"b" parquet:"b"`
}

// ExportRecord is one exported rollout: a JSONL line, or a row of the HF
// parquet shards (messages as list<struct<role,name,content>>, personas as
// struct<a,b>).
type ExportRecord struct {
	ID       string         `json:"id" parquet:"id"`
	Step     int32          `json:"step" parquet:"step"`
	Env      string         `json:"env" parquet:"env"`
	PromptID string         `json:"prompt_id" parquet:"prompt_id"`
	GroupID  string         `json:"group_id" parquet:"group_id"`
	Category string         `json:"category" parquet:"category"`
	Task     string         `json:"task" parquet:"task"`
	Personas ExportPersonas `json:"personas" parquet:"personas"`
	Messages []ChatMessage  `json:"messages" parquet:"messages,list"`
	Final    string         `json:"final" parquet:"final"`
	Reward   float32        `json:"reward" parquet:"reward"`
	Score    float32        `json:"score" parquet:"score"`
	Agreed   bool           `json:"agreed" parquet:"agreed"`
	Rounds   int32          `json:"rounds" parquet:"rounds"`
	Failed   bool           `json:"failed" parquet:"failed"`
	Error    string         `json:"error" parquet:"error"`
}

// exportSource is the projection of Rollout that Export reads: the token
// sequences are never decoded.
type exportSource struct {
	RolloutID string        `parquet:"rollout_id"`
	Step      int32         `parquet:"step"`
	Env       string        `parquet:"env"`
	PromptID  string        `parquet:"prompt_id"`
	GroupID   string        `parquet:"group_id"`
	Category  string        `parquet:"category"`
	Task      string        `parquet:"task"`
	Personas  []Persona     `parquet:"personas,list"`
	Roles     []RoleOutcome `parquet:"roles,list"`
	Turns     []Turn        `parquet:"turns,list"`
	Agreed    bool          `parquet:"agreed"`
	Rounds    int32         `parquet:"rounds"`
	Final     string        `parquet:"final"`
	Failed    bool          `parquet:"failed"`
	Error     string        `parquet:"error"`
	Score     float32       `parquet:"score"`
	Judged    bool          `parquet:"judged"`
	Outcome   string        `parquet:"outcome"`

	// Schema version 1 columns.
	PersonaA     string  `parquet:"persona_a"`
	PersonaB     string  `parquet:"persona_b"`
	LegacyReward float32 `parquet:"reward"`
}

// NewExportRecord turns a rollout into its export record.
func NewExportRecord(r Rollout) ExportRecord {
	return exportSource{
		RolloutID: r.RolloutID, Step: r.Step, Env: r.Env, PromptID: r.PromptID,
		GroupID: r.GroupID, Category: r.Category, Task: r.Task,
		Personas: r.Personas, Roles: r.Roles, Turns: r.Turns,
		Agreed: r.Agreed, Rounds: r.Rounds, Final: r.Final, Failed: r.Failed,
		Error: r.Error, Score: r.Score, Judged: r.Judged, Outcome: r.Outcome,
	}.record()
}

func (s exportSource) record() ExportRecord {
	msgs := make([]ChatMessage, 0, len(s.Turns)+1)
	msgs = append(msgs, ChatMessage{Role: "user", Content: s.Task})
	for _, t := range s.Turns {
		msgs = append(msgs, ChatMessage{Role: "assistant", Name: t.Agent, Content: t.Text})
	}
	a, b := PersonaOf(s.Personas, "A"), PersonaOf(s.Personas, "B")
	if a == "" && b == "" {
		a, b = s.PersonaA, s.PersonaB
	}
	reward := s.LegacyReward
	for _, ro := range s.Roles {
		if ro.Trained && ro.Scored {
			reward = ro.Reward
			break
		}
	}
	return ExportRecord{
		ID: s.RolloutID, Step: s.Step, Env: s.Env, PromptID: s.PromptID,
		GroupID: s.GroupID, Category: s.Category, Task: s.Task,
		Personas: ExportPersonas{A: a, B: b},
		Messages: msgs, Final: s.Final, Reward: reward, Score: s.Score,
		Agreed: s.Agreed, Rounds: s.Rounds, Failed: s.Failed, Error: s.Error,
	}
}

// exportSink receives export records and finishes or discards the output.
type exportSink interface {
	write(*ExportRecord) error
	close(stats ExportStats) ([]string, error)
	abort()
}

// Export streams the rollouts of a run into a JSONL file or a Hugging Face
// dataset folder, in constant memory: rollout files are read a few rows at
// a time (token sequences are skipped) and output is written as it comes.
// Outputs appear atomically: a failed or cancelled export leaves nothing
// at the final paths.
func Export(ctx context.Context, opts ExportOptions) (ExportStats, error) {
	stats, err := export(ctx, opts)
	if err != nil {
		return stats, fmt.Errorf("dataset.Export: %w", err)
	}
	return stats, nil
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
	files, err := RolloutFiles(RunDir(opts.From).RolloutsDir(), opts.MinStep, opts.MaxStep)
	if err != nil {
		return stats, err
	}
	if len(files) == 0 {
		return stats, fmt.Errorf("%s: no rollout files in steps [%d, %s]", RunDir(opts.From).RolloutsDir(), opts.MinStep, maxStepString(opts.MaxStep))
	}
	var sink exportSink
	switch opts.Format {
	case FormatJSONL:
		sink, err = newJSONLSink(opts.Out)
	case FormatHF:
		sink, err = newHFSink(opts, files)
	default:
		return stats, fmt.Errorf("unknown format %q (want %s or %s)", opts.Format, FormatJSONL, FormatHF)
	}
	if err != nil {
		return stats, err
	}
	for _, sf := range files {
		err := streamParquet(sf.Path, func(s exportSource) error {
			stats.Read++
			if stats.Read%256 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			if s.Failed && !opts.IncludeFailed {
				stats.SkippedFailed++
				return nil
			}
			rec := s.record()
			if opts.Role != "" {
				var keep bool
				if rec, keep = s.roleRecord(rec, opts); !keep {
					stats.SkippedFilters++
					return nil
				}
			}
			if (opts.AgreedOnly && !s.Agreed) || (opts.MinReward != nil && float64(rec.Reward) < *opts.MinReward) {
				stats.SkippedFilters++
				return nil
			}
			if err := sink.write(&rec); err != nil {
				return err
			}
			stats.Written++
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
		log.Info("exported rollout file", zap.String("path", sf.Path), zap.Int64("written", stats.Written))
	}
	outs, err := sink.close(stats)
	if err != nil {
		return stats, err
	}
	stats.Outputs = outs
	return stats, nil
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
	files   []StepFile
	dataDir string
	shardN  int
	shards  []string // committed temporary shard paths
	cur     *fsutil.File
	pw      *parquet.GenericWriter[ExportRecord]
	buf     []ExportRecord // rows not yet handed to pw
	inShard int
	inGroup int
}

func newHFSink(opts ExportOptions, files []StepFile) (*hfSink, error) {
	if opts.ShardRows <= 0 {
		opts.ShardRows = DefaultShardRows
	}
	dataDir := filepath.Join(opts.Out, "data")
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, err
	}
	return &hfSink{opts: opts, files: files, dataDir: dataDir, shardN: opts.ShardRows}, nil
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
	if err := fsutil.WriteFileAtomic(readme, []byte(datasetCard(s.opts, s.files, stats)), 0o644); err != nil {
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

// datasetCard renders README.md for an HF export: YAML front matter with
// the configs and features, then a description of the schema.
func datasetCard(opts ExportOptions, files []StepFile, stats ExportStats) string {
	var b strings.Builder
	b.WriteString(`---
configs:
- config_name: default
  data_files:
  - split: train
    path: data/train-*
dataset_info:
  features:
  - name: id
    dtype: string
  - name: step
    dtype: int32
  - name: env
    dtype: string
  - name: prompt_id
    dtype: string
  - name: group_id
    dtype: string
  - name: category
    dtype: string
  - name: task
    dtype: string
  - name: personas
    struct:
    - name: a
      dtype: string
    - name: b
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
  - name: reward
    dtype: float32
  - name: score
    dtype: float32
  - name: agreed
    dtype: bool
  - name: rounds
    dtype: int32
  - name: failed
    dtype: bool
  - name: error
    dtype: string
tags:
- parley
- rlaif
- self-play
- negotiation
---

`)
	run := filepath.Base(filepath.Clean(opts.From))
	fmt.Fprintf(&b, "# parley rollouts: %s\n\n", run)
	fmt.Fprintf(&b, "Rollouts exported by `parley export` from run `%s`, steps %d to %d (%d files).\n",
		run, files[0].Step, files[len(files)-1].Step, len(files))
	fmt.Fprintf(&b, "%d rollouts read, %d exported", stats.Read, stats.Written)
	var filters []string
	if !opts.IncludeFailed {
		filters = append(filters, fmt.Sprintf("failed rollouts excluded (%d)", stats.SkippedFailed))
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
	b.WriteString(`Each row is one rollout: two copies of the policy with opposed personas
negotiate a task (or, for the single-agent baseline, one agent answers it),
then a final completion is scored by an LLM judge.

## Schema

| column | type | meaning |
|---|---|---|
| ` + "`id`" + ` | string | rollout id |
| ` + "`step`" + ` | int32 | training step that sampled it |
| ` + "`env`" + ` | string | environment (game) |
| ` + "`prompt_id`" + `, ` + "`group_id`" + ` | string | curriculum prompt and GRPO group |
| ` + "`category`" + ` | string | professional, interpersonal, micro_ethics or open_ended |
| ` + "`task`" + ` | string | the dilemma or question |
| ` + "`personas`" + ` | struct<a, b> | the personas of agents A and B (empty for single-agent) |
| ` + "`messages`" + ` | list<struct<role, name, content>> | the dialogue as chat messages, see below |
| ` + "`final`" + ` | string | the final completion that was judged |
| ` + "`reward`" + ` | float32 | reward used for training |
| ` + "`score`" + ` | float32 | judge score (Collective Agency rubric, 1–5) |
| ` + "`agreed`" + ` | bool | whether both agents agreed before the round limit |
| ` + "`rounds`" + ` | int32 | negotiation rounds |
| ` + "`failed`" + `, ` + "`error`" + ` | bool, string | whether the rollout failed, and why |

## Messages

The first message is the task, ` + "`{role: \"user\", content: task}`" + `. Each turn
follows in order as ` + "`{role: \"assistant\", name: agent, content: text}`" + `, where
` + "`name`" + ` is the agent that spoke: ` + "`A`" + ` or ` + "`B`" + ` in the deliberation game,
` + "`single`" + ` for the single-agent baseline, ` + "`final`" + ` for a final completion
recorded as a turn. The final completion is also in ` + "`final`" + `.
`)
	return b.String()
}
