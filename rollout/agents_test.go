package rollout_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/rollout"
	"github.com/parleyhq/parley/rollout/deliberation"
	"github.com/parleyhq/parley/rollout/single"
)

// bytePolicy is an in-memory policy over a byte tokenizer: each message
// renders as "<role>content\n" and the generation prompt as "<assistant>".
// Replies are scripted per role. dropHistory makes re-renders drop earlier
// assistant turns, as a template that strips reasoning would, to force
// prefix breaks.
type bytePolicy struct {
	mu          sync.Mutex
	replies     map[string][]string // by the first message's content prefix
	calls       map[string]int
	dropHistory bool
	failAfter   int // fail the n-th completion (1-based; 0 = never)
	completions int
}

func render(msgs []llm.Message, gen bool, drop bool) []int32 {
	var b strings.Builder
	for i, m := range msgs {
		if drop && m.Role == "assistant" && i < len(msgs)-1 {
			continue
		}
		fmt.Fprintf(&b, "<%s>%s<|im_end|>\n", m.Role, m.Content)
	}
	if gen {
		b.WriteString("<assistant>")
	}
	return bytesToIDs(b.String())
}

func bytesToIDs(s string) []int32 {
	out := make([]int32, len(s))
	for i := 0; i < len(s); i++ {
		out[i] = int32(s[i])
	}
	return out
}

func idsToString(ids []int32) string {
	b := make([]byte, len(ids))
	for i, id := range ids {
		b[i] = byte(id)
	}
	return string(b)
}

func (p *bytePolicy) Tokenize(_ context.Context, req llm.TokenizeRequest) (llm.TokenizeResult, error) {
	t := render(req.Messages, req.AddGenerationPrompt, p.dropHistory)
	return llm.TokenizeResult{Tokens: t, Count: len(t), MaxModelLen: 1 << 20}, nil
}

func (p *bytePolicy) Complete(_ context.Context, req llm.CompletionRequest) ([]llm.Completion, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.completions++
	if p.failAfter > 0 && p.completions == p.failAfter {
		return nil, errors.New("injected failure")
	}
	prompt := idsToString(req.Prompt)
	key := "final"
	switch {
	case strings.Contains(prompt, "You are Agent A"):
		key = "A"
	case strings.Contains(prompt, "You are Agent B"):
		key = "B"
	case strings.Contains(prompt, "thoughtful assistant"):
		key = "single"
	}
	n := p.calls[key]
	p.calls[key]++
	text := fmt.Sprintf("%s turn %d", key, n)
	if r := p.replies[key]; n < len(r) {
		text = r[n]
	}
	// Like vLLM: the end-of-turn token is sampled (in token_ids) but not in
	// the text; the template's newline after it comes with the tokens here.
	ids := bytesToIDs(text + "<|im_end|>\n")
	lp := make([]float32, len(ids))
	for i := range lp {
		lp[i] = -0.25
	}
	return []llm.Completion{{TokenIDs: ids, Logprobs: lp, Text: text, FinishReason: "stop"}}, nil
}

var prompt = dataset.Prompt{ID: "d1", Category: dataset.CategoryInterpersonal, Task: "Share or keep the last ventilator?", Personas: dataset.PersonaPairOf("Data first.", "Feelings first.")}

// checkMasks verifies that every masked run of a sequence is exactly a
// sampled reply and every unmasked run is exactly what the template rendered.
func checkSequence(t *testing.T, s dataset.Sequence) {
	t.Helper()
	if len(s.InputIDs) != len(s.LossMask) || len(s.InputIDs) != len(s.Logprobs) {
		t.Fatalf("sequence %s: lengths %d/%d/%d differ", s.Role, len(s.InputIDs), len(s.LossMask), len(s.Logprobs))
	}
	for i, m := range s.LossMask {
		if m == 0 && s.Logprobs[i] != 0 {
			t.Fatalf("sequence %s: logprob %g at unmasked token %d", s.Role, s.Logprobs[i], i)
		}
		if m == 1 && s.Logprobs[i] != -0.25 {
			t.Fatalf("sequence %s: logprob %g at masked token %d, want the server's", s.Role, s.Logprobs[i], i)
		}
	}
}

