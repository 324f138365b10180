package deliberation

import (
	"context"
	"testing"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/rollout"
)

// TestMarker checks that the agreement marker is matched as a token: the
// default "[AGREE]" wherever it stands, a bare word only as a whole word
// (the quickstart's "agree" used to count in "disagree" and "Iagree").
func TestMarker(t *testing.T) {
	for _, tc := range []struct {
		marker, text string
		want         bool
	}{
		{"[AGREE]", "I accept. [AGREE]", true},
		{"[AGREE]", "Deal.[AGREE]", true},
		{"[AGREE]", "fine[AGREE]ok", true},
		{"[AGREE]", "[agree]", true},
		{"[AGREE]", "I AGREE", false},
		{"[AGREE]", "[AGREED]", false},
		{"[AGREE]", "", false},
		{"agree", "agree", true},
		{"agree", "I agree.", true},
		{"agree", "Agree! Let us share it.", true},
		{"agree", "we both agree, agree", true},
		{"agree", "(agree)", true},
		{"agree", "agree_", true},
		{"agree", "disagree", false},
		{"agree", "I disagree with that.", false},
		{"agree", "Iagree", false},
		{"agree", "agreed", true},
		{"agree", "agreement", true},
		{"agree", "agreeveal", true},
		{"agree", "agree2", true},
		{"agree", "désagree", false},
		{"agree", "the plan, a.gree", false},
		{"[AGREE]", "disagree [AGREE", false},
	} {
		if got := NewMarker(tc.marker).In(tc.text); got != tc.want {
			t.Errorf("marker %q in %q: got %v, want %v", tc.marker, tc.text, got, tc.want)
		}
	}
}

// scripted plays A's and B's turns from a list, in order, and a fixed
// final completion.
type scripted struct{ turns []string }

func (s *scripted) Turn(_ context.Context, role string, _ []llm.Message, _ rollout.TurnOptions) (rollout.Reply, error) {
	if role == "final" || len(s.turns) == 0 {
		return rollout.Reply{Text: "the solution"}, nil
	}
	text := s.turns[0]
	s.turns = s.turns[1:]
	return rollout.Reply{Text: text, Raw: text}, nil
}

// TestPlayAgreement checks which dialogues end in agreement: two
// consecutive turns carrying the marker as a word, not as part of one.
func TestPlayAgreement(t *testing.T) {
	p := dataset.Prompt{ID: "p", Task: "share the well", Personas: dataset.PersonaPair{A: "a farmer", B: "a miller"}.Personas()}
	for _, tc := range []struct {
		name, marker string
		turns        []string
		agreed       bool
		rounds       int32
		agree        []bool // each dialogue turn's Agree
	}{
		{"bare word in round 1", "agree", []string{"I agree", "Agree."}, true, 1, []bool{true, true}},
		{"disagree is not agreement", "agree", []string{"I disagree", "we disagree", "disagree", "Iagree", "Disagree!", "x_agree"},
			false, 3, []bool{false, false, false, false, false, false}},
		{"disagree then agree", "agree", []string{"I disagree", "agree", "agree"}, true, 2, []bool{false, true, true}},
		{"default marker", "", []string{"Deal.[AGREE]", "Fine. [AGREE]"}, true, 1, []bool{true, true}},
		{"default marker, a word is not it", "", []string{"I agree", "agree", "agree", "agree", "agree", "agree"},
			false, 3, []bool{false, false, false, false, false, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := New(Options{MaxRounds: 3, Marker: tc.marker})
			var rec dataset.Rollout
			if err := g.Play(context.Background(), p, &scripted{turns: tc.turns}, &rec); err != nil {
				t.Fatal(err)
			}
			if rec.Agreed != tc.agreed || rec.Rounds != tc.rounds {
				t.Errorf("agreed %v in %d rounds, want %v in %d", rec.Agreed, rec.Rounds, tc.agreed, tc.rounds)
			}
			dialogue := rec.Turns[:len(rec.Turns)-1]
			if len(dialogue) != len(tc.agree) {
				t.Fatalf("%d dialogue turns, want %d", len(dialogue), len(tc.agree))
			}
			for i, turn := range dialogue {
				if turn.Agree != tc.agree[i] {
					t.Errorf("turn %d %q: agree %v, want %v", i, turn.Text, turn.Agree, tc.agree[i])
				}
			}
		})
	}
}
