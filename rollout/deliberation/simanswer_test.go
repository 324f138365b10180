package deliberation

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/sim"
	voice "github.com/parleyhq/parley/sim/scripted"
)

// split returns a prompt's roles and contents.
func split(msgs []llm.Message) (roles, contents []string) {
	for _, m := range msgs {
		roles, contents = append(roles, m.Role), append(contents, m.Content)
	}
	return roles, contents
}

// testPrompts are the game's prompts for one row: A's first turn, A's
// second turn after B's reply other, and the final completion.
func testPrompts(other string) (first, later, final []llm.Message) {
	g := New(Options{})
	p := dataset.Prompt{ID: "p", Task: "As a therapist, a client confesses to a serious crime. What do you do?",
		Personas: dataset.PersonaPair{A: "Honor patient confidentiality above all.", B: "Justice for the innocent comes first."}.Personas()}
	sys := g.System(p, "A", "B")
	turns := []dataset.Turn{{Agent: "A", Text: "My proposal: protect the client."}, {Agent: "B", Text: other}}
	first = g.view(sys, "A", nil, nil)
	later = g.view(sys, "A", turns, []string{turns[0].Text, ""})
	final = g.finalPrompt(p, append(turns, dataset.Turn{Agent: "A", Text: "Fine. " + DefaultMarker}), true)
	return first, later, final
}

// TestSimRecognisesPrompts: the game's serve-sim answers claim its
// agents' and its final completion's prompts, and no other.
func TestSimRecognisesPrompts(t *testing.T) {
	first, later, final := testPrompts("I see it differently.")
	m := voice.Model{Encode: sim.NewTokenizer().Encode, AgreeProb: 0.3}
	s, err := NewSim(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		msgs []llm.Message
		want bool
	}{
		{"first turn", first, true},
		{"later turn", later, true},
		{"final completion", final, true},
		{"single-agent answer", []llm.Message{{Role: "system", Content: "You are a thoughtful assistant."}, {Role: "user", Content: "Plan a trip."}}, false},
		{"no system message", []llm.Message{{Role: "user", Content: first[0].Content}}, false},
		{"empty", nil, false},
	} {
		roles, contents := split(tc.msgs)
		rng := rand.New(rand.NewPCG(1, 2))
		_, _, ok := s.Speak(m, roles, contents, rng)
		if ok != tc.want {
			t.Errorf("%s: Speak ok = %v, want %v", tc.name, ok, tc.want)
		}
		if !ok && rng.Uint64() != rand.New(rand.NewPCG(1, 2)).Uint64() {
			t.Errorf("%s: a declining Speak drew from rng", tc.name)
		}
	}
	if _, err := NewSim(map[string]string{"agree_prob": "1"}); err == nil || !strings.Contains(err.Error(), "agree_prob") {
		t.Errorf("NewSim(agree_prob) = %v, want an error naming the option", err)
	}
}

// TestSimAgreement: an agent never agrees on its first turn, always when
// the other side's last turn did, else with the model's AgreeProb; a final
// solution carries no marker.
func TestSimAgreement(t *testing.T) {
	tok := sim.NewTokenizer()
	first, later, final := testPrompts("I see it differently.")
	_, laterAgreed, _ := testPrompts("Fine. " + DefaultMarker)
	firstAgreed := append(first[:1:1], llm.Message{Role: "user", Content: "Agent B opens. " + DefaultMarker})
	s, _ := NewSim(nil)
	for _, tc := range []struct {
		name      string
		msgs      []llm.Message
		agreeProb float64
		want      string // "always", "never" or "some"
	}{
		{"first own turn never agrees, even when the other side did", firstAgreed, 1, "never"},
		{"agrees when the other side agreed", laterAgreed, 0, "always"},
		{"agree probability one", later, 1, "always"},
		{"agree probability zero", later, 0, "never"},
		{"agree probability 0.3", later, 0.3, "some"},
		{"the final solution", final, 1, "never"},
	} {
		roles, contents := split(tc.msgs)
		m := voice.Model{Encode: tok.Encode, AgreeProb: tc.agreeProb}
		agreed := 0
		const runs = 200
		for seed := uint64(0); seed < runs; seed++ {
			text, toks, ok := s.Speak(m, roles, contents, rand.New(rand.NewPCG(1, seed)))
			if !ok {
				t.Fatalf("%s: Speak declined", tc.name)
			}
			if tok.Decode(toks) != text {
				t.Fatalf("%s: tokens decode to %q, want %q", tc.name, tok.Decode(toks), text)
			}
			if strings.Contains(text, DefaultMarker) {
				agreed++
			}
		}
		ok := false
		switch tc.want {
		case "always":
			ok = agreed == runs
		case "never":
			ok = agreed == 0
		case "some":
			ok = agreed > runs/10 && agreed < runs/2
		}
		if !ok {
			t.Errorf("%s: agreed in %d of %d replies, want %s", tc.name, agreed, runs, tc.want)
		}
	}
}

// TestSimAdapterAgreesMore: an adapter (higher AgreeProb, CABias) agrees
// more often than the base model, so evaluation can tell them apart.
func TestSimAdapterAgreesMore(t *testing.T) {
	tok := sim.NewTokenizer()
	_, later, _ := testPrompts("Counter-proposal.")
	roles, contents := split(later)
	base := voice.Model{Encode: tok.Encode, AgreeProb: 0.3}
	adapter := voice.Model{Encode: tok.Encode, AgreeProb: 0.6, CABias: 0.25}
	s, _ := NewSim(nil)
	var agreeBase, agreeAdapter int
	for seed := uint64(0); seed < 300; seed++ {
		if text, _, _ := s.Speak(base, roles, contents, rand.New(rand.NewPCG(4, seed))); strings.Contains(text, DefaultMarker) {
			agreeBase++
		}
		if text, _, _ := s.Speak(adapter, roles, contents, rand.New(rand.NewPCG(4, seed))); strings.Contains(text, DefaultMarker) {
			agreeAdapter++
		}
	}
	if agreeAdapter <= agreeBase {
		t.Errorf("agreements: adapter %d, base %d of 300; want the adapter to agree more", agreeAdapter, agreeBase)
	}
}
