package harness

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/eval/report"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/reward"
	"github.com/parleyhq/parley/rollout/deliberation"
	"github.com/parleyhq/parley/rollout/single"
)

// scriptedJudge answers a fixed verdict per task and records what it saw.
type scriptedJudge struct {
	verdicts map[string][3]int // task → left wins, ties, right wins
	failOn   string            // a task it fails on

	mu   sync.Mutex
	seen [][2]string // (left, right) finals
	pers []string    // persona A of each call
}

func (j *scriptedJudge) Name() string { return "scripted" }

func (j *scriptedJudge) Compare(_ context.Context, task, personaA, _, left, right string) (reward.PairResult, error) {
	j.mu.Lock()
	j.seen = append(j.seen, [2]string{left, right})
	j.pers = append(j.pers, personaA)
	j.mu.Unlock()
	if task == j.failOn {
		return reward.PairResult{}, errors.New("judge down")
	}
	v := j.verdicts[task]
	return reward.PairResult{LeftWins: v[0], Ties: v[1], RightWins: v[2],
		Outcome: (float64(v[0]) + 0.5*float64(v[1])) / 2}, nil
}

func TestRunPairwise(t *testing.T) {
	client := newSimWithAdapter(t)
	ctx := context.Background()
	all, err := deliberation.SampleCurriculum()
	if err != nil {
		t.Fatal(err)
	}
	prompts := all[:4]
	// Verdicts: p0 two left wins, p1 two ties, p2 a right win and a tie,
	// p3 two right wins.
	verdicts := map[string][3]int{
		prompts[0].Task: {2, 0, 0}, prompts[1].Task: {0, 2, 0},
		prompts[2].Task: {0, 1, 1}, prompts[3].Task: {0, 0, 2},
	}
	ca := &scriptedJudge{verdicts: verdicts}
	cr := &scriptedJudge{verdicts: verdicts, failOn: prompts[0].Task}
	// The left (adapter) side fails every rollout of prompt 3.
	spy := &spyPolicy{Policy: client, model: "ca", failOn: prompts[3].Task}
	delib := deliberation.New(deliberation.Options{MaxRounds: 3, TurnTokens: 48, FinalTokens: 64})
	single := single.New(single.Options{Tokens: 64})
	samp := llm.Sampling{MaxTokens: 48, Temperature: 0.9, TopP: 0.95}
	decs, err := NewDecodings([]string{report.DecodingGreedy, report.DecodingSampling}, samp)
	if err != nil {
		t.Fatal(err)
	}
	var nRollouts, nCompared int64
	var mu sync.Mutex
	rep, err := RunPairwise(ctx, PairwiseOptions{
		Left:    Side{Name: "ca", Policy: spy, Model: "ca", Game: delib},
		Right:   Side{Name: "single", Policy: spy, Model: "sim-policy", Game: single},
		Prompts: prompts, Set: deliberation.SetLabel,
		Aspects:   []Aspect{{reward.AspectCollectiveAgency, ca}, {reward.AspectConflictResolution, cr}},
		Decodings: decs, Runs: 2, Seed: 5,
		ChatTemplateKwargs: map[string]any{"enable_thinking": false},
		Concurrency:        4,
		OnRollout:          func() { mu.Lock(); nRollouts++; mu.Unlock() },
		OnCompared:         func() { mu.Lock(); nCompared++; mu.Unlock() },
	})
	if err != nil {
		t.Fatal(err)
	}
	if nRollouts != 2*2*2*4 {
		t.Errorf("OnRollout called %d times, want 32", nRollouts)
	}
	// Comparisons judged: CA 3 prompts, CR 3 (one of them fails) per run.
	if nCompared != 2*2*(3+3) {
		t.Errorf("OnCompared called %d times, want 24", nCompared)
	}
	if len(rep.Comparisons) != 2*2*2*4 {
		t.Errorf("%d comparisons, want 32", len(rep.Comparisons))
	}
	if len(rep.Cells) != 4 {
		t.Fatalf("%d cells, want 4", len(rep.Cells))
	}
	// CA: p0 W W, p1 T T, p2 T L (p3 excluded): (2 + 3·0.5)/6 = 58.33 %.
	// CR: p0 excluded (judge): p1 T T, p2 T L: (0 + 3·0.5)/4 = 37.5 %.
	wants := []struct {
		aspect, decoding       string
		rate                   float64
		w, ti, l, rfail, jfail int
	}{
		{report.AspectCA, report.DecodingGreedy, 100 * 3.5 / 6, 2, 3, 1, 2, 0},
		{report.AspectCA, report.DecodingSampling, 100 * 3.5 / 6, 2, 3, 1, 2, 0},
		{reward.AspectConflictResolution, report.DecodingGreedy, 37.5, 0, 3, 1, 2, 2},
		{reward.AspectConflictResolution, report.DecodingSampling, 37.5, 0, 3, 1, 2, 2},
	}
	for i, w := range wants {
		c := rep.Cells[i]
		if c.Aspect != w.aspect || c.Decoding != w.decoding || c.Left != "ca" || c.Right != "single" || c.Set != deliberation.SetLabel {
			t.Errorf("cell %d = %s %s %s vs. %s on %s, want %s %s ca vs. single", i, c.Aspect, c.Decoding, c.Left, c.Right, c.Set, w.aspect, w.decoding)
		}
		if len(c.Runs) != 2 || math.Abs(c.Mean-w.rate) > 1e-9 || c.SD != 0 {
			t.Errorf("cell %d: %d runs, %v ± %v, want 2 runs, %v ± 0", i, len(c.Runs), c.Mean, c.SD, w.rate)
		}
		for _, r := range c.Runs {
			if r.Wins != w.w || r.Ties != w.ti || r.Losses != w.l {
				t.Errorf("cell %d run: %d/%d/%d, want %d/%d/%d", i, r.Wins, r.Ties, r.Losses, w.w, w.ti, w.l)
			}
			if r.RoundsLeft == nil || *r.RoundsLeft < 1 || *r.RoundsLeft > 3 || r.RoundsRight != nil {
				t.Errorf("cell %d run: rounds %v / %v, want left in [1, 3] and none for the single agent", i, r.RoundsLeft, r.RoundsRight)
			}
		}
		if c.RolloutFailed != w.rfail || c.JudgeFailed != w.jfail || c.Prompts != 4 || c.LeftGame != "deliberation" || c.RightGame != "single" || c.Judge != "scripted" {
			t.Errorf("cell %d provenance = %+v", i, c)
		}
	}
	for _, s := range ca.seen {
		if s[0] == "" || s[1] == "" || s[0] == s[1] {
			t.Errorf("judge saw finals %q and %q, want two different non-empty finals", s[0], s[1])
		}
	}
	if !slices.Contains(ca.pers, prompts[0].Persona("A")) {
		t.Errorf("the judge was not given the personas")
	}
	// Greedy sends temperature 0, sampling the given temperature.
	for model, temps := range spy.temps {
		zero, hot := 0, 0
		for _, x := range temps {
			switch x {
			case 0:
				zero++
			case 0.9:
				hot++
			default:
				t.Errorf("%s sampled at temperature %v", model, x)
			}
		}
		if zero == 0 || hot == 0 {
			t.Errorf("%s: %d greedy and %d sampling requests, want both", model, zero, hot)
		}
	}
	for _, kw := range spy.kw {
		if kw["enable_thinking"] != false {
			t.Fatalf("chat_template_kwargs = %v, want enable_thinking false", kw)
		}
	}
}