func TestDeliberationAgreement(t *testing.T) {
	pol := &bytePolicy{replies: map[string][]string{
		"A": {"I propose X.", "Fine. [AGREE]"},
		"B": {"I propose Y. [AGREE]", "unused"},
	}, calls: map[string]int{}}
	g := deliberation.New(deliberation.Options{MaxRounds: 5})
	rec := &dataset.Rollout{}
	agents := rollout.NewRecorder(rollout.RecorderOptions{Policy: pol, Model: "m", Sampling: llm.Sampling{MaxTokens: 64}, Seed: 1})
	if err := g.Play(context.Background(), prompt, agents, rec); err != nil {
		t.Fatal(err)
	}
	// A1, B1 (agree), A2 (agree) → ends in round 2 after three turns.
	if !rec.Agreed || rec.Rounds != 2 {
		t.Errorf("Agreed, Rounds = %v, %d; want true, 2", rec.Agreed, rec.Rounds)
	}
	if got := len(rec.Turns); got != 4 { // three dialogue turns and the final
		t.Errorf("len(Turns) = %d, want 4", got)
	}
	if rec.Final != "final turn 0" {
		t.Errorf("Final = %q", rec.Final)
	}
	seqs := agents.Sequences()
	if len(seqs) != 3 {
		t.Fatalf("len(Sequences) = %d, want 3 (A, B, final)", len(seqs))
	}
	want := map[string]string{"A": dataset.KindDialogue, "B": dataset.KindDialogue, "final": dataset.KindFinal}
	for _, s := range seqs {
		if s.Kind != want[s.Role] {
			t.Errorf("sequence %s kind = %s, want %s", s.Role, s.Kind, want[s.Role])
		}
		checkSequence(t, s)
	}
	// Agent A's sequence is exactly: render(view after its last turn) with
	// its two replies masked.
	a := seqs[0]
	full := idsToString(a.InputIDs)
	if !strings.HasPrefix(full, "<system>You are Agent A") || !strings.HasSuffix(full, "Fine. [AGREE]<|im_end|>\n") {
		t.Errorf("A's sequence = %q", full)
	}
	var masked strings.Builder
	for i, m := range a.LossMask {
		if m == 1 {
			masked.WriteByte(byte(a.InputIDs[i]))
		}
	}
	if got := masked.String(); got != "I propose X.<|im_end|>\nFine. [AGREE]<|im_end|>\n" {
		t.Errorf("A's masked tokens = %q", got)
	}
	if agents.PrefixBreaks != 0 {
		t.Errorf("PrefixBreaks = %d, want 0", agents.PrefixBreaks)
	}
}

func TestDeliberationMaxRounds(t *testing.T) {
	pol := &bytePolicy{calls: map[string]int{}}
	g := deliberation.New(deliberation.Options{MaxRounds: 3})
	rec := &dataset.Rollout{}
	agents := rollout.NewRecorder(rollout.RecorderOptions{Policy: pol, Model: "m", Sampling: llm.Sampling{MaxTokens: 64}})
	if err := g.Play(context.Background(), prompt, agents, rec); err != nil {
		t.Fatal(err)
	}
	if rec.Agreed || rec.Rounds != 3 || len(rec.Turns) != 7 {
		t.Errorf("Agreed, Rounds, turns = %v, %d, %d; want false, 3, 7", rec.Agreed, rec.Rounds, len(rec.Turns))
	}
}

func TestPrefixBreakStartsNewSequence(t *testing.T) {
	pol := &bytePolicy{calls: map[string]int{}, dropHistory: true}
	g := deliberation.New(deliberation.Options{MaxRounds: 2})
	rec := &dataset.Rollout{}
	agents := rollout.NewRecorder(rollout.RecorderOptions{Policy: pol, Model: "m", Sampling: llm.Sampling{MaxTokens: 64}})
	if err := g.Play(context.Background(), prompt, agents, rec); err != nil {
		t.Fatal(err)
	}
	// A and B each re-render once with their earlier turn dropped.
	if agents.PrefixBreaks != 2 {
		t.Errorf("PrefixBreaks = %d, want 2", agents.PrefixBreaks)
	}
	if got := len(agents.Sequences()); got != 5 {
		t.Errorf("len(Sequences) = %d, want 5 (A, B, A', B', final)", got)
	}
	for _, s := range agents.Sequences() {
		checkSequence(t, s)
	}
}

func TestSingle(t *testing.T) {
	pol := &bytePolicy{calls: map[string]int{}}
	rec := &dataset.Rollout{}
	agents := rollout.NewRecorder(rollout.RecorderOptions{Policy: pol, Model: "m", Sampling: llm.Sampling{MaxTokens: 64}})
	if err := single.New(single.Options{Tokens: 32}).Play(context.Background(), prompt, agents, rec); err != nil {
		t.Fatal(err)
	}
	seqs := agents.Sequences()
	if len(seqs) != 1 || seqs[0].Kind != dataset.KindFinal || seqs[0].Role != "single" || !strings.HasPrefix(rec.Final, "single turn 0") {
		t.Errorf("single: seqs=%+v final=%q", seqs, rec.Final)
	}
}

