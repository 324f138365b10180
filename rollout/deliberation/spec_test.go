package deliberation

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/rollout"
)

// TestConfigValidate: the section's checks name their keys.
func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want []string // substrings of the error; nil: valid
	}{
		{"defaults", *DefaultConfig(), nil},
		{"one round, a bare word", Config{MaxRounds: 1, AgreementMarker: "agree"}, nil},
		{"a hundred rounds", Config{MaxRounds: 100, AgreementMarker: "[AGREE]"}, nil},
		{"no rounds", Config{MaxRounds: 0, AgreementMarker: "[AGREE]"}, []string{"key max_rounds: must be in [1, 100], got 0"}},
		{"too many rounds", Config{MaxRounds: 101, AgreementMarker: "[AGREE]"}, []string{"key max_rounds", "got 101"}},
		{"a blank marker", Config{MaxRounds: 5, AgreementMarker: " \t"}, []string{"key agreement_marker: must not be empty"}},
		{"both", Config{}, []string{"key max_rounds", "key agreement_marker"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.want == nil {
				if err != nil {
					t.Errorf("Validate(%+v) = %v, want nil", tt.cfg, err)
				}
				return
			}
			for _, w := range tt.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("Validate(%+v) = %v, want an error containing %q", tt.cfg, err, w)
				}
			}
		})
	}
}

// TestRegisteredSection: the registry builds the game from its section
// (typed, through rollout.Definition) and the shared token bounds; the
// defaults when it is given none; and refuses another game's section.
func TestRegisteredSection(t *testing.T) {
	spec, ok := rollout.Lookup(Name)
	if !ok {
		t.Fatal("the deliberation game is not registered")
	}
	if c, ok := spec.Config().(*Config); !ok || *c != *DefaultConfig() {
		t.Errorf("Config() = %#v, want the defaults", spec.Config())
	}
	shared := rollout.Shared{TurnTokens: 64, FinalTokens: 256}
	tests := []struct {
		name    string
		section any
		want    Options
	}{
		{"defaults", nil, Options{MaxRounds: 5, Marker: "[AGREE]", TurnTokens: 64, FinalTokens: 256}},
		{"configured", &Config{MaxRounds: 2, AgreementMarker: "agree"}, Options{MaxRounds: 2, Marker: "agree", TurnTokens: 64, FinalTokens: 256}},
	}
	for _, tt := range tests {
		g, err := rollout.NewGame(Name, tt.section, shared)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got := g.(*Game).opts; got != tt.want {
			t.Errorf("%s: options %+v, want %+v", tt.name, got, tt.want)
		}
	}
	type otherSection struct{ MaxRounds int }
	if _, err := rollout.NewGame(Name, &otherSection{MaxRounds: 2}, shared); err == nil || !strings.Contains(err.Error(), "want *deliberation.Config") {
		t.Errorf("NewGame with another type's section = %v, want an error naming *deliberation.Config", err)
	}
	if spec.Scorer != nil || spec.Series != nil {
		t.Error("the deliberation game registers a scorer or a series: it is judged by the run's judge and plays no series")
	}
	if !spec.Negotiates || spec.ZeroSum || spec.UsesJudge {
		t.Errorf("traits %+v: the game negotiates, is not zero-sum and consults no judge during play", spec.Traits)
	}
}

// TestNewDefaults: New fills a missing marker and round limit.
func TestNewDefaults(t *testing.T) {
	g := New(Options{})
	if g.opts.Marker != "[AGREE]" || g.opts.MaxRounds != 5 {
		t.Errorf("New(Options{}) options %+v, want marker [AGREE] and 5 rounds", g.opts)
	}
	if !g.marker.In("Fine. [AGREE]") {
		t.Error("the default marker does not match [AGREE]")
	}
}

// TestValidateRow: a row needs a task and both personas.
func TestValidateRow(t *testing.T) {
	both := dataset.PersonaPair{A: "a farmer", B: "a miller"}.Personas()
	tests := []struct {
		name string
		p    dataset.Prompt
		want string // "": valid
	}{
		{"whole", dataset.Prompt{ID: "p", Task: "share the well", Personas: both}, ""},
		{"no task", dataset.Prompt{ID: "p", Task: "  ", Personas: both}, "prompt p: empty task"},
		{"no personas", dataset.Prompt{ID: "p", Task: "share the well"}, "needs persona_a and persona_b"},
		{"one persona", dataset.Prompt{ID: "p", Task: "share the well", Personas: dataset.PersonaPair{A: "a farmer"}.Personas()}, "needs persona_a and persona_b"},
	}
	g := New(Options{})
	for _, tt := range tests {
		err := g.Validate(tt.p)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s: Validate = %v, want %q", tt.name, err, tt.want)
		}
	}
	if got := g.Roles(dataset.Prompt{}); strings.Join(got, ",") != "A,B,final" {
		t.Errorf("Roles = %v, want A, B, final", got)
	}
}

// transcript records every turn an agent is asked for: its role, the
// messages it saw and its options; it replies from turns in order, the
// final completion with "the solution".
type transcript struct {
	turns []string
	asked []asked
	fail  string // a role whose turn fails
}

type asked struct {
	role string
	msgs []llm.Message
	opts rollout.TurnOptions
}

