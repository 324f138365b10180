package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/rollout"
	"github.com/parleyhq/parley/sim"
)

// TestScenarioCmd generates a set and reports the committed ones.
func TestScenarioCmd(t *testing.T) {
	out := filepath.Join(t.TempDir(), "set.jsonl")
	var buf bytes.Buffer
	cmd := newRoot()
	cmd.SetOut(&buf)
	cmd.SetArgs([]string{"scenario", "generate", "--type", "1hb3g", "--n", "3", "--seed", "9", "--out", out})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "| Scenarios | 3 |") {
		t.Errorf("generate printed %q", buf.String())
	}
	if _, err := dataset.LoadPrompts(out, dataset.LoadOptions{Categories: []string{"1hb3g"}}); err != nil {
		t.Errorf("the generated set does not load: %v", err)
	}
	buf.Reset()
	cmd = newRoot()
	cmd.SetOut(&buf)
	cmd.SetArgs([]string{"scenario", "report", "builtin:2hb2g", "builtin:1hb3g"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "| Structural property | 2HB+2G | 1HB+3G |") {
		t.Errorf("report printed %q", buf.String())
	}
	cmd = newRoot()
	cmd.SetArgs([]string{"scenario", "generate", "--type", "3hb", "--out", out})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "unknown scenario type") {
		t.Errorf("generate --type 3hb = %v", err)
	}
	cmd = newRoot()
	cmd.SetArgs([]string{"scenario", "generate", "--type", "2hb2g", "--target", "table5", "--out", out})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), `flag --target: "table5", want paper or none`) {
		t.Errorf("generate --target table5 = %v", err)
	}
}

// TestSeriesCmd plays configs/multiparty.yaml's game against serve-sim
// with short series, runs it again (everything resumed), and reports it.
func TestSeriesCmd(t *testing.T) {
	srv, err := sim.New(sim.Options{Games: mustSimGames(t)})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	defer srv.Close()
	root, _ := filepath.Abs("../..")
	out := t.TempDir()
	args := []string{"--config", filepath.Join(root, "configs", "multiparty.yaml"), "--out", out, "--series", "1",
		fmt.Sprintf("--policy.endpoints=%s", ts.URL), "--game.multiparty.series_length=3",
		"--curriculum.path=builtin:multiparty"}
	for run, want := range []string{"24 series, 72 games played, 0 resumed", "24 series, 0 games played, 72 resumed"} {
		var buf bytes.Buffer
		cmd := newSeriesCmd(quietApp())
		cmd.SetOut(&buf)
		cmd.SetArgs(args)
		if err := cmd.Execute(); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		if !strings.Contains(buf.String(), want) {
			t.Errorf("run %d printed %q, want %q", run, buf.String(), want)
		}
	}
	rs, err := dataset.ReadAllRollouts(rollout.SeriesRolloutsPath(out))
	if err != nil || len(rs) != 72 {
		t.Fatalf("rollouts: %d, %v", len(rs), err)
	}
	cmd := newReportCmd(quietApp())
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetArgs([]string{out})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(out, "report", "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	// The head names what the report read: the series' rollouts.
	for _, w := range []string{"Sources: `rollouts/` (1 file, step 0; the multiparty game's section).\n", "## Five-party negotiation (seed 002)", "### Table 1", "### Table 2", "### Table 3", "### Table 6", "fig2-2hb2g.png", "fig8-1hb3g.png"} {
		if !strings.Contains(string(md), w) {
			t.Errorf("report lacks %q", w)
		}
	}
	for _, f := range []string{"fig2-2hb2g.png", "fig2-1hb3g.png", "fig8-2hb2g.png", "fig8-1hb3g.png"} {
		if st, err := os.Stat(filepath.Join(out, "report", f)); err != nil || st.Size() < 10_000 {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestSeriesCmdFailed: with the server down every game fails and the
// command fails, naming the count; run again with the server up, it plays
// the failed games again (none resumed) and succeeds.
func TestSeriesCmdFailed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String()
	ln.Close()
	srv, err := sim.New(sim.Options{Games: mustSimGames(t)})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	defer srv.Close()
	root, _ := filepath.Abs("../..")
	out := t.TempDir()
	for _, tt := range []struct {
		url, want, wantErr string
	}{
		{down, "24 series, 24 games played, 0 resumed, 24 failed", "series: 24 of 24 games played failed"},
		{ts.URL, "24 series, 24 games played (24 played again: failed, or after a failed game), 0 resumed, 0 failed", ""},
		{ts.URL, "24 series, 0 games played, 24 resumed, 0 failed", ""},
	} {
		var buf bytes.Buffer
		cmd := newSeriesCmd(quietApp())
		cmd.SetOut(&buf)
		cmd.SetArgs([]string{"--config", filepath.Join(root, "configs", "multiparty.yaml"), "--out", out, "--series", "1",
			"--policy.endpoints=" + tt.url, "--game.multiparty.series_length=1", "--curriculum.path=builtin:multiparty"})
		err := cmd.Execute()
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("series against %s = %v, want an error containing %q", tt.url, err, tt.wantErr)
		}
		if !strings.Contains(buf.String(), tt.want) {
			t.Errorf("series against %s printed %q, want %q", tt.url, buf.String(), tt.want)
		}
	}
}

// TestSeriesBadScenario: a bad scenario in the curriculum file is an error
// naming the config key, the file and the line, before any game is played.
func TestSeriesBadScenario(t *testing.T) {
	root, _ := filepath.Abs("../..")
	rows, err := os.ReadFile(filepath.Join(root, "rollout", "multiparty", "scenario", "sets", "2hb2g.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitN(string(rows), "\n", 3)
	var row map[string]any
	if err := json.Unmarshal([]byte(lines[1]), &row); err != nil {
		t.Fatal(err)
	}
	var sc map[string]any
	if err := json.Unmarshal([]byte(row["scenario"].(string)), &sc); err != nil {
		t.Fatal(err)
	}
	sc["parties"].([]any)[0].(map[string]any)["batna"] = -3
	b, _ := json.Marshal(sc)
	row["scenario"] = string(b)
	bad, _ := json.Marshal(row)
	path := filepath.Join(t.TempDir(), "bad.jsonl")
	if err := os.WriteFile(path, []byte(lines[0]+"\n"+string(bad)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := newSeriesCmd(quietApp())
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetArgs([]string{"--config", filepath.Join(root, "configs", "multiparty.yaml"), "--out", t.TempDir(),
		"--policy.endpoints=http://127.0.0.1:9", "--curriculum.path=" + path})
	err = cmd.Execute()
	for _, w := range []string{"config key curriculum.path", path + ":2:", "party 0 (hb1): BATNA -3 is negative"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("series with a bad scenario = %v, want it to name %q", err, w)
		}
	}
}
