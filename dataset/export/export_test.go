package export

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/parleyhq/parley/dataset"
)

// makeRun writes a run directory with rollouts for steps 1..steps, n each,
// and returns it with every rollout in step order.
func makeRun(t testing.TB, steps, n int) (string, []dataset.Rollout) {
	t.Helper()
	run := filepath.Join(t.TempDir(), "myrun")
	var all []dataset.Rollout
	for s := 1; s <= steps; s++ {
		w, err := dataset.NewRolloutWriter(dataset.RunDir(run).RolloutsPath(s), dataset.RolloutWriterOptions{RowGroupRows: 4})
		mustNoErr(t, err)
		for i := 0; i < n; i++ {
			r := testRollout(s, i)
			mustNoErr(t, w.Write(r))
			all = append(all, r)
		}
		mustNoErr(t, w.Close())
	}
	// Files that are not step files are ignored.
	mustNoErr(t, os.WriteFile(filepath.Join(dataset.RunDir(run).RolloutsDir(), "notes.txt"), []byte("x"), 0o644))
	return run, all
}

func readJSONLRecords(t *testing.T, path string) []Record {
	t.Helper()
	f, err := os.Open(path)
	mustNoErr(t, err)
	defer f.Close()
	var out []Record
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r Record
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		mustNoErr(t, dec.Decode(&r))
		out = append(out, r)
	}
	mustNoErr(t, sc.Err())
	return out
}

func readHFRecords(t *testing.T, dir string, shards int) []Record {
	t.Helper()
	var out []Record
	for i := 0; i < shards; i++ {
		path := filepath.Join(dir, "data", fmt.Sprintf("train-%05d-of-%05d.parquet", i, shards))
		mustNoErr(t, dataset.StreamRows(path, func(r Record) error {
			if len(r.Messages) == 0 {
				r.Messages = nil
			}
			out = append(out, r)
			return nil
		}))
	}
	return out
}

func f64(v float64) *float64 { return &v }

func TestExportFilters(t *testing.T) {
	run, all := makeRun(t, 3, 10)
	tests := []struct {
		name string
		opts Options
		keep func(dataset.Rollout) bool
	}{
		{"default", Options{}, func(r dataset.Rollout) bool { return !r.Failed }},
		{"include failed", Options{IncludeFailed: true}, func(r dataset.Rollout) bool { return true }},
		{"min step", Options{MinStep: 2}, func(r dataset.Rollout) bool { return !r.Failed && r.Step >= 2 }},
		{"max step", Options{MaxStep: 2}, func(r dataset.Rollout) bool { return !r.Failed && r.Step <= 2 }},
		{"one step", Options{MinStep: 2, MaxStep: 2, IncludeFailed: true}, func(r dataset.Rollout) bool { return r.Step == 2 }},
		{"min reward", Options{MinReward: f64(0.6)}, func(r dataset.Rollout) bool { return !r.Failed && rewardOf(r) >= 0.6 }},
		{"agreed only", Options{AgreedOnly: true}, func(r dataset.Rollout) bool { return !r.Failed && r.Agreed }},
		{"all filters", Options{AgreedOnly: true, MinReward: f64(0.5), MinStep: 3, IncludeFailed: true},
			func(r dataset.Rollout) bool { return r.Agreed && rewardOf(r) >= 0.5 && r.Step >= 3 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var want []Record
			var failed int64
			for _, r := range all {
				inSteps := int(r.Step) >= tt.opts.MinStep && (tt.opts.MaxStep == 0 || int(r.Step) <= tt.opts.MaxStep)
				if inSteps && r.Failed && !tt.opts.IncludeFailed {
					failed++
				}
				if tt.keep(r) {
					want = append(want, NewRecord(r, dataset.ScoreScale{}))
				}
			}
			if len(want) == 0 {
				t.Fatal("test case keeps nothing")
			}
			for _, format := range []string{FormatJSONL, FormatHF} {
				opts := tt.opts
				opts.From, opts.Format, opts.Out, opts.ShardRows = run, format, filepath.Join(t.TempDir(), "out"), 4
				stats, err := Rollouts(context.Background(), opts)
				mustNoErr(t, err)
				if stats.Written != int64(len(want)) || stats.SkippedFailed != failed {
					t.Errorf("%s: Export stats = %+v, want %d written, %d failed skipped", format, stats, len(want), failed)
				}
				if stats.Read != stats.Written+stats.SkippedFailed+stats.SkippedFilters {
					t.Errorf("%s: Export stats = %+v do not add up", format, stats)
				}
				var got []Record
				if format == FormatJSONL {
					if len(stats.Outputs) != 1 || stats.Outputs[0] != filepath.Join(opts.Out, "rollouts.jsonl") {
						t.Errorf("jsonl outputs = %v, want out/rollouts.jsonl", stats.Outputs)
					}
					got = readJSONLRecords(t, filepath.Join(opts.Out, "rollouts.jsonl"))
				} else {
					shards := (len(want) + 3) / 4
					if len(stats.Outputs) != shards+1 {
						t.Errorf("hf outputs = %v, want %d shards and README.md", stats.Outputs, shards)
					}
					got = readHFRecords(t, opts.Out, shards)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s: Rollouts(%s) = %d records, want %d:\ngot  %+v\nwant %+v", format, tt.name, len(got), len(want), ids(got), ids(want))
				}
			}
		})
	}
}

