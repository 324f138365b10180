package sim

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/parleyhq/parley/sim/scripted"
)

// fakeSpeaker speaks for prompts whose system message is its own, and
// records the model it was given.
type fakeSpeaker struct {
	system string
	models []scripted.Model
}

func (f *fakeSpeaker) Reply(string, []string, []string, *rand.Rand) (string, bool) {
	panic("sim asked a Speaker's Reply")
}

func (f *fakeSpeaker) Judge(string, string, bool) (string, bool) { return "", false }

func (f *fakeSpeaker) Speak(m scripted.Model, roles, contents []string, rng *rand.Rand) (string, []int32, bool) {
	if len(contents) == 0 || contents[0] != f.system {
		return "", nil, false
	}
	f.models = append(f.models, m)
	text := "spoken"
	return text, m.Encode(text), true
}

// TestReplyRouting: a Speaker among Options.Games is asked (with the model
// that answers, the served tokenizer and its disposition) instead of its
// Reply; a prompt it declines gets the scripted agent, exactly as from a
// server with no games.
func TestReplyRouting(t *testing.T) {
	sp := &fakeSpeaker{system: "SPEAK"}
	_, ts := startServer(t, Options{Games: []Answerer{sp}, AgreeProb: 0.2, AdapterAgreeProb: 0.7})
	_, plain := startServer(t, Options{})
	chat := func(url, model string, msgs []Message) string {
		var out chatResponse
		mustPost(t, url+PathChat, map[string]any{"model": model, "messages": msgs, "seed": 4}, &out)
		return out.Choices[0].Message.Content
	}
	if got := chat(ts.URL, DefaultModel, []Message{{Role: "system", Content: "SPEAK"}, {Role: "user", Content: "Go."}}); got != "spoken" {
		t.Errorf("the Speaker's prompt got %q, want its reply", got)
	}
	if got, want := chat(ts.URL, DefaultModel, gameMessages(2)), chat(plain.URL, DefaultModel, gameMessages(2)); got != want {
		t.Errorf("a prompt the Speaker declines got %q, want the scripted agent's %q", got, want)
	}
	if len(sp.models) != 1 || sp.models[0].Name != DefaultModel || sp.models[0].AgreeProb != 0.2 || sp.models[0].CABias != 0 ||
		!slices.Equal(sp.models[0].Encode("a b"), NewTokenizer().Encode("a b")) {
		t.Errorf("the Speaker was given %+v, want the base model with AgreeProb 0.2 and the served tokenizer", sp.models)
	}
}
