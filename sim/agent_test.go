package sim

import (
	"math/rand/v2"
	"strings"
	"testing"
)

const testSystem = "You are Agent A. Persona: Honor patient confidentiality above all. " +
	"Task: As a therapist, a client confesses to a serious crime for which another person is serving time. " +
	"End a turn with [AGREE] to accept the standing proposal."

func stateOf(t *testing.T, msgs []Message) dialogueState {
	t.Helper()
	tok := NewTokenizer()
	return readDialogue(tok.parsePrompt(tok.ApplyChatTemplate(msgs, TemplateOptions{AddGenerationPrompt: true})))
}

func TestAgentAgreement(t *testing.T) {
	tok := NewTokenizer()
	first := []Message{{Role: "system", Content: testSystem}, {Role: "user", Content: "Agent B opens: justice for the innocent comes first. [AGREE]"}}
	later := append(first[:2:2], Message{Role: "assistant", Content: "My proposal: protect the client."}, Message{Role: "user", Content: "Agent B: I see it differently."})
	laterAgreed := append(first[:2:2], Message{Role: "assistant", Content: "My proposal: protect the client."}, Message{Role: "user", Content: "Agent B: fine. [AGREE]"})
	tests := []struct {
		name      string
		msgs      []Message
		agreeProb float64
		want      string // "always", "never" or "some"
	}{
		{"first own turn never agrees, even when the other side did", first, 1, "never"},
		{"agrees when the other side agreed", laterAgreed, 0, "always"},
		{"agree probability one", later, 1, "always"},
		{"agree probability zero", later, 0, "never"},
		{"agree probability 0.3", later, 0.3, "some"},
	}
	for _, tt := range tests {
		st := stateOf(t, tt.msgs)
		agreed := 0
		const runs = 200
		for seed := uint64(0); seed < runs; seed++ {
			text, _ := tok.agentReply(st, agentProfile{agreeProb: tt.agreeProb}, rand.New(rand.NewPCG(1, seed)))
			if strings.Contains(text, AgreeMarker) {
				agreed++
			}
		}
		ok := false
		switch tt.want {
		case "always":
			ok = agreed == runs
		case "never":
			ok = agreed == 0
		case "some":
			ok = agreed > runs/10 && agreed < runs/2
		}
		if !ok {
			t.Errorf("%s: agreed in %d of %d replies, want %s", tt.name, agreed, runs, tt.want)
		}
	}
}

func TestAgentReplyShape(t *testing.T) {
	tok := NewTokenizer()
	st := stateOf(t, []Message{{Role: "system", Content: testSystem}, {Role: "user", Content: "Begin."}})
	kws := keywords(st.context, 24)
	usesPersona := 0
	for seed := uint64(0); seed < 300; seed++ {
		text, toks := tok.agentReply(st, agentProfile{agreeProb: 0.3}, rand.New(rand.NewPCG(2, seed)))
		if n := len(toks); n < minReplyTokens || n > maxReplyTokens {
			t.Errorf("seed %d: reply has %d tokens, want %d..%d: %q", seed, n, minReplyTokens, maxReplyTokens, text)
		}
		if got := tok.Decode(toks); got != text {
			t.Fatalf("seed %d: Decode(tokens) = %q, want the reply text %q", seed, got, text)
		}
		for _, k := range kws {
			if strings.Contains(text, k) {
				usesPersona++
				break
			}
		}
	}
	if usesPersona < 250 {
		t.Errorf("only %d of 300 replies use a persona/task keyword %q", usesPersona, kws)
	}
}

func TestAgentFinalSolution(t *testing.T) {
	tok := NewTokenizer()
	msgs := []Message{{Role: "system", Content: testSystem}, {Role: "user", Content: "Begin."}, {Role: "assistant", Content: "Proposal. [AGREE]"},
		{Role: "user", Content: "Agreed. [AGREE]\n\nNow write the FINAL Solution to the task."}}
	st := stateOf(t, msgs)
	if !st.final {
		t.Fatalf("readDialogue: final = false for %q, want true", msgs[3].Content)
	}
	for seed := uint64(0); seed < 50; seed++ {
		text, toks := tok.agentReply(st, agentProfile{agreeProb: 1}, rand.New(rand.NewPCG(3, seed)))
		if strings.Contains(text, AgreeMarker) {
			t.Errorf("seed %d: final solution contains %s: %q", seed, AgreeMarker, text)
		}
		if len(toks) < 30 || len(toks) > maxFinalTokens {
			t.Errorf("seed %d: final solution has %d tokens, want 30..%d", seed, len(toks), maxFinalTokens)
		}
	}
}

// TestAdapterShiftsBehaviour checks that an adapter agrees more often and
// scores higher with the judge than the base model, so evaluation can tell
// them apart.
func TestAdapterShiftsBehaviour(t *testing.T) {
	tok := NewTokenizer()
	later := stateOf(t, []Message{{Role: "system", Content: testSystem}, {Role: "user", Content: "Begin."}, {Role: "assistant", Content: "Proposal."}, {Role: "user", Content: "Counter-proposal."}})
	final := stateOf(t, []Message{{Role: "system", Content: testSystem}, {Role: "user", Content: "Write the final solution."}})
	base, adapter := agentProfile{agreeProb: 0.3}, agentProfile{agreeProb: 0.6, caBias: 0.25}
	var agreeBase, agreeAdapter, scoreBase, scoreAdapter int
	for seed := uint64(0); seed < 300; seed++ {
		if text, _ := tok.agentReply(later, base, rand.New(rand.NewPCG(4, seed))); strings.Contains(text, AgreeMarker) {
			agreeBase++
		}
		if text, _ := tok.agentReply(later, adapter, rand.New(rand.NewPCG(4, seed))); strings.Contains(text, AgreeMarker) {
			agreeAdapter++
		}
		text, _ := tok.agentReply(final, base, rand.New(rand.NewPCG(5, seed)))
		scoreBase += CAScore(text)
		text, _ = tok.agentReply(final, adapter, rand.New(rand.NewPCG(5, seed)))
		scoreAdapter += CAScore(text)
	}
	if agreeAdapter <= agreeBase {
		t.Errorf("agreements: adapter %d, base %d of 300; want the adapter to agree more", agreeAdapter, agreeBase)
	}
	if scoreAdapter <= scoreBase {
		t.Errorf("total CA score: adapter %d, base %d over 300 finals; want the adapter higher", scoreAdapter, scoreBase)
	}
}

func TestKeywords(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"Persona: Honor patient confidentiality. Honor it.", []string{"honor", "patient", "confidentiality"}},
		{"about which their would", nil},
		{"brief tiny ok", []string{"brief"}},
	}
	for _, tt := range tests {
		got := keywords(tt.in, 10)
		if strings.Join(got, ",") != strings.Join(tt.want, ",") {
			t.Errorf("keywords(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