func TestRunPairwiseAllFail(t *testing.T) {
	_, client := newSim(t)
	all, _ := single.SampleCurriculum()
	j := &scriptedJudge{failOn: all[0].Task}
	sg := single.New(single.Options{Tokens: 32})
	decs, _ := NewDecodings([]string{report.DecodingGreedy}, llm.Sampling{MaxTokens: 32})
	_, err := RunPairwise(context.Background(), PairwiseOptions{
		Left:    Side{Name: "a", Policy: client, Model: "sim-policy", Game: sg},
		Right:   Side{Name: "b", Policy: client, Model: "sim-policy", Game: sg},
		Prompts: all[:1], Set: single.SetLabel, Aspects: []Aspect{{reward.AspectCollectiveAgency, j}},
		Decodings: decs, Runs: 1,
	})
	if err == nil {
		t.Fatal("RunPairwise with every comparison failing = nil error, want one")
	}
}

func TestRunPairwiseOptions(t *testing.T) {
	single := single.New(single.Options{})
	ok := PairwiseOptions{
		Left: Side{Name: "a", Policy: &spyPolicy{}, Game: single}, Right: Side{Name: "b", Policy: &spyPolicy{}, Game: single},
		Prompts: []dataset.Prompt{{ID: "x", Task: "t"}}, Aspects: []Aspect{{reward.AspectCollectiveAgency, &scriptedJudge{}}},
		Decodings: []Decoding{{Name: report.DecodingGreedy}}, Runs: 1,
	}
	for name, mut := range map[string]func(o *PairwiseOptions){
		"no left game":   func(o *PairwiseOptions) { o.Left.Game = nil },
		"no right name":  func(o *PairwiseOptions) { o.Right.Name = "" },
		"no prompts":     func(o *PairwiseOptions) { o.Prompts = nil },
		"no aspects":     func(o *PairwiseOptions) { o.Aspects = nil },
		"no decodings":   func(o *PairwiseOptions) { o.Decodings = nil },
		"zero runs":      func(o *PairwiseOptions) { o.Runs = 0 },
		"aspect twice":   func(o *PairwiseOptions) { o.Aspects = append(o.Aspects, o.Aspects[0]) },
		"aspect nojudge": func(o *PairwiseOptions) { o.Aspects = []Aspect{{Name: "x"}} },
	} {
		o := ok
		mut(&o)
		if _, err := RunPairwise(context.Background(), o); err == nil {
			t.Errorf("RunPairwise(%s) = nil error, want one", name)
		}
	}
	if _, err := NewDecodings([]string{"beam"}, llm.Sampling{}); err == nil {
		t.Errorf("NewDecodings(beam) = nil error, want one")
	}
	if _, err := NewDecodings([]string{"greedy", "greedy"}, llm.Sampling{}); err == nil {
		t.Errorf("NewDecodings(greedy twice) = nil error, want one")
	}
}

