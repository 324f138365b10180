package scripted_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/parleyhq/parley/sim"
	"github.com/parleyhq/parley/sim/scripted"
)

const testSystem = "You are Agent A. Persona: Honor patient confidentiality above all. " +
	"Task: As a therapist, a client confesses to a serious crime for which another person is serving time."

// model is the base model on sim's built-in tokenizer.
func model() (scripted.Model, *sim.Tokenizer) {
	tok := sim.NewTokenizer()
	return scripted.Model{Name: sim.DefaultModel, Encode: tok.Encode, AgreeProb: 0.3}, tok
}

func TestRead(t *testing.T) {
	for _, tc := range []struct {
		name            string
		roles, contents []string
		want            scripted.Dialogue
	}{
		{"first turn: the task may sit in the first user message", []string{"system", "user"}, []string{"Sys.", "Task here."},
			scripted.Dialogue{Context: "Sys.\nTask here.", LastOther: "Task here."}},
		{"later turn: the system messages only", []string{"system", "user", "assistant", "user"}, []string{"Sys.", "Open.", "Mine.", "Yours."},
			scripted.Dialogue{Context: "Sys.\n", LastOther: "Yours.", OwnTurns: 1}},
		{"no system message", []string{"user"}, []string{"Plan a trip."}, scripted.Dialogue{Context: "Plan a trip.", LastOther: "Plan a trip."}},
		{"asked for the final solution", []string{"user"}, []string{"Write the FINAL Solution."},
			scripted.Dialogue{Context: "Write the FINAL Solution.", LastOther: "Write the FINAL Solution.", Final: true}},
	} {
		if got := scripted.Read(tc.roles, tc.contents); got != tc.want {
			t.Errorf("%s: Read = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// TestReplyShape: a turn is 20 to 80 tokens of the served tokenizer,
// decodes to its text, echoes the persona's keywords and never carries a
// game's agreement marker (agreeing is a game's protocol).
func TestReplyShape(t *testing.T) {
	m, tok := model()
	d := scripted.Read([]string{"system", "user", "assistant", "user"}, []string{testSystem, "Begin.", "Proposal.", "Fine. [AGREE]"})
	usesPersona := 0
	for seed := uint64(0); seed < 300; seed++ {
		text, toks := m.Reply(d, rand.New(rand.NewPCG(2, seed)))
		if n := len(toks); n < 20 || n > 80 {
			t.Errorf("seed %d: reply has %d tokens, want 20..80: %q", seed, n, text)
		}
		if got := tok.Decode(toks); got != text {
			t.Fatalf("seed %d: Decode(tokens) = %q, want the reply text %q", seed, got, text)
		}
		if strings.Contains(text, "[AGREE]") {
			t.Errorf("seed %d: reply carries [AGREE]: %q", seed, text)
		}
		for _, k := range []string{"honor", "patient", "confidentiality", "therapist", "client", "confesses", "serious", "crime", "person", "serving"} {
			if strings.Contains(text, k) {
				usesPersona++
				break
			}
		}
	}
	if usesPersona < 250 {
		t.Errorf("only %d of 300 replies use a persona/task keyword", usesPersona)
	}
}

// TestTurnAccept: a turn given accepting templates closes with one, its
// slots filled.
func TestTurnAccept(t *testing.T) {
	m, _ := model()
	d := scripted.Read([]string{"system", "user"}, []string{testSystem, "Begin."})
	for seed := uint64(0); seed < 50; seed++ {
		text, _ := m.Turn(d, []string{"Deal on {k}. <OK>"}, rand.New(rand.NewPCG(6, seed)))
		if !strings.HasSuffix(text, "<OK>") || strings.Contains(text, "{k}") {
			t.Errorf("seed %d: accepting turn %q, want it to end with the filled template", seed, text)
		}
	}
}

func TestFinal(t *testing.T) {
	m, _ := model()
	d := scripted.Read([]string{"system", "user"}, []string{testSystem, "Now write the FINAL Solution to the task."})
	for seed := uint64(0); seed < 50; seed++ {
		text, toks := m.Reply(d, rand.New(rand.NewPCG(3, seed)))
		if len(toks) < 30 || len(toks) > 120 {
			t.Errorf("seed %d: final solution has %d tokens, want 30..120: %q", seed, len(toks), text)
		}
	}
}

// TestCABias: an adapter's final solutions (CABias) and a game's bonus
// (extraCA) score higher with the simulated judge than the base model's.
func TestCABias(t *testing.T) {
	base, _ := model()
	adapter := base
	adapter.CABias = 0.25
	d := scripted.Read([]string{"system", "user"}, []string{testSystem, "Write the final solution."})
	var scoreBase, scoreAdapter, scoreBonus int
	for seed := uint64(0); seed < 300; seed++ {
		text, _ := base.Final(d, 0, rand.New(rand.NewPCG(5, seed)))
		scoreBase += sim.CAScore(text)
		text, _ = adapter.Final(d, 0, rand.New(rand.NewPCG(5, seed)))
		scoreAdapter += sim.CAScore(text)
		text, _ = base.Final(d, 0.25, rand.New(rand.NewPCG(5, seed)))
		scoreBonus += sim.CAScore(text)
	}
	if scoreAdapter <= scoreBase || scoreBonus <= scoreBase {
		t.Errorf("total CA score over 300 finals: base %d, adapter %d, base with a bonus %d; want the last two higher", scoreBase, scoreAdapter, scoreBonus)
	}
}

func TestThink(t *testing.T) {
	d := scripted.Read([]string{"system", "user"}, []string{testSystem, "Begin."})
	got := scripted.Think(d, rand.New(rand.NewPCG(1, 1)))
	if !strings.HasPrefix(got, "<think>\n") || !strings.HasSuffix(got, "\n</think>\n\n") || strings.Contains(got, "{") {
		t.Errorf("Think = %q, want a filled <think> block", got)
	}
}
