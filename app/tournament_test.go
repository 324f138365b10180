package app

import (
	"context"
	"errors"
	"fmt"
	"image/png"
	"math"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/parleyhq/parley/config"
	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/eval/tournament"
	_ "github.com/parleyhq/parley/internal/toygame"
	"github.com/parleyhq/parley/rollout"
	"github.com/parleyhq/parley/rollout/endowment"
	_ "github.com/parleyhq/parley/rollout/games" // every built-in game, as cmd/parley registers them
	"github.com/parleyhq/parley/sim"
)

// runOptions and run are the tests' view of `parley tournament`: a parsed
// tournament file played into a directory.
type runOptions struct {
	Dir      string
	Spec     config.Tournament
	Progress func(done, failed, total int)
}

func run(ctx context.Context, o runOptions) (tournament.Summary, error) {
	return Tournament(ctx, o.Spec, TournamentOptions{Dir: o.Dir, Progress: o.Progress})
}

// outcome is a recorded game's endowment outcome; nil for a failed game.
func outcome(r tournament.Record) (*endowment.Outcome, error) {
	if r.Failed {
		return nil, nil
	}
	return endowment.RolloutOutcome(&r.Rollout)
}

// analyzeDir is seed 001's analysis of the tournament in dir, as its
// report computes it.
func analyzeDir(t *testing.T, dir string, scheduled int, recs []tournament.Record) (*endowment.Analysis, error) {
	t.Helper()
	b, err := tournament.ReadSpec(dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := config.ParseTournament(b)
	if err != nil {
		t.Fatal(err)
	}
	in := rollout.TournamentReport{Section: s.Game, Analysis: s.Analysis, Seed: s.Seed, Rounds: s.Rounds,
		Schedule: s.Schedule, Conditions: s.Conditions, Scheduled: scheduled}
	for _, a := range s.Agents {
		in.Agents = append(in.Agents, rollout.TournamentAgent{Name: a.Name, Family: a.Family, OpenWeights: a.OpenWeights})
	}
	for i := range recs {
		in.Games = append(in.Games, recs[i].Game())
	}
	return endowment.AnalyzeTournament(in)
}

// startSim runs serve-sim, answering the endowment game's prompts
// (endowment.NewSim), behind a real HTTP server.
func startSim(t testing.TB, opts sim.Options) string {
	t.Helper()
	answers, err := endowment.NewSim(nil)
	if err != nil {
		t.Fatal(err)
	}
	opts.Games = []sim.Answerer{answers}
	srv, err := sim.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	t.Cleanup(srv.Close)
	return ts.URL
}

// simAgents are four scripted agents of serve-sim: adapters whose names
// give a holder's generosity and a requester's persuasiveness.
var simAgents = []string{"stingy-g5-p20", "firm-g25-p80", "soft-g70-p40", "open-g95-p90"}

// specYAML is a tournament of the sim agents on the server at url.
func specYAML(url, judgeURL string, rounds int, extra string) string {
	return specYAMLOf(url, judgeURL, rounds, extra, simAgents)
}

// specYAMLOf is specYAML with other agents.
func specYAMLOf(url, judgeURL string, rounds int, extra string, agents []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `seed: 3
rounds: %d
concurrency: 4
max_attempts: 2
retry_wait: 1ms
request_timeout: 5s
max_retries: 1
judge: {base_url: %s/v1, model: sim-judge, max_retries: 1, concurrency: 8}
sampling: {temperature: 1, max_tokens: 200}
analysis: {bootstrap: 200, splits: 200, audit_draws: 100, elo_permutations: 200}
%s
agents:
`, rounds, judgeURL, extra)
	for _, a := range agents {
		fmt.Fprintf(&b, "  - {name: %s, endpoint: %s, model: sim-policy, adapter: %s, adapter_path: /sim/%s, max_concurrent: 8, family: sim}\n", a, url, a, a)
	}
	return b.String()
}

func mustSpec(t testing.TB, y string) config.Tournament {
	t.Helper()
	s, err := config.ParseTournament([]byte(y))
	if err != nil {
		t.Fatalf("ParseTournament: %v\n%s", err, y)
	}
	return s
}