func ids(rs []Record) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	return out
}

func sp(s string) *string { return &s }

func TestRecordMessages(t *testing.T) {
	r := testRollout(1, 0)
	got := NewRecord(r, dataset.ScoreScale{Name: "CA", Min: 1, Max: 5})
	want := []ChatMessage{
		{Role: "system", Name: sp("A"), Content: "You are Agent A."},
		{Role: "system", Name: sp("B"), Content: "You are Agent B."},
		{Role: "system", Name: sp("final"), Content: "Write the solution."},
		{Role: "user", Content: r.Task},
		{Role: "assistant", Name: sp("A"), Content: r.Turns[0].Text},
		{Role: "assistant", Name: sp("B"), Content: r.Turns[1].Text},
	}
	if !reflect.DeepEqual(got.Messages, want) {
		t.Errorf("NewRecord(...).Messages = %+v, want %+v", got.Messages, want)
	}
	wantPersonas := Personas{A: sp("Be loyal."), B: sp("Be honest."), NameA: sp("loyalty"), NameB: sp("truth")}
	if !reflect.DeepEqual(got.Personas, wantPersonas) || got.ID != r.RolloutID || got.Final != r.Final {
		t.Errorf("NewRecord(...) = %+v", got)
	}
	// The JSON line has exactly the documented keys, and every message
	// the same three.
	b, err := json.Marshal(got)
	mustNoErr(t, err)
	var m map[string]any
	mustNoErr(t, json.Unmarshal(b, &m))
	keys := []string{"id", "run_id", "step", "policy_version", "env", "prompt_id", "group_id", "category", "split", "task",
		"persona_pair_id", "personas", "messages", "final", "agreed", "rounds", "judged", "judge_model", "judge_rationale",
		"judge_error", "score", "score_scale", "reward", "advantage", "failed", "error"}
	if len(m) != len(keys) {
		t.Errorf("export JSON has %d keys, want %d: %s", len(m), len(keys), b)
	}
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			t.Errorf("export JSON lacks %q", k)
		}
	}
	for i, msg := range m["messages"].([]any) {
		if mm := msg.(map[string]any); len(mm) != 3 {
			t.Errorf("message %d has keys %v, want role, name, content", i, mm)
		}
	}
	if !strings.Contains(string(b), `{"role":"user","name":null,"content":`) {
		t.Errorf("the task message has no null name: %s", b)
	}
}

