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
	_, client := newSim(t)
	ctx := context.Background()
	if err := client.LoadLoRA(ctx, "ca", "/adapters/ca"); err != nil {
		t.Fatal(err)
	}
	all, err := dataset.SampleCurriculum(dataset.SampleDilemmas)
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
		Prompts: prompts, Set: SetConflict,
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
		if c.Aspect != w.aspect || c.Decoding != w.decoding || c.Left != "ca" || c.Right != "single" || c.Set != SetConflict {
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
	all, _ := dataset.SampleCurriculum(dataset.SampleOpenEnded)
	j := &scriptedJudge{failOn: all[0].Task}
	single := single.New(single.Options{Tokens: 32})
	decs, _ := NewDecodings([]string{report.DecodingGreedy}, llm.Sampling{MaxTokens: 32})
	_, err := RunPairwise(context.Background(), PairwiseOptions{
		Left:    Side{Name: "a", Policy: client, Model: "sim-policy", Game: single},
		Right:   Side{Name: "b", Policy: client, Model: "sim-policy", Game: single},
		Prompts: all[:1], Set: SetOpenEnded, Aspects: []Aspect{{reward.AspectCollectiveAgency, j}},
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
