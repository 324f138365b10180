package rollout_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/rollout"
	"github.com/parleyhq/parley/rollout/deliberation"
	"github.com/parleyhq/parley/rollout/single"
)

// bytePolicy is an in-memory policy over a byte tokenizer with one special
// token, eotID for "<|im_end|>": each message renders as
// "<role>content<|im_end|>\n" and the generation prompt as "<assistant>".
// Replies are scripted per role and end, as vLLM's do, with the sampled
// <|im_end|> and no newline. dropHistory makes renderings drop earlier
// assistant turns, as a template that strips reasoning would, to force
// prefix breaks (and so cannot render bridges either); emptyThink ends the
// generation prompt with "<think></think>", which assistant messages never
// render, as Qwen3's template does with thinking disabled; noGenPrompt
// ignores add_generation_prompt; truncate cuts every reply before its
// <|im_end|> (finish "length").
type bytePolicy struct {
	mu          sync.Mutex
	replies     map[string][]string // by the first message's content prefix
	calls       map[string]int
	dropHistory bool
	emptyThink  bool
	noGenPrompt bool
	truncate    bool
	failAfter   int // fail the n-th completion (1-based; 0 = never)
	completions int
	prompts     [][]int32 // every completion prompt
}

// eotID is bytePolicy's <|im_end|>.
const eotID = 1000

func render(msgs []llm.Message, gen bool, drop bool) []int32 {
	return renderThink(msgs, gen, drop, false)
}

func renderThink(msgs []llm.Message, gen, drop, emptyThink bool) []int32 {
	var out []int32
	for i, m := range msgs {
		if drop && m.Role == "assistant" && i < len(msgs)-1 {
			continue
		}
		out = append(out, bytesToIDs(fmt.Sprintf("<%s>%s<|im_end|>\n", m.Role, m.Content))...)
	}
	if gen {
		out = append(out, bytesToIDs("<assistant>")...)
		if emptyThink {
			out = append(out, bytesToIDs("<think></think>")...)
		}
	}
	return out
}

// bytesToIDs tokenizes s: "<|im_end|>" is eotID, every other byte itself.
func bytesToIDs(s string) []int32 {
	var out []int32
	for i := 0; i < len(s); i++ {
		if strings.HasPrefix(s[i:], "<|im_end|>") {
			out = append(out, eotID)
			i += len("<|im_end|>") - 1
			continue
		}
		out = append(out, int32(s[i]))
	}
	return out
}

func idsToString(ids []int32) string {
	var b strings.Builder
	for _, id := range ids {
		if id == eotID {
			b.WriteString("<|im_end|>")
			continue
		}
		b.WriteByte(byte(id))
	}
	return b.String()
}

func (p *bytePolicy) Tokenize(_ context.Context, req llm.TokenizeRequest) (llm.TokenizeResult, error) {
	t := renderThink(req.Messages, req.AddGenerationPrompt && !p.noGenPrompt, p.dropHistory, p.emptyThink)
	return llm.TokenizeResult{Tokens: t, Count: len(t), MaxModelLen: 1 << 20}, nil
}