// TestRecordFields: what each kind of rollout exports for the
// fields a user looks for; a score that was not given is null, never 0.
func TestRecordFields(t *testing.T) {
	ca := dataset.ScoreScale{Name: "CA", Min: 1, Max: 5}
	judged := testRollout(2, 0) // scored 1, reward 0.2, advantage -1
	judgeFailed := testRollout(2, 1)
	judgeFailed.Judged, judgeFailed.Score, judgeFailed.JudgeModel, judgeFailed.JudgeRationale, judgeFailed.JudgeError = false, 0, "", "", "judge: no verdict"
	for k := range judgeFailed.Roles {
		judgeFailed.Roles[k].Scored, judgeFailed.Roles[k].Score, judgeFailed.Roles[k].Reward, judgeFailed.Roles[k].Advantage = false, 0, 0, 0
	}
	failed := testRollout(2, 3) // i%7 == 3: failed, unjudged
	single := testRollout(2, 2)
	single.Personas, single.PersonaPairID, single.SystemPrompts, single.Split = nil, "", nil, ""
	tests := []struct {
		name string
		r    dataset.Rollout
		want string // the record's fields of interest as JSON
	}{
		{"judged", judged, `{"judged":true,"judge_model":"judge","judge_rationale":"because","judge_error":null,"score":1.0,"score_scale":"CA 1–5","reward":0.2,"advantage":-1.0,"policy_version":1,"split":"train","persona_pair_id":"p08","name_a":"loyalty","error":null}`},
		{"judging failed", judgeFailed, `{"judged":false,"judge_model":null,"judge_rationale":null,"judge_error":"judge: no verdict","score":null,"score_scale":null,"reward":null,"advantage":null,"policy_version":1,"split":"train","persona_pair_id":"p08","name_a":"loyalty","error":null}`},
		{"rollout failed", failed, `{"judged":false,"judge_model":null,"judge_rationale":null,"judge_error":null,"score":null,"score_scale":null,"reward":null,"advantage":null,"policy_version":1,"split":"train","persona_pair_id":"p08","name_a":"loyalty","error":"judge: timeout"}`},
		{"no personas, no split", single, `{"judged":true,"judge_model":"judge","judge_rationale":"because","judge_error":null,"score":3.0,"score_scale":"CA 1–5","reward":0.6,"advantage":1.0,"policy_version":1,"split":null,"persona_pair_id":null,"name_a":null,"error":null}`},
	}
	for _, tt := range tests {
		rec := NewRecord(tt.r, ca)
		got, err := json.Marshal(struct {
			Judged         bool    `json:"judged"`
			JudgeModel     *string `json:"judge_model"`
			JudgeRationale *string `json:"judge_rationale"`
			JudgeError     *string `json:"judge_error"`
			Score          *Float  `json:"score"`
			ScoreScale     *string `json:"score_scale"`
			Reward         *Float  `json:"reward"`
			Advantage      *Float  `json:"advantage"`
			PolicyVersion  int32   `json:"policy_version"`
			Split          *string `json:"split"`
			PersonaPairID  *string `json:"persona_pair_id"`
			NameA          *string `json:"name_a"`
			Error          *string `json:"error"`
		}{rec.Judged, rec.JudgeModel, rec.JudgeRationale, rec.JudgeError, rec.Score, rec.ScoreScale, rec.Reward, rec.Advantage,
			rec.PolicyVersion, rec.Split, rec.PersonaPairID, rec.Personas.NameA, rec.Error})
		mustNoErr(t, err)
		if string(got) != tt.want {
			t.Errorf("%s: export fields =\n%s\nwant\n%s", tt.name, got, tt.want)
		}
	}
}

func TestFloatJSON(t *testing.T) {
	tests := []struct {
		v    float32
		want string
	}{
		{3, "3.0"}, {0, "0.0"}, {-1, "-1.0"}, {0.2, "0.2"}, {2.5, "2.5"}, {1e-7, "1e-07"}, {3e20, "3e+20"},
		{float32(math.NaN()), "null"}, {float32(math.Inf(1)), "null"},
	}
	for _, tt := range tests {
		b, err := json.Marshal(Float(tt.v))
		if err != nil || string(b) != tt.want {
			t.Errorf("json.Marshal(Float(%g)) = %s, %v; want %s", tt.v, b, err, tt.want)
		}
	}
}