func TestRunnerRecordsFailures(t *testing.T) {
	pol := &bytePolicy{calls: map[string]int{}, failAfter: 3}
	r, err := rollout.NewRunner(rollout.RunnerOptions{Game: single.New(single.Options{}), Policy: pol, Model: "m", GroupSize: 4, Concurrency: 2, Sampling: llm.Sampling{MaxTokens: 8}})
	if err != nil {
		t.Fatal(err)
	}
	var got []*dataset.Rollout
	sum, err := r.Run(context.Background(), []dataset.Prompt{prompt, {ID: "d2", Task: "t2"}}, func(r *dataset.Rollout) error {
		got = append(got, r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 8 || sum.Rollouts != 8 || sum.Failed != 1 || len(sum.FailedIDs) != 1 {
		t.Fatalf("rollouts=%d summary=%+v, want 8 with 1 failed", len(got), sum)
	}
	ids := map[string]bool{}
	for _, r := range got {
		ids[r.RolloutID] = true
		if r.Failed && !strings.Contains(r.Error, "injected failure") {
			t.Errorf("failed rollout error = %q", r.Error)
		}
	}
	if len(ids) != 8 {
		t.Errorf("rollout ids not unique: %v", ids)
	}
}

func TestRunnerCancel(t *testing.T) {
	pol := &bytePolicy{calls: map[string]int{}}
	r, _ := rollout.NewRunner(rollout.RunnerOptions{Game: single.New(single.Options{}), Policy: pol, Model: "m", GroupSize: 50, Concurrency: 1})
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	sum, err := r.Run(ctx, []dataset.Prompt{prompt}, func(*dataset.Rollout) error {
		n++
		if n == 5 {
			cancel()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Rollouts < 5 || sum.Rollouts+sum.Interrupted != 50 || sum.Interrupted == 0 {
		t.Errorf("after cancel: %+v", sum)
	}
}

func TestCleanText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Hello<|im_end|>", "Hello"},
		{"<think>\nhidden\n</think>\n\nVisible [AGREE]", "Visible [AGREE]"},
		{"start <think>unterminated", "start"},
		{"  plain  ", "plain"},
	} {
		if got := rollout.CleanText(tc.in); got != tc.want {
			t.Errorf("rollout.CleanText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestDeriveSeed(t *testing.T) {
	a, b := rollout.DeriveSeed(1, "x", 0), rollout.DeriveSeed(1, "x", 0)
	if a != b || a < 0 {
		t.Errorf("rollout.DeriveSeed not deterministic or negative: %d %d", a, b)
	}
	if rollout.DeriveSeed(1, "x", 1) == a || rollout.DeriveSeed(2, "x", 0) == a || rollout.DeriveSeed(1, "y", 0) == a {
		t.Errorf("rollout.DeriveSeed collides on different inputs")
	}
}

func TestSelectPrompts(t *testing.T) {
	var ps []dataset.Prompt
	for i := 0; i < 30; i++ {
		ps = append(ps, dataset.Prompt{ID: fmt.Sprintf("p%d", i), Category: dataset.CategoryProfessional})
		ps = append(ps, dataset.Prompt{ID: fmt.Sprintf("i%d", i), Category: dataset.CategoryInterpersonal})
		ps = append(ps, dataset.Prompt{ID: fmt.Sprintf("m%d", i), Category: dataset.CategoryMicroEthics})
	}
	mix := map[string]float64{"professional": 0.3, "interpersonal": 0.4, "micro_ethics": 0.3}
	a := rollout.SelectPrompts(ps, mix, 16, 7, 3)
	b := rollout.SelectPrompts(ps, mix, 16, 7, 3)
	c := rollout.SelectPrompts(ps, mix, 16, 7, 4)
	if len(a) != 16 || fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatalf("rollout.SelectPrompts not deterministic for the same (seed, step)")
	}
	if fmt.Sprint(a) == fmt.Sprint(c) {
		t.Errorf("rollout.SelectPrompts gives the same rows at different steps")
	}
	seen := map[string]bool{}
	for _, p := range a {
		if seen[p.ID] {
			t.Errorf("row %s repeated within a step", p.ID)
		}
		seen[p.ID] = true
	}
	// over many steps the mix holds within a few points
	count := map[string]int{}
	for s := 0; s < 500; s++ {
		for _, p := range rollout.SelectPrompts(ps, mix, 10, 1, s) {
			count[p.Category]++
		}
	}
	for cat, w := range mix {
		got := float64(count[cat]) / 5000
		if got < w-0.03 || got > w+0.03 {
			t.Errorf("category %s share = %.3f, want %.2f ± 0.03", cat, got, w)
		}
	}
}

// TestOwnTurnsRenderAsSampled: a reply with surrounding whitespace re-renders
// in its own agent's view exactly as sampled, so no prefix break occurs.
func TestOwnTurnsRenderAsSampled(t *testing.T) {
	pol := &bytePolicy{replies: map[string][]string{
		"A": {" I propose X. ", "fine"},
		"B": {"  counter  ", "ok"},
	}, calls: map[string]int{}}
	agents := rollout.NewRecorder(rollout.RecorderOptions{Policy: pol, Model: "m", Sampling: llm.Sampling{MaxTokens: 64}})
	rec := &dataset.Rollout{}
	if err := deliberation.New(deliberation.Options{MaxRounds: 2}).Play(context.Background(), prompt, agents, rec); err != nil {
		t.Fatal(err)
	}
	if agents.PrefixBreaks != 0 {
		t.Errorf("PrefixBreaks = %d, want 0", agents.PrefixBreaks)
	}
	if rec.Turns[0].Text != "I propose X." {
		t.Errorf("visible text = %q, want it trimmed", rec.Turns[0].Text)
	}
}

func TestTrimEndTokens(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{" hi <|im_end|>", " hi "},
		{"x<|im_end|><|endoftext|>", "x"},
		{" plain ", " plain "},
	} {
		if got := rollout.TrimEndTokens(tc.in); got != tc.want {
			t.Errorf("rollout.TrimEndTokens(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
