package train

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/grpo"
)

func TestRunDirPaths(t *testing.T) {
	d := dataset.RunDir(filepath.FromSlash("runs/x"))
	tests := []struct {
		got, want string
	}{
		{d.ConfigPath(), "runs/x/config.yaml"},
		{d.StatePath(), "runs/x/state.json"},
		{d.MetricsPath(), "runs/x/metrics.jsonl"},
		{d.BatchesDir(), "runs/x/batches"},
		{d.BatchPath(42), "runs/x/batches/step-000042.parquet"},
		{d.ReadyPath(42), "runs/x/batches/step-000042.ready"},
		{d.RolloutsDir(), "runs/x/rollouts"},
		{d.RolloutsPath(7), "runs/x/rollouts/step-000007.parquet"},
		{d.SidecarPath(7), "runs/x/rollouts/step-000007.metrics.json"},
		{d.CheckpointsDir(), "runs/x/checkpoints"},
		{d.CheckpointDir(1234567), "runs/x/checkpoints/step-1234567"},
		{d.DonePath(3), "runs/x/checkpoints/step-000003/DONE"},
		{d.EvalsDir(), "runs/x/evals"},
		{d.EvalPath(8), "runs/x/evals/step-000008.json"},
	}
	for _, tt := range tests {
		if tt.got != filepath.FromSlash(tt.want) {
			t.Errorf("path = %q, want %q", tt.got, tt.want)
		}
	}
}

func TestParseStepName(t *testing.T) {
	tests := []struct {
		in     string
		want   int
		wantOK bool
	}{
		{"step-000042", 42, true},
		{"step-000000", 0, true},
		{"step-1234567", 1234567, true},
		{"step-999999999", dataset.MaxStep, true},
		{"step-42", 0, false},
		{"step-0000042", 0, false}, // not as dataset.StepName writes it
		{"step-00004a", 0, false},
		{"step--00042", 0, false},
		{"step-+00042", 0, false},
		{"step-1000000000", 0, false},
		{"batch-000042", 0, false},
	}
	for _, tt := range tests {
		got, ok := dataset.ParseStepName(tt.in)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("dataset.ParseStepName(%q) = %d, %v, want %d, %v", tt.in, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestRunDirCreate(t *testing.T) {
	d := dataset.RunDir(filepath.Join(t.TempDir(), "run"))
	for range 2 { // idempotent
		if err := d.Create(); err != nil {
			t.Fatalf("Create() = %v", err)
		}
	}
	for _, p := range []string{d.BatchesDir(), d.RolloutsDir(), d.CheckpointsDir(), d.EvalsDir()} {
		if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
			t.Errorf("Create() did not make %s: %v", p, err)
		}
	}
}

func TestSaveLoadState(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, dataset.StateFile)

	if s, ok, err := LoadState(path); err != nil || ok || !reflect.DeepEqual(s, State{}) {
		t.Fatalf("LoadState(missing) = %+v, %v, %v; want zero, false, nil", s, ok, err)
	}
	rb := grpo.NewRoleBaseline()
	rb.Update("holder", 0.5, 0.9)
	want := State{
		RunID: "run-1", Step: 4, PolicyVersion: 4, Seed: 7,
		RoleBaseline: rb, Adapter: "run-1-0badcafe-000004", Nonce: "0badcafe",
	}
	for i := range 3 { // overwrite repeatedly
		want.UpdatedUnixMS = int64(i)
		if err := SaveState(path, want); err != nil {
			t.Fatalf("SaveState() = %v", err)
		}
	}
	got, ok, err := LoadState(path)
	if err != nil || !ok {
		t.Fatalf("LoadState() = %v, %v", ok, err)
	}
	want.Version = StateVersion
	if !reflect.DeepEqual(got, want) {
		t.Errorf("LoadState() = %+v, want %+v", got, want)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("directory holds %v, want only %s (temp files left behind)", names, dataset.StateFile)
	}
	raw, _ := os.ReadFile(path)
	for _, key := range []string{`"run_id"`, `"step"`, `"policy_version"`, `"seed"`, `"role_baseline"`, `"adapter"`, `"nonce"`} {
		if !strings.Contains(string(raw), key) {
			t.Errorf("state.json lacks %s:\n%s", key, raw)
		}
	}
}

func TestStateErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		content string
		want    string
	}{
		{"malformed", `{"step": `, "unexpected EOF"},
		{"unknown field", `{"step": 1, "stpe": 2}`, "unknown field"},
		{"old pending field", `{"step": 1, "pending": []}`, "unknown field"},
		{"negative", `{"step": -1}`, "must not be negative"},
		{"future version", `{"version": 99}`, "state version 99"},
	}
	for _, tt := range tests {
		path := filepath.Join(dir, tt.name+".json")
		if err := os.WriteFile(path, []byte(tt.content), 0o644); err != nil {
			t.Fatal(err)
		}
		_, _, err := LoadState(path)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("LoadState(%s) error = %v, want one containing %q", tt.name, err, tt.want)
		}
	}
	if err := SaveState(filepath.Join(dir, "s.json"), State{Step: -1}); err == nil {
		t.Error("SaveState(negative step) = nil, want an error")
	}
	if err := SaveState(filepath.Join(dir, "missing", "s.json"), State{}); err == nil {
		t.Error("SaveState(missing dir) = nil, want an error")
	}
}