func TestExportHFFolder(t *testing.T) {
	run, _ := makeRun(t, 2, 10) // 18 exported rows
	out := filepath.Join(t.TempDir(), "hf")
	stats, err := Rollouts(context.Background(), Options{From: run, Format: FormatHF, Out: out, ShardRows: 5})
	mustNoErr(t, err)
	if stats.Written != 18 || stats.Files != 2 {
		t.Fatalf("Export stats = %+v, want 18 written from 2 files", stats)
	}
	for i := 0; i < 4; i++ {
		path := filepath.Join(out, "data", fmt.Sprintf("train-%05d-of-00004.parquet", i))
		f, pf, err := dataset.OpenParquet(path)
		if err != nil {
			t.Fatalf("shard %d: %v", i, err)
		}
		wantRows := int64(5)
		if i == 3 {
			wantRows = 3
		}
		if pf.NumRows() != wantRows {
			t.Errorf("shard %d rows = %d, want %d", i, pf.NumRows(), wantRows)
		}
		checkZstd(t, pf)
		for _, c := range []struct{ col, want string }{
			{"messages", "list<struct<role:string,name:string,content:string>>"},
			{"personas", "struct<a:string,b:string,name_a:string,name_b:string>"},
			{"score", "float32"},
			{"advantage", "float32"},
			{"policy_version", "int32"},
			{"reward", "float32"},
			{"agreed", "bool"},
			{"rounds", "int32"},
			{"step", "int32"},
		} {
			found := false
			for _, fl := range pf.Schema().Fields() {
				if fl.Name() == c.col {
					found = true
					if got := dataset.ColumnType(fl); got != c.want {
						t.Errorf("shard %d column %s type = %s, want %s", i, c.col, got, c.want)
					}
				}
			}
			if !found {
				t.Errorf("shard %d lacks column %s", i, c.col)
			}
		}
		f.Close()
	}
	readme := string(mustRead(t, filepath.Join(out, "README.md")))
	for _, want := range []string{"---\nconfigs:\n- config_name: default\n  data_files:\n  - split: train\n    path: data/train-*\n",
		"dataset_info:\n  features:\n", "  - name: messages\n    list:\n    - name: role\n      dtype: string\n",
		"  - name: personas\n    struct:\n", "rollouts read, 18 exported", "\n---\n\n# parley rollouts: myrun", "failed rollouts excluded (2)"} {
		if !strings.Contains(readme, want) {
			t.Errorf("README.md lacks %q:\n%s", want, readme)
		}
	}
	// Every feature in the card is a column of the shards, in order.
	var features []string
	for _, line := range strings.Split(readme, "\n") {
		if line == "tags:" {
			break
		}
		if name, ok := strings.CutPrefix(line, "  - name: "); ok {
			features = append(features, name)
		}
	}
	_, pf, closeF := openT(t, filepath.Join(out, "data", "train-00000-of-00004.parquet"))
	var cols []string
	for _, f := range pf.Schema().Fields() {
		cols = append(cols, f.Name())
	}
	closeF()
	if !reflect.DeepEqual(features, cols) {
		t.Errorf("card features = %v, shard columns = %v", features, cols)
	}

	// A second export into the same folder replaces the shards.
	_, err = Rollouts(context.Background(), Options{From: run, Format: FormatHF, Out: out, AgreedOnly: true, MinReward: f64(10)})
	mustNoErr(t, err)
	shards, _ := filepath.Glob(filepath.Join(out, "data", "*"))
	if len(shards) != 1 || filepath.Base(shards[0]) != "train-00000-of-00001.parquet" {
		t.Errorf("after re-export, data/ = %v, want one empty shard", shards)
	}
	if got := readHFRecords(t, out, 1); len(got) != 0 {
		t.Errorf("empty export has %d rows", len(got))
	}
	if readme := string(mustRead(t, filepath.Join(out, "README.md"))); !strings.Contains(readme, "20 rollouts read, 0 exported") {
		t.Errorf("README.md after empty export lacks its counts:\n%s", readme)
	}
}

func TestExportErrors(t *testing.T) {
	run, _ := makeRun(t, 2, 600)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		opts Options
		want string
	}{
		{"cancelled jsonl", ctx, Options{From: run, Format: FormatJSONL, Out: "x.jsonl"}, "context canceled"},
		{"cancelled hf", ctx, Options{From: run, Format: FormatHF, Out: "hf"}, "context canceled"},
		{"unknown format", context.Background(), Options{From: run, Format: "csv", Out: "o"}, `unknown format "csv"`},
		{"no run", context.Background(), Options{From: filepath.Join(run, "nope"), Format: FormatJSONL, Out: "o"}, "no such file"},
		{"no steps", context.Background(), Options{From: run, Format: FormatJSONL, Out: "o", MinStep: 5}, "no rollout files in steps [5, ∞]"},
		{"no out", context.Background(), Options{From: run, Format: FormatJSONL}, "no output path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			outDir := t.TempDir()
			if tt.opts.Out != "" {
				tt.opts.Out = filepath.Join(outDir, tt.opts.Out)
			}
			_, err := Rollouts(tt.ctx, tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Rollouts(%s) = %v, want an error containing %q", tt.name, err, tt.want)
			}
			if strings.HasPrefix(tt.name, "cancelled") && !errors.Is(err, context.Canceled) {
				t.Errorf("Rollouts(%s) = %v, want errors.Is context.Canceled", tt.name, err)
			}
			// Nothing but empty folders is left behind.
			filepath.Walk(outDir, func(p string, info os.FileInfo, err error) error {
				if err == nil && !info.IsDir() {
					t.Errorf("Rollouts(%s) left %s", tt.name, p)
				}
				return nil
			})
		})
	}
}

func TestExportJSONLFilePath(t *testing.T) {
	run, _ := makeRun(t, 1, 5)
	out := filepath.Join(t.TempDir(), "sub", "mine.jsonl")
	stats, err := Rollouts(context.Background(), Options{From: run, Format: FormatJSONL, Out: out})
	mustNoErr(t, err)
	if len(stats.Outputs) != 1 || stats.Outputs[0] != out {
		t.Errorf("Export outputs = %v, want [%s]", stats.Outputs, out)
	}
	if got := readJSONLRecords(t, out); int64(len(got)) != stats.Written {
		t.Errorf("%s has %d lines, want %d", out, len(got), stats.Written)
	}
}