// deadURL is an address nothing listens on.
func deadURL(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// TestAgentDown: an agent whose server is down for the whole tournament
// stops it before the first game with an error naming the agent; with
// preflight off its games are recorded as failed after their attempts and
// every other game is played.
func TestAgentDown(t *testing.T) {
	url := startSim(t, sim.Options{})
	dead := deadURL(t)
	y := specYAML(url, url, 1, "")
	y = strings.Replace(y, "endpoint: "+url+", model: sim-policy, adapter: open-g95-p90, adapter_path: /sim/open-g95-p90",
		"endpoint: "+dead+", model: sim-policy", 1)
	spec := mustSpec(t, y)
	dir := t.TempDir()
	_, err := run(context.Background(), runOptions{Dir: dir, Spec: spec})
	if err == nil || !strings.Contains(err.Error(), "agent open-g95-p90") || !strings.Contains(err.Error(), dead) {
		t.Fatalf("preflight: %v, want an error naming the agent and its endpoint", err)
	}
	if recs, _ := tournament.ReadRecords(dir); len(recs) != 0 {
		t.Fatalf("%d games played before the preflight error", len(recs))
	}
	spec.Preflight = false
	dir = t.TempDir()
	sum, err := run(context.Background(), runOptions{Dir: dir, Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Total != 12 || sum.Failed != 6 || !sum.Complete {
		t.Errorf("summary %+v: want 12 games, the down agent's 6 failed", sum)
	}
	recs, _ := tournament.ReadRecords(dir)
	for _, r := range recs {
		down := r.Match.Seats[0] == "open-g95-p90" || r.Match.Seats[1] == "open-g95-p90"
		if r.Failed != down {
			t.Errorf("game %s (%s vs %s): failed %v", r.Match.ID, r.Match.Seats[0], r.Match.Seats[1], r.Failed)
		}
		if down && (r.Attempts != 2 || len(r.Errors) != 2 || !strings.Contains(r.Errors[0], "127.0.0.1")) {
			t.Errorf("game %s: %d attempts, errors %v", r.Match.ID, r.Attempts, r.Errors)
		}
	}
	// The report leaves the failed games out and says how many.
	path, err := TournamentReport(dir, filepath.Join(dir, "report"))
	if err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(path)
	if !strings.Contains(string(md), "**6 played and analysed, 6 failed**") || strings.Contains(string(md), "NaN") {
		t.Errorf("report of a tournament with a down agent:\n%s", md)
	}
}

// TestJudgeNonsenseFailsGames: a judge answering malformed JSON fails the
// games (more unparsed verdicts than max_unparsed), recorded with why.
func TestJudgeNonsenseFailsGames(t *testing.T) {
	url := startSim(t, sim.Options{})
	judge := startSim(t, sim.Options{JudgeMalformedRate: 1})
	spec := mustSpec(t, specYAML(url, judge, 1, ""))
	dir := t.TempDir()
	sum, err := run(context.Background(), runOptions{Dir: dir, Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Failed != sum.Total {
		t.Errorf("%d of %d games failed, want all", sum.Failed, sum.Total)
	}
	recs, _ := tournament.ReadRecords(dir)
	for _, r := range recs {
		if !strings.Contains(strings.Join(r.Errors, " "), "unparsed verdicts") {
			t.Errorf("game %s errors %v", r.Match.ID, r.Errors)
		}
	}
}

// TestNegativeEndowmentScenario: a scenario file with a negative
// endowment is one error naming the file, the line and the key; nothing
// is played.
func TestNegativeEndowmentScenario(t *testing.T) {
	url := startSim(t, sim.Options{})
	path := filepath.Join(t.TempDir(), "scenarios.jsonl")
	row := func(id, framing string, e int) string {
		return fmt.Sprintf(`{"id":%q,"category":"endowment","task":"t","scenario":"{\"endowment\":%d,\"framing\":\"%s\",\"appeal\":\"x\"}"}`+"\n", id, e, framing)
	}
	os.WriteFile(path, []byte(row("a", "singular", 100)+row("b", "group", -100)), 0o644)
	spec := mustSpec(t, specYAML(url, url, 1, "scenarios: "+path))
	dir := t.TempDir()
	_, err := run(context.Background(), runOptions{Dir: dir, Spec: spec})
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "row b") || !strings.Contains(err.Error(), "key endowment") {
		t.Fatalf("error %v, want the file, the row and the key", err)
	}
	if recs, _ := tournament.ReadRecords(dir); len(recs) != 0 {
		t.Errorf("%d games played", len(recs))
	}
}

// TestRunKilledAndResumed: a tournament stopped after some games and
// started again records every game once, and exactly what an
// uninterrupted tournament records.
func TestRunKilledAndResumed(t *testing.T) {
	url := startSim(t, sim.Options{})
	spec := mustSpec(t, specYAML(url, url, 2, ""))
	full := t.TempDir()
	sum, err := run(context.Background(), runOptions{Dir: full, Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Total != 24 || sum.Played != 24 || !sum.Complete {
		t.Fatalf("uninterrupted: %+v, want 24 games (6 pairs × 2 rounds × 2 framings)", sum)
	}
	want := map[string]string{}
	recs, err := tournament.ReadRecords(full)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		want[r.Match.ID] = r.Rollout.Outcome
	}

	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	var n atomic.Int32
	_, err = run(ctx, runOptions{Dir: dir, Spec: spec, Progress: func(done, failed, total int) {
		if n.Add(1) == 9 { // the start, then 8 games
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("stopped run: %v, want context.Canceled", err)
	}
	part, _ := tournament.ReadRecords(dir)
	if len(part) < 8 || len(part) >= 24 {
		t.Fatalf("%d games recorded before the stop", len(part))
	}
	// A write killed half way leaves a temporary file behind.
	if err := os.WriteFile(filepath.Join(dir, tournament.GamesDir, ".f0-r01-0-1.json.tmp-123"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err = run(context.Background(), runOptions{Dir: dir, Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Resumed != len(part) || sum.Played != 24-len(part) || !sum.Complete {
		t.Errorf("resumed run %+v after %d recorded", sum, len(part))
	}
	got, _ := tournament.ReadRecords(dir)
	if len(got) != 24 {
		t.Fatalf("%d records, want 24", len(got))
	}
	for _, r := range got {
		if r.Failed {
			t.Errorf("game %s failed: %v", r.Match.ID, r.Errors)
		}
		if r.Rollout.Outcome != want[r.Match.ID] {
			t.Errorf("game %s differs from the uninterrupted tournament's", r.Match.ID)
		}
		if h := r.Rollout.Role("holder"); h == nil || h.Model != r.Match.Seats[0] || !h.Scored {
			t.Errorf("game %s: holder outcome %+v", r.Match.ID, h)
		}
	}
	entries, _ := os.ReadDir(filepath.Join(dir, tournament.GamesDir))
	if len(entries) != 24 {
		t.Errorf("%d files in games/, want 24 (temporary files removed)", len(entries))
	}
	// The rollouts parquet holds every game for `parley export`.
	rs, err := dataset.ReadAllRollouts(dataset.RunDir(dir).RolloutsPath(0))
	if err != nil || len(rs) != 24 {
		t.Errorf("rollouts parquet: %d rows, %v", len(rs), err)
	}
	// A second run has nothing left to play.
	sum, err = run(context.Background(), runOptions{Dir: dir, Spec: spec})
	if err != nil || sum.Played != 0 || sum.Resumed != 24 {
		t.Errorf("third run: %+v, %v", sum, err)
	}
	// A changed spec is refused.
	spec2 := spec
	spec2.Rounds = 3
	if _, err := run(context.Background(), runOptions{Dir: dir, Spec: spec2}); err == nil || !strings.Contains(err.Error(), "differs") {
		t.Errorf("a changed spec: %v", err)
	}
}

// TestEndToEndReport: a tournament of 4 simulated agents × 2 framings × 2
// rounds against serve-sim, killed once and resumed, then its report with
// every table and figure. PARLEY_KEEP_REPORT=DIR keeps the report there.
func TestEndToEndReport(t *testing.T) {
	url := startSim(t, sim.Options{JudgeMalformedRate: 0.05})
	spec := mustSpec(t, specYAML(url, url, 2, `cohorts:
  - {name: no open holder, drop_holders: [open-g95-p90]}
  - {name: "no open, both roles", drop: [open-g95-p90]}`))
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	var n atomic.Int32
	if _, err := run(ctx, runOptions{Dir: dir, Spec: spec, Progress: func(int, int, int) {
		if n.Add(1) == 12 {
			cancel()
		}
	}}); err == nil {
		t.Fatal("the stopped run did not report its stop")
	}
	sum, err := run(context.Background(), runOptions{Dir: dir, Spec: spec})
	if err != nil || !sum.Complete || sum.Resumed < 11 {
		t.Fatalf("resume: %+v, %v", sum, err)
	}
	out := os.Getenv("PARLEY_KEEP_REPORT")
	if out == "" {
		out = filepath.Join(dir, "report")
	}
	path, err := TournamentReport(dir, out)
	if err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(path)
	for _, want := range []string{"figure 1", "table 5", "figure 3, table 3", "table 4", "figure 6", "table 7, figure 5", "figure 12", "figure 7",
		"holder identity", "no open holder", "Spearman", "TOST p", "Elo per role", "24 scheduled",
		"table 8", "| the paper's | holder identity |", "| reverse | framing + message features |", "**strategy entropy**:"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report lacks %q", want)
		}
	}
	for _, f := range []string{endowment.FigShareMatrix, endowment.FigBudget, endowment.FigBudgetCI, endowment.FigCohorts, endowment.FigFraming, endowment.FigRefusal, endowment.FigCumulative, endowment.FigAudit} {
		file, err := os.Open(filepath.Join(out, f))
		if err != nil {
			t.Errorf("figure %s: %v", f, err)
			continue
		}
		img, err := png.Decode(file)
		file.Close()
		if err != nil || img.Bounds().Dx() < 300 {
			t.Errorf("figure %s: %v", f, err)
		}
		if !strings.Contains(string(md), "]("+f+")") {
			t.Errorf("the report does not show %s", f)
		}
	}
	if _, err := os.Stat(filepath.Join(out, tournament.AnalysisFile)); err != nil {
		t.Error(err)
	}
	// The analysis agrees with the records.
	recs, _ := tournament.ReadRecords(dir)
	a, err := analyzeDir(t, dir, 24, recs)
	if err != nil {
		t.Fatal(err)
	}
	total, games := 0.0, 0
	for _, r := range recs {
		if o, _ := outcome(r); o != nil {
			total += o.Share
			games++
		}
	}
	if a.Played != games || a.Failed != 24-games {
		t.Errorf("played %d failed %d, records %d played", a.Played, a.Failed, games)
	}
	mean := 0.0
	for _, row := range a.Framing.Rows {
		mean += row.Mean * float64(row.Games) / 100
	}
	if math.Abs(mean-total) > 1e-9 {
		t.Errorf("framing rows add up to %v, records to %v", mean, total)
	}
	// Table 8: both orders end with every predictor in; holder identity
	// alone explains the between-holder sum of squares over the total.
	sq := a.Sequential
	if sq.Err != "" || len(sq.Forward) != 4 || len(sq.Reverse) != 3 || math.Abs(sq.Forward[3].R2-sq.Reverse[2].R2) > 1e-9 {
		t.Fatalf("table 8: %+v", sq)
	}
	byHolder := map[string][]float64{}
	var all []float64
	for _, r := range recs {
		if o, _ := outcome(r); o != nil {
			byHolder[r.Match.Seats[0]] = append(byHolder[r.Match.Seats[0]], o.Share)
			all = append(all, o.Share)
		}
	}
	grand := total / float64(games)
	var ssb, sst float64
	for _, ys := range byHolder {
		m := 0.0
		for _, y := range ys {
			m += y / float64(len(ys))
		}
		ssb += float64(len(ys)) * (m - grand) * (m - grand)
	}
	for _, y := range all {
		sst += (y - grand) * (y - grand)
	}
	if got := sq.Forward[0]; math.Abs(got.R2-ssb/sst) > 1e-9 || got.Params != len(byHolder)-1 {
		t.Errorf("R² of holder identity %.6f (%d parameters), between-holder SS / total %.6f (%d holders)", got.R2, got.Params, ssb/sst, len(byHolder))
	}
	// Under the singular framing the sim's requesters name and age the
	// person; under the group framing they do not.
	if f := sq.Features[0]; f.Name != endowment.FeatIndividuation || !(f.Singular > 0.1) || f.Group != 0 {
		t.Errorf("individuation by framing: %+v", f)
	}
	// The stingy holder gives least: first in the robustness order.
	if spec.Agents[a.HolderOrder[0]].Name != "stingy-g5-p20" {
		t.Errorf("most robust holder %s", spec.Agents[a.HolderOrder[0]].Name)
	}
}

// TestScheduleCounts: seed 001's schedule gives 1,050 games at 15 agents
// and 5 rounds, each ordered pairing 5 times; "both" doubles it.
func TestScheduleCounts(t *testing.T) {
	var b strings.Builder
	b.WriteString("judge: {base_url: http://j, model: j}\nagents:\n")
	for i := 0; i < 15; i++ {
		b.WriteString("  - {name: a" + string(rune('a'+i)) + ", endpoint: http://x, model: m}\n")
	}
	spec := mustSpec(t, b.String())
	scen, err := endowment.SampleCurriculum()
	if err != nil {
		t.Fatal(err)
	}
	plan := tournament.Plan{Agents: spec.AgentNames(), Rounds: spec.Rounds, Schedule: spec.Schedule, Conditions: spec.Conditions,
		Condition: endowment.TournamentHook.Condition}
	ms, err := tournament.Schedule(plan, scen)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 1050 {
		t.Fatalf("%d games, want 1050", len(ms))
	}
	perPair := map[[2]string]int{}
	perFraming := map[string]int{}
	ids := map[string]bool{}
	for _, m := range ms {
		perPair[m.Seats]++
		perFraming[m.Condition]++
		if ids[m.ID] {
			t.Fatalf("duplicate id %s", m.ID)
		}
		ids[m.ID] = true
		if m.Seats[0] == m.Seats[1] {
			t.Fatal("self-play scheduled")
		}
	}
	if len(perPair) != 210 || perFraming["singular"] != 525 || perFraming["group"] != 525 {
		t.Errorf("%d ordered pairings, framings %v", len(perPair), perFraming)
	}
	for p, n := range perPair {
		if n != 5 {
			t.Errorf("pairing %v plays %d games, want 5", p, n)
		}
	}
	plan.Schedule = tournament.ScheduleBoth
	ms, _ = tournament.Schedule(plan, scen)
	if len(ms) != 2100 {
		t.Errorf("both: %d games, want 2100", len(ms))
	}
}

// TestToyTournament: a game that is only its own package (internal/toygame)
// is played as a tournament from a tournament file and reported: the file,
// the players and the report all come through its rollout.Spec.
func TestToyTournament(t *testing.T) {
	url := startSim(t, sim.Options{})
	var b strings.Builder
	fmt.Fprintf(&b, "env: toy\nrounds: 1\ngame: {turns: 1, rival: true}\nsampling: {max_tokens: 16}\nagents:\n")
	for _, a := range []string{"x", "y", "z"} {
		fmt.Fprintf(&b, "  - {name: %s, endpoint: %s, model: sim-policy, adapter: %s, adapter_path: /sim/%s}\n", a, url, a, a)
	}
	spec := mustSpec(t, b.String())
	if spec.Scenarios != "builtin:open-ended" || len(spec.Conditions) != 1 || spec.Conditions[0] != "" {
		t.Errorf("toy defaults: scenarios %q, conditions %q", spec.Scenarios, spec.Conditions)
	}
	dir := t.TempDir()
	sum, err := run(context.Background(), runOptions{Dir: dir, Spec: spec})
	if err != nil || sum.Total != 3 || sum.Failed != 0 || !sum.Complete {
		t.Fatalf("toy tournament: %+v, %v", sum, err)
	}
	path, err := TournamentReport(dir, filepath.Join(dir, "report"))
	if err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(path)
	if !strings.Contains(string(md), "# Toy tournament") || !strings.Contains(string(md), "| x |") {
		t.Errorf("toy report:\n%s", md)
	}
	// A game without a tournament, or an unknown one, is one clear error.
	for y, want := range map[string]string{"env: single\n": "cannot be played as a tournament", "env: chess\n": `unknown game "chess"`} {
		if _, err := config.ParseTournament([]byte(y)); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "key env") {
			t.Errorf("%q: %v, want %q", y, err, want)
		}
	}
}

// TestDegenerateTournaments: tournaments at the edges of the design give
// a whole report (report.md and analysis.json) whose every section says
// in words what it could not estimate, and (A) is fitted without the term
// that is missing. Before: all-zero shares stopped the report at figure 3
// ("nothing to draw", exit 1, no report.md); one framing and one round
// skipped (A) with (B); two agents printed d's intervals collapsed to a
// point ([−8.180, −8.180]).
func TestDegenerateTournaments(t *testing.T) {
	url := startSim(t, sim.Options{})
	tests := []struct {
		name   string
		rounds int
		extra  string
		agents []string
		want   []string
		figs   []string // figures drawn
		check  func(t *testing.T, a *endowment.Analysis)
	}{
		{name: "all shares zero", rounds: 2, agents: []string{"z1-g0-p20", "z2-g0-p80", "z3-g0-p40", "z4-g0-p90"},
			want: []string{"The budget could not be estimated: every game transferred the same share of the endowment (0.0%): there is no variance to decompose",
				"pooled SD is 0", "is not drawn", "No draw gave a coefficient", "(table 8)\n\nNot estimated: every game transferred the same share"},
			figs: []string{endowment.FigShareMatrix, endowment.FigRefusal, endowment.FigCumulative},
			check: func(t *testing.T, a *endowment.Analysis) {
				if a.Budget.Mixed != nil || a.Budget.Err == "" {
					t.Errorf("budget %+v of constant shares", a.Budget)
				}
			}},
		{name: "one framing", rounds: 4, extra: "conditions: [singular]",
			want: []string{"here without the framing term: only one framing was played", "only the singular framing was played (24 games)",
				"| moral framing | not estimated |", "| + framing condition | "},
			figs: []string{endowment.FigBudget, endowment.FigBudgetCI},
			check: func(t *testing.T, a *endowment.Analysis) {
				if m := a.Budget.Mixed; m == nil || !m.NoFraming || !a.Budget.MoM.NoFraming || a.Budget.MoM.Pooled {
					t.Errorf("one framing: mixed %+v, MoM %+v, %s", m, a.Budget.MoM, a.Budget.MixedErr)
				}
				if sq := a.Sequential; len(sq.Forward) != 4 || sq.Forward[2].Params != 0 || sq.Forward[2].Delta != 0 {
					t.Errorf("one framing: table 8 %+v, want the framing to add nothing", sq)
				}
			}},
		{name: "rounds 1", rounds: 1,
			want: []string{"no ordered pairing was played twice", "| requester × holder | in residual |  | in residual |", "(A) estimates it across pairings"},
			figs: []string{endowment.FigBudget, endowment.FigFraming},
			check: func(t *testing.T, a *endowment.Analysis) {
				if m := a.Budget.Mixed; m == nil || m.NoFraming || !a.Budget.MoM.Pooled || !a.Budget.MoM.NoFraming {
					t.Errorf("rounds 1: mixed %+v, MoM %+v, %s", m, a.Budget.MoM, a.Budget.MixedErr)
				}
			}},
		{name: "two agents", rounds: 5, agents: []string{"firm-g25-p80", "soft-g70-p40"},
			want: []string{"holder and requester identity cannot be told apart", "Cohen's d (singular − group"},
			figs: []string{endowment.FigFraming},
			check: func(t *testing.T, a *endowment.Analysis) {
				f := a.Framing
				if f.Err != "" || !(f.CI95[0] < f.CI90[0] && f.CI90[0] < f.D.D && f.D.D < f.CI90[1] && f.CI90[1] < f.CI95[1]) || f.CI90[1]-f.CI90[0] > 4 {
					t.Errorf("two agents: d %.3f, 90%% [%.3f, %.3f], 95%% [%.3f, %.3f] (%s)", f.D.D, f.CI90[0], f.CI90[1], f.CI95[0], f.CI95[1], f.Err)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			agents := tt.agents
			if agents == nil {
				agents = simAgents
			}
			spec := mustSpec(t, specYAMLOf(url, url, tt.rounds, tt.extra, agents))
			dir := t.TempDir()
			if sum, err := run(context.Background(), runOptions{Dir: dir, Spec: spec}); err != nil || sum.Failed > 0 {
				t.Fatalf("tournament: %+v, %v", sum, err)
			}
			out := filepath.Join(dir, "report")
			path, err := TournamentReport(dir, out)
			if err != nil {
				t.Fatalf("report: %v", err)
			}
			md, _ := os.ReadFile(path)
			for _, w := range tt.want {
				if !strings.Contains(string(md), w) {
					t.Errorf("report lacks %q", w)
				}
			}
			if strings.Contains(string(md), "NaN") || strings.Contains(string(md), "roundrobin.") || strings.Contains(string(md), "stats.") {
				t.Errorf("report shows NaN or an error's package name")
			}
			for _, f := range tt.figs {
				if _, err := os.Stat(filepath.Join(out, f)); err != nil || !strings.Contains(string(md), "]("+f+")") {
					t.Errorf("figure %s: %v", f, err)
				}
			}
			if _, err := os.Stat(filepath.Join(out, tournament.AnalysisFile)); err != nil {
				t.Error(err)
			}
			if t.Failed() {
				t.Logf("report:\n%s", md)
			}
			recs, _ := tournament.ReadRecords(dir)
			a, err := analyzeDir(t, dir, len(recs), recs)
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, a)
		})
	}
}
