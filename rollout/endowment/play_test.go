package endowment_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/internal/retry"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/llm/chat"
	"github.com/parleyhq/parley/reward"
	"github.com/parleyhq/parley/rollout"
	"github.com/parleyhq/parley/rollout/endowment"
	"github.com/parleyhq/parley/sim"
)

// simEnv is serve-sim, answering the game's prompts (endowment.NewSim),
// behind a real HTTP server with the policy and judge clients parley
// would use.
type simEnv struct {
	srv    *sim.Server
	url    string
	policy *llm.Client
	judge  *chat.Client
}

func newSimEnv(t *testing.T, opts sim.Options, adapters ...string) *simEnv {
	t.Helper()
	if opts.Games == nil {
		opts.Games = []sim.Answerer{mustSim(t, nil)}
	}
	srv, err := sim.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	t.Cleanup(srv.Close)
	policy, err := llm.New(llm.Options{Endpoints: []string{ts.URL}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(policy.Close)
	for _, a := range adapters {
		if err := policy.LoadLoRA(context.Background(), a, "/adapters/"+a); err != nil {
			t.Fatal(err)
		}
	}
	judge, err := chat.New(chat.Options{BaseURL: ts.URL + "/v1", Model: sim.DefaultJudgeModel,
		Retry: retry.Policy{MaxRetries: 2, BackoffBase: time.Millisecond, BackoffMax: 2 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = judge.Close() })
	return &simEnv{srv: srv, url: ts.URL, policy: policy, judge: judge}
}

func scenarioRow(id, framing string, amount float64) dataset.Prompt {
	sc := endowment.Scenario{Endowment: amount, Framing: framing, Cause: "c01", Appeal: "Amina Yusuf, a 9-year-old girl in Kano, needs heart surgery."}
	return dataset.Prompt{ID: id, Category: endowment.Category, Task: "raise money", Scenario: sc.JSON()}
}

// play runs n rollouts of row with the given players and returns them.
func play(t *testing.T, env *simEnv, cfg *endowment.Config, row dataset.Prompt, players map[string]rollout.Player, n int) []dataset.Rollout {
	t.Helper()
	if cfg == nil {
		cfg = endowment.DefaultConfig()
	}
	g, err := endowment.New(*cfg, rollout.Shared{TurnTokens: 200, Judge: env.judge})
	if err != nil {
		t.Fatal(err)
	}
	r, err := rollout.NewRunner(rollout.RunnerOptions{Game: g, Policy: env.policy, Model: sim.DefaultModel, Players: players,
		Sampling: llm.Sampling{MaxTokens: 200, Temperature: 1, TopP: 1, TopK: -1}, GroupSize: n, Concurrency: 4, Seed: 7, RunID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	var out []dataset.Rollout
	if _, err := r.Run(context.Background(), []dataset.Prompt{row}, func(rec *dataset.Rollout) error {
		out = append(out, *rec)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func adapter(name string) rollout.Player {
	return rollout.Player{Kind: dataset.PolicyAdapter, Model: name}
}

// TestPlayOverSim plays games between scripted agents of serve-sim, over
// HTTP, and checks what each side saw, the ledger and the outcome.
func TestPlayOverSim(t *testing.T) {
	env := newSimEnv(t, sim.Options{}, "req-p80", "hold-g60")
	players := map[string]rollout.Player{endowment.RoleRequester: adapter("req-p80"), endowment.RoleHolder: {Kind: dataset.PolicyTrained, Model: "hold-g60", Trained: true}}
	rs := play(t, env, nil, scenarioRow("r1", endowment.FramingSingular, 100), players, 8)
	if len(rs) != 8 {
		t.Fatalf("%d rollouts, want 8", len(rs))
	}
	gave := 0
	for _, r := range rs {
		if r.Failed {
			t.Fatalf("rollout %s failed: %s", r.RolloutID, r.Error)
		}
		o, err := endowment.ParseOutcome(r.Outcome)
		if err != nil {
			t.Fatal(err)
		}
		if o.HolderTurns < 1 || o.HolderTurns > endowment.DefaultMaxTurns || len(o.Ledger) != o.HolderTurns || len(o.Cumulative) != o.HolderTurns {
			t.Fatalf("%s: %d holder turns, %d ledger entries, %d cumulative", r.RolloutID, o.HolderTurns, len(o.Ledger), len(o.Cumulative))
		}
		if int(r.Rounds) != o.HolderTurns || len(r.Turns) != 2*o.HolderTurns {
			t.Errorf("%s: rounds %d and %d turns for %d holder turns", r.RolloutID, r.Rounds, len(r.Turns), o.HolderTurns)
		}
		prev := 0.0
		for i, c := range o.Cumulative {
			if c < prev-1e-9 || c > o.Endowment+1e-9 {
				t.Errorf("%s: cumulative %v not nondecreasing within the endowment", r.RolloutID, o.Cumulative)
			}
			if math.Abs(o.Ledger[i].BalanceAfter-(o.Endowment-c)) > 1e-9 {
				t.Errorf("%s: turn %d balance %v, cumulative %v", r.RolloutID, i+1, o.Ledger[i].BalanceAfter, c)
			}
			prev = c
		}
		if math.Abs(o.Share-o.Transferred/o.Endowment) > 1e-12 || o.Turn1Refusal != (o.Cumulative[0] == 0) {
			t.Errorf("%s: share %v of %v, turn-1 refusal %v with first cumulative %v", r.RolloutID, o.Share, o.Transferred, o.Turn1Refusal, o.Cumulative[0])
		}
		if o.FirstConcession != nil {
			gave++
			if o.FirstConcession.Turn < 1 || o.Ledger[o.FirstConcession.Turn-1].Moved != o.FirstConcession.Amount {
				t.Errorf("%s: first concession %+v does not match the ledger", r.RolloutID, o.FirstConcession)
			}
		}
		checkViews(t, r, o)
		checkSequences(t, r)
		if o.PromptsSHA256 == "" || len(o.PromptsSHA256) != 64 {
			t.Errorf("prompts hash %q", o.PromptsSHA256)
		}
	}
	if gave == 0 {
		t.Error("a holder of generosity 0.6 against a persuasive requester never gave anything in 8 games")
	}
	// Determinism: the same seed plays the same games.
	again := play(t, env, nil, scenarioRow("r1", endowment.FramingSingular, 100), players, 8)
	for i := range rs {
		if rs[i].Outcome != again[i].Outcome && rs[i].RolloutID == again[i].RolloutID {
			t.Errorf("%s: outcome differs between two runs with one seed", rs[i].RolloutID)
		}
	}
}

// checkViews: only the holder sees its balance; neither side sees the
// other's private trace; each trace is recorded.
func checkViews(t *testing.T, r dataset.Rollout, o *endowment.Outcome) {
	t.Helper()
	hv, rv := o.Views[endowment.RoleHolder], o.Views[endowment.RoleRequester]
	if len(hv) == 0 || len(rv) == 0 {
		t.Fatalf("%s: views missing", r.RolloutID)
	}
	for _, m := range rv {
		if strings.Contains(m.Content, "balance") {
			t.Errorf("%s: the requester saw a balance: %q", r.RolloutID, m.Content)
		}
		if m.Role == "user" && strings.Contains(m.Content, "<think>") {
			t.Errorf("%s: the requester saw the holder's trace: %q", r.RolloutID, m.Content)
		}
	}
	balances := 0
	for _, m := range hv {
		if m.Role == "user" {
			if strings.Contains(m.Content, "<think>") {
				t.Errorf("%s: the holder saw the requester's trace: %q", r.RolloutID, m.Content)
			}
			if strings.HasPrefix(m.Content, "[Your balance: $") {
				balances++
			}
		}
	}
	if balances != o.HolderTurns {
		t.Errorf("%s: %d balance lines for %d holder turns", r.RolloutID, balances, o.HolderTurns)
	}
	roles := map[string]int{}
	for _, tr := range o.Traces {
		roles[tr.Role]++
		if tr.Text == "" || strings.Contains(tr.Text, "<think>") {
			t.Errorf("%s: trace %+v", r.RolloutID, tr)
		}
	}
	if roles[endowment.RoleHolder] != o.HolderTurns || roles[endowment.RoleRequester] != o.HolderTurns {
		t.Errorf("%s: traces by role %v, want %d each", r.RolloutID, roles, o.HolderTurns)
	}
	for _, turn := range r.Turns {
		if strings.Contains(turn.Text, "<think>") || strings.Contains(turn.Text, "Turn ") {
			t.Errorf("%s: visible text holds the trace: %q", r.RolloutID, turn.Text)
		}
	}
}

// checkSequences: the trained holder's sequence holds its traces under
// mask 1; the frozen requester's sequence is recorded but not trained.
func checkSequences(t *testing.T, r dataset.Rollout) {
	t.Helper()
	tok := sim.NewTokenizer()
	var holder *dataset.Sequence
	for i := range r.Sequences {
		if r.Sequences[i].Role == endowment.RoleHolder {
			holder = &r.Sequences[i]
		}
	}
	if holder == nil {
		t.Fatalf("%s: no holder sequence", r.RolloutID)
	}
	var sampled []int32
	for i, id := range holder.InputIDs {
		if holder.LossMask[i] == 1 {
			sampled = append(sampled, id)
		}
	}
	if text := tok.Decode(sampled); !strings.Contains(text, "<think>") || !strings.Contains(text, "I hold $") {
		t.Errorf("%s: the holder's trained tokens lack its trace: %q", r.RolloutID, text)
	}
	if ro := r.Role(endowment.RoleRequester); ro == nil || ro.Trained || ro.Policy != dataset.PolicyAdapter {
		t.Errorf("%s: requester outcome %+v", r.RolloutID, ro)
	}
}

func TestScorer(t *testing.T) {
	env := newSimEnv(t, sim.Options{}, "req-p90", "hold-g90")
	rs := play(t, env, nil, scenarioRow("r", endowment.FramingGroup, 50), map[string]rollout.Player{
		endowment.RoleRequester: adapter("req-p90"), endowment.RoleHolder: adapter("hold-g90")}, 4)
	st := reward.ScoreAll(context.Background(), endowment.Scorer{}, rs, 2)
	if st.Judged != 4 {
		t.Fatalf("scored %+v", st)
	}
	for _, r := range rs {
		o, _ := endowment.ParseOutcome(r.Outcome)
		h, q := r.Role(endowment.RoleHolder), r.Role(endowment.RoleRequester)
		if !h.Scored || !q.Scored || math.Abs(float64(h.Score)-(1-o.Share)) > 1e-6 || math.Abs(float64(q.Score)-o.Share) > 1e-6 {
			t.Errorf("%s: holder %+v requester %+v share %v", r.RolloutID, h, q, o.Share)
		}
		if o.Endowment != 50 {
			t.Errorf("endowment %v, want the scenario's 50", o.Endowment)
		}
	}
	if _, err := (endowment.Scorer{}).Judge(context.Background(), &dataset.Rollout{Env: endowment.Name, Failed: true, Error: "x"}); err == nil {
		t.Error("a failed rollout was scored")
	}
	m := endowment.Metrics(rs)
	if m[endowment.MetricShare] < 0 || m[endowment.MetricShare] > 1 || m[endowment.MetricHolderTurns] < 1 {
		t.Errorf("metrics %v", m)
	}
}

// TestScriptedRequester: a requester played by the game's script writes
// the script's lines and records no tokens.
func TestScriptedRequester(t *testing.T) {
	env := newSimEnv(t, sim.Options{}, "hold-g30")
	rs := play(t, env, &endowment.Config{MaxTurns: 3, Endowment: 100, JudgeMaxTokens: 400, MaxUnparsed: 1}, scenarioRow("r", endowment.FramingSingular, 0), map[string]rollout.Player{
		endowment.RoleRequester: {Kind: dataset.PolicyScripted, Model: "script"}, endowment.RoleHolder: adapter("hold-g30")}, 2)
	for _, r := range rs {
		if r.Failed {
			t.Fatal(r.Error)
		}
		if !strings.HasPrefix(r.Turns[0].Text, "Hello. I am asking on behalf of Amina Yusuf") || r.Turns[0].FinishReason != "scripted" {
			t.Errorf("first requester turn %+v", r.Turns[0])
		}
		for _, s := range r.Sequences {
			if s.Role == endowment.RoleRequester {
				t.Errorf("a scripted requester recorded a sequence")
			}
		}
		if ro := r.Role(endowment.RoleRequester); ro.Policy != dataset.PolicyScripted || ro.Trained {
			t.Errorf("requester outcome %+v", ro)
		}
	}
}

// TestJudgeNonsense: a judge whose every reply is truncated JSON fails the
// game once max_unparsed is passed; a judge that errs sometimes leaves
// unparsed turns that move nothing.
func TestJudgeNonsense(t *testing.T) {
	env := newSimEnv(t, sim.Options{JudgeMalformedRate: 1}, "req-p50", "hold-g90")
	players := map[string]rollout.Player{endowment.RoleRequester: adapter("req-p50"), endowment.RoleHolder: adapter("hold-g90")}
	rs := play(t, env, nil, scenarioRow("r", endowment.FramingSingular, 100), players, 2)
	for _, r := range rs {
		if !r.Failed || !strings.Contains(r.Error, "max_unparsed") {
			t.Errorf("rollout with a nonsense judge: failed %v, error %q", r.Failed, r.Error)
		}
	}
	cfg := endowment.DefaultConfig()
	cfg.MaxUnparsed = 10
	rs = play(t, env, cfg, scenarioRow("r", endowment.FramingSingular, 100), players, 2)
	for _, r := range rs {
		o, err := endowment.RolloutOutcome(&r)
		if err != nil {
			t.Fatal(err)
		}
		if o.Unparsed != o.HolderTurns || o.Transferred != 0 {
			t.Errorf("unparsed %d of %d turns, transferred %v: unparsed verdicts must move nothing", o.Unparsed, o.HolderTurns, o.Transferred)
		}
		for _, e := range o.Ledger {
			if e.Parsed || !strings.Contains(e.Error, "invalid") && !errors.Is(errors.New(e.Error), chat.ErrInvalidReply) && e.Error == "" {
				t.Errorf("entry %+v", e)
			}
		}
	}
}

func TestValidate(t *testing.T) {
	g, err := endowment.New(*endowment.DefaultConfig(), rollout.Shared{Judge: fakeChatter{}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		scenario, want string
	}{
		{`{"endowment":-100,"framing":"singular","appeal":"x"}`, "key endowment"},
		{`{"framing":"plural","appeal":"x"}`, "key framing"},
		{`{"framing":"group","appeal":" "}`, "key appeal"},
		{`{"framing":"group","appeal":"x","budget":5}`, "unknown field"},
		{``, "no scenario"},
		{`{"framing":"group","appeal":"x"} {}`, "trailing"},
	}
	for _, tt := range tests {
		err := g.Validate(dataset.Prompt{ID: "p7", Scenario: tt.scenario})
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "p7") {
			t.Errorf("Validate(%s) = %v, want an error naming p7 and %q", tt.scenario, err, tt.want)
		}
	}
	if err := g.Validate(scenarioRow("ok", endowment.FramingGroup, 0)); err != nil {
		t.Error(err)
	}
	if _, err := endowment.New(*endowment.DefaultConfig(), rollout.Shared{}); err == nil || !strings.Contains(err.Error(), "judge.base_url") {
		t.Errorf("New without a judge: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		mut  func(*endowment.Config)
		want string
	}{
		{func(c *endowment.Config) { c.MaxTurns = 0 }, "key max_turns"},
		{func(c *endowment.Config) { c.Endowment = -1 }, "key endowment"},
		{func(c *endowment.Config) { c.Endowment = math.Inf(1) }, "key endowment"},
		{func(c *endowment.Config) { c.JudgeMaxTokens = 1 }, "key judge_max_tokens"},
		{func(c *endowment.Config) { c.MaxUnparsed = -1 }, "key max_unparsed"},
		{func(c *endowment.Config) { c.PromptsDir = "/nonexistent" }, "key prompts_dir"},
	}
	for _, tt := range tests {
		c := endowment.DefaultConfig()
		tt.mut(c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Validate = %v, want %q", err, tt.want)
		}
	}
	if err := endowment.DefaultConfig().Validate(); err != nil {
		t.Error(err)
	}
}

type fakeChatter struct{}

func (fakeChatter) Chat(context.Context, chat.Request) (chat.Response, error) {
	return chat.Response{}, errors.New("not used")
}
func (fakeChatter) Model() string { return "fake" }

func TestPromptsLoadAndHash(t *testing.T) {
	p, err := endowment.LoadPrompts("")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Hashes) != len(endowment.PromptFiles) || len(p.SHA256) != 64 {
		t.Fatalf("hashes %v, set %q", p.Hashes, p.SHA256)
	}
	dir := t.TempDir()
	if err := p.WriteFiles(dir, func(path string, b []byte) error { return writeFile(path, b) }); err != nil {
		t.Fatal(err)
	}
	q, err := endowment.LoadPrompts(dir)
	if err != nil {
		t.Fatal(err)
	}
	if q.SHA256 != p.SHA256 || !reflect.DeepEqual(q.Hashes, p.Hashes) {
		t.Error("the written copy hashes differently")
	}
	// A changed file changes the set's hash; a broken template is an error
	// naming the file.
	if err := writeFile(dir+"/holder_turn.txt", []byte("{{.Balanse}} {{.Message}}")); err != nil {
		t.Fatal(err)
	}
	if _, err := endowment.LoadPrompts(dir); err == nil || !strings.Contains(err.Error(), "holder_turn.txt") {
		t.Errorf("a template with an unknown field: %v", err)
	}
	if err := writeFile(dir+"/holder_turn.txt", []byte("Balance ${{.Balance}}.\n{{.Message}}")); err != nil {
		t.Fatal(err)
	}
	r, err := endowment.LoadPrompts(dir)
	if err != nil || r.SHA256 == p.SHA256 {
		t.Errorf("edited prompts: %v, hash unchanged %v", err, r != nil && r.SHA256 == p.SHA256)
	}
}

func TestOutcomeJSON(t *testing.T) {
	o := endowment.Outcome{Endowment: 100, Share: 0.25, Cumulative: []float64{0, 25}}
	b, _ := json.Marshal(o)
	p, err := endowment.ParseOutcome(string(b))
	if err != nil || p.CumulativeAt(1) != 0 || p.CumulativeAt(2) != 25 || p.CumulativeAt(5) != 25 {
		t.Errorf("ParseOutcome: %+v, %v", p, err)
	}
	for _, bad := range []string{"", "{", `{"endowment":0}`, `{"endowment":100,"share":1.5}`} {
		if _, err := endowment.ParseOutcome(bad); err == nil {
			t.Errorf("ParseOutcome(%q) accepted", bad)
		}
	}
}

// TestReportSection: the game's section of a run report draws the share
// by step and tabulates it by step and by opponent.
func TestReportSection(t *testing.T) {
	var rs []dataset.Rollout
	for step := int32(1); step <= 3; step++ {
		for i := 0; i < 4; i++ {
			share := 0.5 - 0.1*float64(step) + 0.01*float64(i)
			o := endowment.Outcome{Endowment: 100, Share: share, Transferred: 100 * share, Cumulative: []float64{100 * share}, Turn1Refusal: i%2 == 0, HolderTurns: 1}
			b, _ := json.Marshal(o)
			rs = append(rs, dataset.Rollout{Env: endowment.Name, Step: step, Outcome: string(b), Roles: []dataset.RoleOutcome{
				{Role: endowment.RoleHolder, Policy: dataset.PolicyTrained, Trained: true},
				{Role: endowment.RoleRequester, Policy: dataset.PolicyScripted, Model: "scripted"}}})
		}
	}
	rs = append(rs, dataset.Rollout{Env: endowment.Name, Step: 3, Failed: true})
	dir := t.TempDir()
	md, err := endowment.Report(rollout.ReportInput{Dir: dir, Rollouts: func(fn func(dataset.Rollout) error) error {
		for _, r := range rs {
			if err := fn(r); err != nil {
				return err
			}
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| 1 | 4 | 0.415 | 0.500 |", "| 3 | 4 | 0.215 |", "| holder | scripted:scripted | 12 | 0.315 |", "1 failed rollouts", "endowment_share_by_step.png"} {
		if !strings.Contains(md, want) {
			t.Errorf("section lacks %q:\n%s", want, md)
		}
	}
	if st, err := os.Stat(dir + "/endowment_share_by_step.png"); err != nil || st.Size() < 1000 {
		t.Errorf("figure: %v", err)
	}
	if md, err := endowment.Report(rollout.ReportInput{Dir: dir}); err != nil || md != "" {
		t.Errorf("no rollouts: %q, %v", md, err)
	}
}