// finalJudge scores a rollout by a table of final completions; an unknown
// final is an error.
type finalJudge map[string]float64

func (finalJudge) Name() string { return "finals" }

func (j finalJudge) Judge(_ context.Context, r *dataset.Rollout) (reward.Result, error) {
	s, ok := j[r.Final]
	if !ok {
		return reward.Result{}, errors.New("no score for " + r.Final)
	}
	return reward.Result{Score: s, Rationale: "table"}, nil
}

func TestScoreComparer(t *testing.T) {
	c := ScoreComparer{Judge: finalJudge{"high": 0.9, "low": 0.1, "also low": 0.1}}
	tests := []struct {
		left, right        string
		wins, ties, losses int
		outcome            float64
		wantErr            bool
	}{
		{"high", "low", 2, 0, 0, 1, false},
		{"low", "high", 0, 0, 2, 0, false},
		{"low", "also low", 0, 2, 0, 0.5, false},
		{"high", "unknown", 0, 0, 0, 0, true},
		{"unknown", "high", 0, 0, 0, 0, true},
	}
	for _, tt := range tests {
		res, err := c.Compare(context.Background(), "task", "", "", tt.left, tt.right)
		if (err != nil) != tt.wantErr {
			t.Errorf("Compare(%q, %q) error = %v, want error %v", tt.left, tt.right, err, tt.wantErr)
			continue
		}
		if err != nil {
			continue
		}
		if res.LeftWins != tt.wins || res.Ties != tt.ties || res.RightWins != tt.losses || res.Outcome != tt.outcome {
			t.Errorf("Compare(%q, %q) = %d/%d/%d outcome %v, want %d/%d/%d outcome %v",
				tt.left, tt.right, res.LeftWins, res.Ties, res.RightWins, res.Outcome, tt.wins, tt.ties, tt.losses, tt.outcome)
		}
	}
}