func (p *bytePolicy) Complete(_ context.Context, req llm.CompletionRequest) ([]llm.Completion, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.completions++
	p.prompts = append(p.prompts, slices.Clone(req.Prompt))
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
	// the text, and the template's newline after it is not sampled.
	ids, finish := append(bytesToIDs(text), eotID), "stop"
	if p.truncate {
		ids, finish = ids[:len(ids)-1], "length"
	}
	lp := make([]float32, len(ids))
	for i := range lp {
		lp[i] = -0.25
	}
	return []llm.Completion{{TokenIDs: ids, Logprobs: lp, Text: text, FinishReason: finish}}, nil
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
	for _, h := range []rollout.HistoryMode{rollout.HistoryTokens, rollout.HistoryRerender} {
		t.Run(string(h), func(t *testing.T) {
			pol := &bytePolicy{replies: map[string][]string{
				"A": {"I propose X.", "Fine. [AGREE]"},
				"B": {"I propose Y. [AGREE]", "unused"},
			}, calls: map[string]int{}}
			g := deliberation.New(deliberation.Options{MaxRounds: 5})
			rec := &dataset.Rollout{}
			agents := rollout.NewRecorder(rollout.RecorderOptions{Policy: pol, Model: "m", Sampling: llm.Sampling{MaxTokens: 64}, Seed: 1, History: h})
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
			// Each role's system prompt is recorded once, in speaking order.
			sys := agents.SystemPrompts()
			roles := make([]string, len(sys))
			for i, s := range sys {
				roles[i] = s.Role
			}
			if !slices.Equal(roles, []string{"A", "B", "final"}) || sys[0].Text != g.System(prompt, "A", "B") ||
				!strings.Contains(sys[2].Text, "final solution") {
				t.Errorf("SystemPrompts() = %+v, want A's, B's and the final's", sys)
			}
			want := map[string]string{"A": dataset.KindDialogue, "B": dataset.KindDialogue, "final": dataset.KindFinal}
			for _, s := range seqs {
				if s.Kind != want[s.Role] {
					t.Errorf("sequence %s kind = %s, want %s", s.Role, s.Kind, want[s.Role])
				}
				checkSequence(t, s)
			}
			// Agent A's sequence is exactly the rendering of its whole
			// conversation (this template re-renders as an extension), with
			// its two replies, <|im_end|> included, masked.
			a := seqs[0]
			wantA := render([]llm.Message{{Role: "system", Content: deliberation.New(deliberation.Options{}).System(prompt, "A", "B")},
				{Role: "user", Content: deliberation.Opening}, {Role: "assistant", Content: "I propose X."}, {Role: "user", Content: "I propose Y. [AGREE]"}}, true, false)
			wantA = append(wantA, bytesToIDs("Fine. [AGREE]<|im_end|>")...)
			if !slices.Equal(a.InputIDs, wantA) {
				t.Errorf("A's sequence = %q\nwant        %q", idsToString(a.InputIDs), idsToString(wantA))
			}
			var masked []int32
			for i, m := range a.LossMask {
				if m == 1 {
					masked = append(masked, a.InputIDs[i])
				}
			}
			if got := idsToString(masked); got != "I propose X.<|im_end|>Fine. [AGREE]<|im_end|>" {
				t.Errorf("A's masked tokens = %q", got)
			}
			if agents.PrefixBreaks != 0 || agents.ClosedTurns != 0 {
				t.Errorf("PrefixBreaks, ClosedTurns = %d, %d; want 0, 0", agents.PrefixBreaks, agents.ClosedTurns)
			}
		})
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

// TestPrefixBreaks: with a template whose generation prompt holds what
// rendered assistant turns lack (Qwen3's empty think block), rerender breaks
// the prefix at every later turn of each agent and starts a new sequence;
// tokens never renders a turn again and keeps one sequence per agent.
func TestPrefixBreaks(t *testing.T) {
	for _, tc := range []struct {
		h             rollout.HistoryMode
		breaks, seqs  int
		promptsExtend bool
	}{
		{rollout.HistoryRerender, 2, 5, false}, // A, B, A', B', final
		{rollout.HistoryTokens, 0, 3, true},
	} {
		pol := &bytePolicy{calls: map[string]int{}, emptyThink: true}
		g := deliberation.New(deliberation.Options{MaxRounds: 2})
		rec := &dataset.Rollout{}
		agents := rollout.NewRecorder(rollout.RecorderOptions{Policy: pol, Model: "m", Sampling: llm.Sampling{MaxTokens: 64}, History: tc.h})
		if err := g.Play(context.Background(), prompt, agents, rec); err != nil {
			t.Fatal(err)
		}
		if agents.PrefixBreaks != tc.breaks || len(agents.Sequences()) != tc.seqs {
			t.Errorf("%s: PrefixBreaks = %d, sequences = %d; want %d, %d", tc.h, agents.PrefixBreaks, len(agents.Sequences()), tc.breaks, tc.seqs)
		}
		for _, s := range agents.Sequences() {
			checkSequence(t, s)
		}
		// A's second prompt extends its first prompt and reply in tokens mode.
		first, second := pol.prompts[0], pol.prompts[2]
		extends := len(second) >= len(first) && slices.Equal(second[:len(first)], first)
		if extends != tc.promptsExtend {
			t.Errorf("%s: A's second prompt extends its first: %v, want %v", tc.h, extends, tc.promptsExtend)
		}
	}
}

// TestTokensBridge follows one agent's sequence in tokens mode turn by
// turn: the newline the template writes after <|im_end|> comes under mask
// 0 right after the sampled <|im_end|>, then only the new message and the
// generation prompt.
func TestTokensBridge(t *testing.T) {
	pol := &bytePolicy{calls: map[string]int{}, replies: map[string][]string{"A": {"one", "two"}}}
	agents := rollout.NewRecorder(rollout.RecorderOptions{Policy: pol, Model: "m", Sampling: llm.Sampling{MaxTokens: 64}})
	sys := llm.Message{Role: "system", Content: "You are Agent A"}
	view := []llm.Message{sys, {Role: "user", Content: "u1"}}
	if _, err := agents.Turn(context.Background(), "A", view, rollout.TurnOptions{}); err != nil {
		t.Fatal(err)
	}
	view = append(view, llm.Message{Role: "assistant", Content: "one"}, llm.Message{Role: "user", Content: "u2"})
	if _, err := agents.Turn(context.Background(), "A", view, rollout.TurnOptions{}); err != nil {
		t.Fatal(err)
	}
	s := agents.Sequences()[0]
	var got strings.Builder
	for i, id := range s.InputIDs {
		if i > 0 && s.LossMask[i] != s.LossMask[i-1] {
			got.WriteString("|")
		}
		got.WriteString(idsToString([]int32{id}))
	}
	want := "<system>You are Agent A<|im_end|>\n<user>u1<|im_end|>\n<assistant>|one<|im_end|>|\n<user>u2<|im_end|>\n<assistant>|two<|im_end|>"
	if got.String() != want {
		t.Errorf("sequence by mask runs = %q\nwant                    %q", got.String(), want)
	}
	if agents.Requests != 4 || agents.PromptTokensSent != len(pol.prompts[0])+len(pol.prompts[1]) {
		t.Errorf("Requests, PromptTokensSent = %d, %d", agents.Requests, agents.PromptTokensSent)
	}
}

// TestTokensTruncatedTurn: a turn cut before its <|im_end|> is closed with
// one under mask 0 (counted), and the agent keeps one sequence.
func TestTokensTruncatedTurn(t *testing.T) {
	pol := &bytePolicy{calls: map[string]int{}, truncate: true}
	agents := rollout.NewRecorder(rollout.RecorderOptions{Policy: pol, Model: "m", Sampling: llm.Sampling{MaxTokens: 64}})
	rec := &dataset.Rollout{}
	if err := deliberation.New(deliberation.Options{MaxRounds: 3}).Play(context.Background(), prompt, agents, rec); err != nil {
		t.Fatal(err)
	}
	// A and B each close two of their three turns; the last turns and the
	// final are never followed by another turn of theirs.
	if agents.ClosedTurns != 4 || agents.PrefixBreaks != 0 || len(agents.Sequences()) != 3 {
		t.Errorf("ClosedTurns, PrefixBreaks, sequences = %d, %d, %d; want 4, 0, 3", agents.ClosedTurns, agents.PrefixBreaks, len(agents.Sequences()))
	}
	a := agents.Sequences()[0]
	closings := 0
	for i, id := range a.InputIDs {
		if id != eotID {
			continue
		}
		if a.LossMask[i] != 0 {
			t.Errorf("A's <|im_end|> at %d is under mask 1: the policy never sampled one", i)
		}
		if a.LossMask[i-1] == 1 {
			closings++
			if a.InputIDs[i+1] != '\n' || a.LossMask[i+1] != 0 {
				t.Errorf("A's closing <|im_end|> at %d is not followed by the template's newline under mask 0", i)
			}
		}
	}
	if closings != 2 {
		t.Errorf("A's sequence closes %d turns by hand, want 2", closings)
	}
}

// TestTokensHistoryRewritten: a view that does not grow by appending (the
// game rewrote a message, or the agent's reply is not its last turn) is a
// prefix break: a new sequence, counted.
func TestTokensHistoryRewritten(t *testing.T) {
	sys := llm.Message{Role: "system", Content: "You are Agent A"}
	for _, tc := range []struct {
		name   string
		second []llm.Message
		breaks int
	}{
		{"appended", []llm.Message{sys, {Role: "user", Content: "u1"}, {Role: "assistant", Content: "A turn 0"}, {Role: "user", Content: "u2"}}, 0},
		{"reply with reasoning is the same turn", []llm.Message{sys, {Role: "user", Content: "u1"}, {Role: "assistant", Content: "<think>\nwhy\n</think>\n\nA turn 0"}, {Role: "user", Content: "u2"}}, 0},
		{"earlier message rewritten", []llm.Message{sys, {Role: "user", Content: "u1, edited"}, {Role: "assistant", Content: "A turn 0"}, {Role: "user", Content: "u2"}}, 1},
		{"reply rewritten", []llm.Message{sys, {Role: "user", Content: "u1"}, {Role: "assistant", Content: "a summary"}, {Role: "user", Content: "u2"}}, 1},
		{"reply left out", []llm.Message{sys, {Role: "user", Content: "u1"}, {Role: "user", Content: "u2"}}, 1},
		{"view shrank", []llm.Message{sys}, 1},
	} {
		pol := &bytePolicy{calls: map[string]int{}}
		agents := rollout.NewRecorder(rollout.RecorderOptions{Policy: pol, Model: "m", Sampling: llm.Sampling{MaxTokens: 64}})
		if _, err := agents.Turn(context.Background(), "A", []llm.Message{sys, {Role: "user", Content: "u1"}}, rollout.TurnOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := agents.Turn(context.Background(), "A", tc.second, rollout.TurnOptions{}); err != nil {
			t.Fatal(err)
		}
		if agents.PrefixBreaks != tc.breaks || len(agents.Sequences()) != 1+tc.breaks {
			t.Errorf("%s: PrefixBreaks = %d, sequences = %d; want %d, %d", tc.name, agents.PrefixBreaks, len(agents.Sequences()), tc.breaks, 1+tc.breaks)
		}
		for _, s := range agents.Sequences() {
			checkSequence(t, s)
		}
	}
}

// refusingPolicy fails every rendering that starts with an assistant
// message (the bridge's dummy) with err.
type refusingPolicy struct {
	*bytePolicy
	err error
}

func (p refusingPolicy) Tokenize(ctx context.Context, req llm.TokenizeRequest) (llm.TokenizeResult, error) {
	if req.Messages[0].Role == "assistant" {
		return llm.TokenizeResult{}, p.err
	}
	return p.bytePolicy.Tokenize(ctx, req)
}

// TestTokensTemplateRefusesDummy: a template that raises on the dummy
// conversation (vLLM's 400) is rollout.ErrBridge; a server error while learning
// the template is not blamed on the template.
func TestTokensTemplateRefusesDummy(t *testing.T) {
	for _, tc := range []struct {
		status     int
		wantBridge bool
	}{{400, true}, {503, false}} {
		apiErr := &llm.APIError{Endpoint: "http://vllm", Path: "/tokenize", Status: tc.status, Message: "jinja2.exceptions.TemplateError: Conversation roles must alternate user/assistant"}
		agents := rollout.NewRecorder(rollout.RecorderOptions{Policy: refusingPolicy{&bytePolicy{calls: map[string]int{}}, apiErr}, Model: "m", Sampling: llm.Sampling{MaxTokens: 8}})
		_, err := agents.Turn(context.Background(), "A", []llm.Message{{Role: "user", Content: "u"}}, rollout.TurnOptions{})
		if errors.Is(err, rollout.ErrBridge) != tc.wantBridge || !errors.Is(err, apiErr) {
			t.Errorf("HTTP %d: first turn = %v; want rollout.ErrBridge %v, wrapping the server's answer", tc.status, err, tc.wantBridge)
		}
	}
}

// TestTokensBadTemplate: a template that cannot render the bridge is named
// at the first turn, with the fix.
func TestTokensBadTemplate(t *testing.T) {
	for _, tc := range []struct {
		name string
		pol  *bytePolicy
		want string
	}{
		{"no generation prompt", &bytePolicy{calls: map[string]int{}, noGenPrompt: true}, "no generation prompt"},
		{"earlier turns re-rendered differently", &bytePolicy{calls: map[string]int{}, dropHistory: true}, "renders differently"},
	} {
		agents := rollout.NewRecorder(rollout.RecorderOptions{Policy: tc.pol, Model: "m", Sampling: llm.Sampling{MaxTokens: 64}})
		_, err := agents.Turn(context.Background(), "A", []llm.Message{{Role: "user", Content: "u"}}, rollout.TurnOptions{})
		if !errors.Is(err, rollout.ErrBridge) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "rollout.history: rerender") {
			t.Errorf("%s: first turn = %v, want rollout.ErrBridge saying %q and the fix", tc.name, err, tc.want)
		}
		if tc.pol.completions != 0 {
			t.Errorf("%s: %d completions sampled before the error", tc.name, tc.pol.completions)
		}
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
		{"a <think>x</think> b <think>y</think> c<|im_end|>", "a  b  c"},
		{"<|endoftext|>one</s> two<|eot_id|>", "one two"},
		{"less < than, <b>bold</b>", "less < than, <b>bold</b>"},
		{"x</think>y<think>z", "x</think>y"},
		{"", ""},
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

func TestRunnerOnActiveCountsInFlight(t *testing.T) {
	pol := &bytePolicy{calls: map[string]int{}, failAfter: 3}
	var mu sync.Mutex
	active, peak, starts := 0, 0, 0
	r, err := rollout.NewRunner(rollout.RunnerOptions{Game: single.New(single.Options{}), Policy: pol, Model: "m", GroupSize: 4, Concurrency: 3,
		Sampling: llm.Sampling{MaxTokens: 8},
		OnActive: func(d int) {
			mu.Lock()
			defer mu.Unlock()
			active += d
			peak = max(peak, active)
			if d > 0 {
				starts++
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(context.Background(), []dataset.Prompt{prompt, {ID: "d2", Task: "t2"}}, func(*dataset.Rollout) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if active != 0 || starts != 8 || peak < 1 || peak > 3 {
		t.Errorf("after the run: active %d, starts %d, peak %d; want 0, 8 (a failed one too), 1..3", active, starts, peak)
	}
}
