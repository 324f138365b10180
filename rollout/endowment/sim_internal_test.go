package endowment

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/parleyhq/parley/sim/scripted"
)

func TestRequesterReplyFraming(t *testing.T) {
	base := "You are the requester in a conversation about money.\n\nThe cause: Amina Yusuf, a 9-year-old girl, needs surgery.\n\n"
	for framing, want := range map[string]string{
		"Framing: write about one person. Name them.": "for Amina",
		"Framing: write about the group as a whole.":  "for them",
	} {
		st := scripted.Dialogue{Context: base + framing, OwnTurns: 1, LastOther: "No."}
		text, ok := endowmentReply(st, "req-p90", rand.New(rand.NewPCG(1, 2)))
		if !ok || !strings.Contains(text, want) || !strings.Contains(text, "$") {
			t.Errorf("framing %q: reply %q, want it to ask %q", framing, text, want)
		}
	}
	if _, ok := endowmentReply(scripted.Dialogue{Context: "You are Agent A."}, "x", rand.New(rand.NewPCG(1, 2))); ok {
		t.Error("a deliberation dialogue was taken for the endowment game")
	}
}