func (tr *transcript) Turn(_ context.Context, role string, msgs []llm.Message, opts rollout.TurnOptions) (rollout.Reply, error) {
	tr.asked = append(tr.asked, asked{role, msgs, opts})
	if role == tr.fail {
		return rollout.Reply{}, errors.New("the server is gone")
	}
	if role == "final" {
		return rollout.Reply{Text: "the solution", Tokens: 3, FinishReason: "stop"}, nil
	}
	text := tr.turns[0]
	tr.turns = tr.turns[1:]
	return rollout.Reply{Text: text, Raw: text + " (as sampled)<|im_end|>", Tokens: 2, FinishReason: "stop"}, nil
}

// TestPlayViews checks what each agent is shown: its own system prompt
// (task, persona, objective, marker), A an opening, its own turns as
// sampled (less end-of-turn tokens) and the other's as user messages;
// the final completion sees the transcript and whether they agreed; each
// turn goes to the sequence kind and token bound of its role.
func TestPlayViews(t *testing.T) {
	p := dataset.Prompt{ID: "p", Task: "share the well", Personas: dataset.PersonaPair{A: "a farmer", B: "a miller"}.Personas()}
	g := New(Options{MaxRounds: 2, Marker: "[AGREE]", TurnTokens: 32, FinalTokens: 128})
	tr := &transcript{turns: []string{"half each", "no, by need", "by need then [AGREE]", "[AGREE]"}}
	var rec dataset.Rollout
	if err := g.Play(context.Background(), p, tr, &rec); err != nil {
		t.Fatal(err)
	}
	if !rec.Agreed || rec.Rounds != 2 || rec.Final != "the solution" || len(rec.Turns) != 5 {
		t.Fatalf("agreed %v in %d rounds, final %q, %d turns", rec.Agreed, rec.Rounds, rec.Final, len(rec.Turns))
	}
	if len(tr.asked) != 5 {
		t.Fatalf("%d turns asked, want 5", len(tr.asked))
	}
	first := tr.asked[0]
	sys := first.msgs[0].Content
	for _, want := range []string{"You are Agent A, negotiating with Agent B", "Task: share the well", "Your persona: a farmer", CollectiveAgency, "end your turn with [AGREE]"} {
		if !strings.Contains(sys, want) {
			t.Errorf("A's system prompt lacks %q:\n%s", want, sys)
		}
	}
	if len(first.msgs) != 2 || first.msgs[1] != (llm.Message{Role: "user", Content: Opening}) {
		t.Errorf("A's first view %+v, want its system prompt and the opening", first.msgs)
	}
	// B's first view: its system prompt and A's turn as a user message.
	if b := tr.asked[1]; b.role != "B" || len(b.msgs) != 2 || !strings.Contains(b.msgs[0].Content, "Your persona: a miller") || b.msgs[1] != (llm.Message{Role: "user", Content: "half each"}) {
		t.Errorf("B's first view %+v", b.msgs)
	}
	// A's second view: its own turn as sampled (not its visible text), less the end-of-turn token.
	a2 := tr.asked[2].msgs
	if len(a2) != 4 || a2[2] != (llm.Message{Role: "assistant", Content: "half each (as sampled)"}) || a2[3] != (llm.Message{Role: "user", Content: "no, by need"}) {
		t.Errorf("A's second view %+v", a2)
	}
	for i, a := range tr.asked[:4] {
		if a.opts != (rollout.TurnOptions{Kind: dataset.KindDialogue, MaxTokens: 32}) {
			t.Errorf("turn %d (%s): options %+v, want a dialogue turn of 32 tokens", i, a.role, a.opts)
		}
	}
	final := tr.asked[4]
	if final.role != "final" || final.opts != (rollout.TurnOptions{Kind: dataset.KindFinal, MaxTokens: 128}) {
		t.Errorf("final turn: role %s options %+v", final.role, final.opts)
	}
	user := final.msgs[1].Content
	for _, want := range []string{"Agent A: a farmer", "Agent B: a miller", "Agent A: half each", "Agent B: [AGREE]", "The agents reached agreement."} {
		if !strings.Contains(user, want) {
			t.Errorf("the final prompt lacks %q:\n%s", want, user)
		}
	}
	if last := rec.Turns[4]; last.Agent != "final" || last.Tokens != 3 || last.FinishReason != "stop" {
		t.Errorf("the final turn recorded %+v", last)
	}
}

// TestPlayNoAgreement: without agreement the final completion is asked to
// integrate both positions; a failed turn fails the game.
func TestPlayNoAgreement(t *testing.T) {
	p := dataset.Prompt{ID: "p", Task: "share the well", Personas: dataset.PersonaPair{A: "a farmer", B: "a miller"}.Personas()}
	g := New(Options{MaxRounds: 1})
	tr := &transcript{turns: []string{"mine", "mine"}}
	var rec dataset.Rollout
	if err := g.Play(context.Background(), p, tr, &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Agreed || rec.Rounds != 1 || !strings.Contains(tr.asked[2].msgs[1].Content, "did not reach agreement") {
		t.Errorf("agreed %v in %d rounds; final prompt %q", rec.Agreed, rec.Rounds, tr.asked[2].msgs[1].Content)
	}
	for _, role := range []string{"A", "final"} {
		tr := &transcript{turns: []string{"mine", "mine"}, fail: role}
		if err := g.Play(context.Background(), p, tr, &dataset.Rollout{}); err == nil || !strings.Contains(err.Error(), "the server is gone") {
			t.Errorf("a failed %s turn: Play = %v, want its error", role, err)
		}
	}
}
