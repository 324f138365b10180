package app

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/internal/summary"
	"go.uber.org/zap"
)

// TestReportRefuses: `parley report` says what is wrong with its inputs
// before it writes anything.
func TestReportRefuses(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// A `parley rollout` output: rollouts.parquet, not a run's rollouts/.
	rolloutOut := t.TempDir()
	if err := os.WriteFile(filepath.Join(rolloutOut, "rollouts.parquet"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		o    ReportOptions
		want string
	}{
		{"missing directory", ReportOptions{RunDir: filepath.Join(t.TempDir(), "nope")}, "report: run directory: "},
		{"a file", ReportOptions{RunDir: file}, "report: " + file + " is not a directory"},
		{"nothing", ReportOptions{}, "report: nothing to report: give a run directory, --eval files, or both"},
		{"negative window", ReportOptions{RunDir: t.TempDir(), Window: -1}, "report: flag --window: -1 steps"},
		{"an empty directory", ReportOptions{RunDir: t.TempDir()}, "holds no config.yaml, metrics.jsonl or rollouts/: not a run directory"},
		{"a rollout output", ReportOptions{RunDir: rolloutOut}, "not a run directory"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path, err := Report(tt.o, zap.NewNop())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Report(%+v) = %q, %v, want an error containing %q", tt.o, path, err, tt.want)
			}
		})
	}
}

// TestReportRun: a run directory with its config and metrics gets
// RUN_DIR/report/report.md, or the folder --out names.
func TestReportRun(t *testing.T) {
	dir := t.TempDir()
	rd := dataset.RunDir(dir)
	if err := os.WriteFile(rd.ConfigPath(), []byte("judge:\n  kind: ca\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	metrics := `{"step":1,"reward_mean":2.5,"agreement_rate":0.5}` + "\n" + `{"step":2,"reward_mean":3.0,"agreement_rate":0.75}` + "\n"
	if err := os.WriteFile(rd.MetricsPath(), []byte(metrics), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, out, want string
	}{
		{"default folder", "", filepath.Join(dir, "report", "report.md")},
		{"--out", filepath.Join(t.TempDir(), "elsewhere"), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path, err := Report(ReportOptions{RunDir: dir, Out: tt.out, Title: "a test run"}, zap.NewNop())
			if err != nil {
				t.Fatal(err)
			}
			want := tt.want
			if tt.out != "" {
				want = filepath.Join(tt.out, "report.md")
			}
			if path != want {
				t.Errorf("report at %s, want %s", path, want)
			}
			b, err := os.ReadFile(path)
			if err != nil || !bytes.Contains(b, []byte("a test run")) {
				t.Errorf("report.md (%v) lacks its title:\n%s", err, b)
			}
		})
	}
}

// TestEnvDefaults: a zero Env logs nowhere, prints nowhere, shows no bars
// and no summary, and its progress bar still counts and ends.
func TestEnvDefaults(t *testing.T) {
	var e Env
	if e.log() == nil || e.out() == nil || e.bars() == nil {
		t.Fatal("a zero Env has a nil logger, writer or bars")
	}
	e.log().Info("to nowhere")
	if _, err := e.out().Write([]byte("to nowhere")); err != nil {
		t.Error(err)
	}
	e.summarize(summary.New("nothing"))
	tick, end := e.progress("items", 2)
	tick()
	tick()
	end(false)
	_, end = e.progress("items", 2)
	end(true)

	var out bytes.Buffer
	var got *summary.Table
	e = Env{Out: &out, Summarize: func(t *summary.Table) { got = t }}
	if _, err := e.out().Write([]byte("table")); err != nil || out.String() != "table" {
		t.Errorf("Out received %q (%v), want %q", out.String(), err, "table")
	}
	tb := summary.New("closing")
	e.summarize(tb)
	if got != tb {
		t.Error("Summarize was not called with the table")
	}
}
