package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/app"
	"github.com/parleyhq/parley/config"
	"github.com/parleyhq/parley/eval/tournament"
	"github.com/parleyhq/parley/rollout/endowment"
	"github.com/parleyhq/parley/sim"
)

// TestTournamentSIGKILL runs `parley tournament` as a process against
// serve-sim, kills it (SIGKILL) once games are on disk, runs it again to
// the end, and checks that every game was recorded once, exactly as an
// uninterrupted tournament records it; then `parley report` draws it.
func TestTournamentSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	srv, err := sim.New(sim.Options{LatencyMedian: 4 * time.Millisecond, Games: mustSimGames(t)})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	defer srv.Close()
	var b strings.Builder
	fmt.Fprintf(&b, "seed: 5\nrounds: 2\nconcurrency: 2\nretry_wait: 1ms\njudge: {base_url: %s/v1, model: sim-judge}\nsampling: {temperature: 1, max_tokens: 200}\n", ts.URL)
	b.WriteString("analysis: {bootstrap: 100, splits: 100, audit_draws: 50, elo_permutations: 100}\nagents:\n")
	for _, a := range []string{"a-g5-p30", "b-g30-p70", "c-g60-p50", "d-g90-p90"} {
		fmt.Fprintf(&b, "  - {name: %s, endpoint: %s, model: sim-policy, adapter: %s, adapter_path: /sim/%s}\n", a, ts.URL, a, a)
	}
	specPath := filepath.Join(t.TempDir(), "agents.yaml")
	if err := os.WriteFile(specPath, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "parley")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dir := filepath.Join(t.TempDir(), "t1")
	games := func() int {
		es, _ := os.ReadDir(filepath.Join(dir, tournament.GamesDir))
		n := 0
		for _, e := range es {
			if strings.HasSuffix(e.Name(), ".json") && !strings.HasPrefix(e.Name(), ".") {
				n++
			}
		}
		return n
	}
	cmd := exec.Command(bin, "tournament", "--agents", specPath, "--dir", dir, "--log-format", "json")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for games() < 6 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	killedAt := games()
	if killedAt < 6 || killedAt >= 24 {
		t.Fatalf("killed with %d of 24 games recorded", killedAt)
	}
	out, err := exec.Command(bin, "tournament", "--agents", specPath, "--dir", dir, "--log-format", "json").CombinedOutput()
	if err != nil {
		t.Fatalf("resume: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), fmt.Sprintf(`"resumed":%d`, killedAt)) || !strings.Contains(string(out), `"complete":true`) {
		t.Errorf("resume summary: %s", out)
	}
	recs, err := tournament.ReadRecords(dir)
	if err != nil || len(recs) != 24 {
		t.Fatalf("%d records, %v", len(recs), err)
	}
	spec, _ := config.LoadTournament(specPath)
	ref := filepath.Join(t.TempDir(), "ref")
	if _, err := app.Tournament(context.Background(), spec, app.TournamentOptions{Dir: ref}); err != nil {
		t.Fatal(err)
	}
	want, _ := tournament.ReadRecords(ref)
	for i := range recs {
		if recs[i].Match.ID != want[i].Match.ID || recs[i].Rollout.Outcome != want[i].Rollout.Outcome {
			t.Errorf("game %s differs from the uninterrupted tournament's", recs[i].Match.ID)
		}
	}
	// For people (console logs), the summary is a table, not a JSON blob.
	stdout, err := exec.Command(bin, "tournament", "--agents", specPath, "--dir", dir, "--log-format", "console").Output()
	if err != nil || !strings.HasPrefix(string(stdout), "── tournament ──") || strings.Contains(string(stdout), "{") ||
		!strings.Contains(strings.Join(strings.Fields(string(stdout)), " "), "resumed 24") {
		t.Errorf("console summary (%v):\n%s\nwant a table with resumed 24", err, stdout)
	}
	rep, err := exec.Command(bin, "report", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("report: %v\n%s", err, rep)
	}
	for _, f := range []string{"report.md", endowment.FigShareMatrix, endowment.FigAudit} {
		if _, err := os.Stat(filepath.Join(dir, "report", f)); err != nil {
			t.Error(err)
		}
	}
	t.Logf("killed after %d of 24 games; resumed and reported", killedAt)
}