// TestRunPairwiseScorer: an adapter against the base model, compared by a
// rule's pointwise scores (ScoreComparer, which sees whole rollouts) and
// scored by it (Scorer): the win rate agrees with the two sides' scores,
// and each side has its agreement, rounds and mean score.
func TestRunPairwiseScorer(t *testing.T) {
	client := newSimWithAdapter(t)
	ctx := context.Background()
	all, err := deliberation.SampleCurriculum()
	if err != nil {
		t.Fatal(err)
	}
	rule, err := reward.NewRuleJudge(reward.RuleOptions{Kind: reward.RuleKeywordShare, Keywords: []string{"we", "both", "together", "agree", "shared"}})
	if err != nil {
		t.Fatal(err)
	}
	rc := &recordingComparer{ScoreComparer: ScoreComparer{Judge: rule}}
	delib := deliberation.New(deliberation.Options{MaxRounds: 3, TurnTokens: 48, FinalTokens: 64})
	decs, _ := NewDecodings([]string{report.DecodingGreedy}, llm.Sampling{MaxTokens: 48})
	rep, err := RunPairwise(ctx, PairwiseOptions{
		Left:    Side{Name: "ca", Policy: client, Model: "ca", Game: delib},
		Right:   Side{Name: "base", Policy: client, Model: "sim-policy", Game: delib},
		Prompts: all[:6], Set: deliberation.SetLabel, Aspects: []Aspect{{"score", rc}},
		Decodings: decs, Runs: 1, Scorer: rule,
	})
	if err != nil {
		t.Fatal(err)
	}
	if rc.wholeRollouts != 6 {
		t.Errorf("CompareRollouts called %d times, want 6 (one per prompt)", rc.wholeRollouts)
	}
	if len(rep.Sides) != 2 || rep.Sides[0].Side != "ca" || rep.Sides[1].Side != "base" {
		t.Fatalf("sides = %+v, want ca then base", rep.Sides)
	}
	var sum [2]float64
	wins, losses := 0, 0
	for _, c := range rep.Comparisons {
		l, _ := rule.Judge(ctx, &dataset.Rollout{Final: c.LeftFinal})
		r, _ := rule.Judge(ctx, &dataset.Rollout{Final: c.RightFinal})
		sum[0] += l.Score
		sum[1] += r.Score
		switch {
		case l.Score > r.Score:
			wins += 2
		case l.Score < r.Score:
			losses += 2
		}
	}
	run := rep.Cells[0].Runs[0]
	t.Logf("ca vs. base: %d/%d/%d, mean scores %v", run.Wins, run.Ties, run.Losses, sum)
	if run.Wins != wins || run.Losses != losses || run.Wins+run.Ties+run.Losses != 12 {
		t.Errorf("run = %d/%d/%d, want %d wins and %d losses of 12 verdicts", run.Wins, run.Ties, run.Losses, wins, losses)
	}
	for i, s := range rep.Sides {
		if s.Rollouts != 6 || s.Failed != 0 || s.Scored != 6 || s.ScoreMean == nil || math.Abs(*s.ScoreMean-sum[i]/6) > 1e-9 {
			t.Errorf("side %s = %+v, want 6 rollouts scored, mean %v", s.Side, s, sum[i]/6)
		}
		if s.AgreementRate < 0 || s.AgreementRate > 1 || s.MeanRounds < 1 || s.MeanRounds > 3 {
			t.Errorf("side %s: agreement %v, mean rounds %v, want a rate and rounds in [1, 3]", s.Side, s.AgreementRate, s.MeanRounds)
		}
		if (s.AgreementRate > 0) != (s.RoundsToAgreement != nil) {
			t.Errorf("side %s: agreement %v but rounds to agreement %v", s.Side, s.AgreementRate, s.RoundsToAgreement)
		}
	}
}

// recordingComparer counts the comparisons that got whole rollouts.
type recordingComparer struct {
	ScoreComparer
	mu            sync.Mutex
	wholeRollouts int
}

func (c *recordingComparer) CompareRollouts(ctx context.Context, l, r *dataset.Rollout) (reward.PairResult, error) {
	c.mu.Lock()
	if l.RolloutID != "" && r.RolloutID != "" {
		c.wholeRollouts++
	}
	c.mu.Unlock()
	return c.ScoreComparer.CompareRollouts(ctx, l, r)
}