func TestAppendMetrics(t *testing.T) {
	path := filepath.Join(t.TempDir(), dataset.MetricsFile)
	for i := range 3 {
		if err := AppendMetrics(path, map[string]int{"step": i}); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("metrics.jsonl has %d lines, want 3:\n%s", len(lines), b)
	}
	for i, l := range lines {
		var m map[string]int
		if err := json.Unmarshal([]byte(l), &m); err != nil || m["step"] != i {
			t.Errorf("line %d = %q (%v), want step %d", i, l, err, i)
		}
	}
}

// TestRecordedSteps: resume reads the steps metrics.jsonl records, drops a
// torn last line (a crash mid-append), and refuses any other line that is
// not a metrics line, naming the file and the line.
func TestRecordedSteps(t *testing.T) {
	for _, tc := range []struct {
		name, body           string
		steps, evals, audits []int
		err                  string // "": no error
		after                string // the file afterwards ("": as it was)
	}{
		{"lines", `{"step":1}` + "\n" + `{"step":2}` + "\n" + `{"step":2,"kind":"eval"}` + "\n", []int{1, 2}, []int{2}, nil, "", ""},
		// An audit line is no step's line: the step's own is still to write.
		{"audit line", `{"step":1}` + "\n" + `{"step":2,"kind":"audit"}` + "\n", []int{1}, nil, []int{2}, "", ""},
		{"torn last line", `{"step":1}` + "\n" + `{"step":2,"lo`, []int{1}, nil, nil, "", `{"step":1}` + "\n"},
		{"blank line", `{"step":1}` + "\n\n" + `{"step":2}` + "\n", []int{1, 2}, nil, nil, "", ""},
		{"garbage line", `{"step":1}` + "\n" + "garbage\n" + `{"step":3}` + "\n", nil, nil, nil, "metrics.jsonl line 2 is not a metrics line (invalid character 'g'", ""},
		{"no step", `{"step":1}` + "\n" + `{"loss":0.5}` + "\n", nil, nil, nil, `metrics.jsonl line 2 is not a metrics line (no integer "step")`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), dataset.MetricsFile)
			if err := os.WriteFile(path, []byte(tc.body), 0o644); err != nil {
				t.Fatal(err)
			}
			rec, err := recordedSteps(path)
			steps, evals, audits := rec.steps, rec.evals, rec.audits
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("recordedSteps = %v, want an error naming %s and holding %q", err, path, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			set := func(xs []int) map[int]bool {
				m := map[int]bool{}
				for _, x := range xs {
					m[x] = true
				}
				return m
			}
			if !reflect.DeepEqual(steps, set(tc.steps)) || !reflect.DeepEqual(evals, set(tc.evals)) || !reflect.DeepEqual(audits, set(tc.audits)) {
				t.Errorf("recordedSteps = %v, %v, %v, want %v, %v, %v", steps, evals, audits, tc.steps, tc.evals, tc.audits)
			}
			want := tc.after
			if want == "" {
				want = tc.body
			}
			if b, _ := os.ReadFile(path); string(b) != want {
				t.Errorf("the file is now %q, want %q", b, want)
			}
		})
	}
}