// TestExportSources: export reads a run directory, the output directory of
// parley rollout, a rollouts file, or files given one by one; anything else
// is refused by name before an output is created.
func TestExportSources(t *testing.T) {
	run, all := makeRun(t, 2, 5)
	ro := filepath.Join(t.TempDir(), "ro") // parley rollout --out ro
	w, err := dataset.NewRolloutWriter(filepath.Join(ro, dataset.RolloutFileName), dataset.RolloutWriterOptions{Scale: dataset.ScoreScale{Name: "rule agreement", Max: 1}})
	mustNoErr(t, err)
	for i := 0; i < 4; i++ { // rollout 3 failed: 3 exported
		mustNoErr(t, w.Write(testRollout(0, i)))
	}
	mustNoErr(t, w.Close())
	batch := filepath.Join(t.TempDir(), "step-000001.parquet")
	_, err = dataset.WriteBatch(batch, 1, 0, testBatchRows(1, 4))
	mustNoErr(t, err)
	empty := t.TempDir()
	notRollouts := filepath.Join(t.TempDir(), "curriculum.parquet")
	mustNoErr(t, dataset.WritePromptsParquet(notRollouts, []dataset.Prompt{{ID: "a", Category: dataset.CategoryOpenEnded, Task: "t"}}))
	step1, step2 := dataset.RunDir(run).RolloutsPath(1), dataset.RunDir(run).RolloutsPath(2)
	notFailed := func(rs []dataset.Rollout) int {
		n := 0
		for _, r := range rs {
			if !r.Failed {
				n++
			}
		}
		return n
	}
	tests := []struct {
		name      string
		opts      Options
		written   int
		scales    []string
		source    string // in the card
		wantError string
	}{
		{"run directory", Options{From: run}, notFailed(all), nil, "run `myrun`", ""},
		{"run directory with a fallback scale", Options{From: run, Scale: dataset.ScoreScale{Name: "CA", Min: 1, Max: 5}}, notFailed(all), []string{"CA 1–5"}, "run `myrun`", ""},
		{"parley rollout's directory", Options{From: ro}, 3, []string{"rule agreement 0–1"}, "`parley rollout` output `ro`", ""},
		{"a rollouts file", Options{From: filepath.Join(ro, dataset.RolloutFileName)}, 3, []string{"rule agreement 0–1"}, "file `rollouts.parquet`", ""},
		{"files", Options{In: []string{step2, step1}}, notFailed(all), nil, "files `step-000002.parquet`, `step-000001.parquet`", ""},
		{"files with a step bound", Options{In: []string{step1, step2}, MinStep: 2}, notFailed(all[5:]), nil, "files", ""},
		{"from and in", Options{From: run, In: []string{step1}}, 0, nil, "", "not both"},
		{"nothing", Options{}, 0, nil, "", "no rollouts given"},
		{"a directory without rollouts", Options{From: empty}, 0, nil, "", "holds neither rollouts/step-N.parquet (a run of parley train, or parley score's output) nor rollouts.parquet (parley rollout's output)"},
		{"a batch", Options{In: []string{batch}}, 0, nil, "", "is a training batch"},
		{"another table", Options{From: notRollouts}, 0, nil, "", `missing column "rollout_id"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "hf")
			opts := tt.opts
			opts.Format, opts.Out = FormatHF, out
			st, err := Rollouts(context.Background(), opts)
			if tt.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantError) {
					t.Fatalf("Export = %v, want an error containing %q", err, tt.wantError)
				}
				if _, serr := os.Stat(out); serr == nil {
					t.Errorf("a refused export created %s", out)
				}
				return
			}
			mustNoErr(t, err)
			if st.Written != int64(tt.written) || !reflect.DeepEqual(st.Scales, tt.scales) {
				t.Errorf("Export stats = %+v, want %d written, scales %v", st, tt.written, tt.scales)
			}
			card := string(mustRead(t, filepath.Join(out, "README.md")))
			if !strings.Contains(card, "from "+tt.source) {
				t.Errorf("card does not name the source %q:\n%s", tt.source, card[strings.Index(card, "# parley"):])
			}
			label := "Scores: not recorded"
			if len(tt.scales) > 0 {
				label = "Scores: " + tt.scales[0]
			}
			if !strings.Contains(card, label) {
				t.Errorf("card lacks %q", label)
			}
		})
	}
}
