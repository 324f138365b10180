package reward

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/parleyhq/parley/llm/chat"
	"github.com/parleyhq/parley/llm/chat/chattest"
)

// responseA returns the text shown as Response A in a pairwise prompt.
func responseA(user string) string {
	i := strings.Index(user, "<response_a>\n")
	j := strings.Index(user, "\n</response_a>")
	if i < 0 || j < i {
		return ""
	}
	return user[i+len("<response_a>\n") : j]
}

func TestPairwiseBothOrders(t *testing.T) {
	const good, bad = "GOOD: a plan that serves both sides.", "BAD: pick one side."
	tests := []struct {
		name      string
		verdict   func(a string) string // winner given Response A's text
		wantLeft  int
		wantRight int
		wantTies  int
		wantOut   float64
	}{
		{"left better", func(a string) string {
			if strings.HasPrefix(a, "GOOD") {
				return "A"
			}
			return "B"
		}, 2, 0, 0, 1},
		{"right better", func(a string) string {
			if strings.HasPrefix(a, "GOOD") {
				return "B"
			}
			return "A"
		}, 0, 2, 0, 0},
		{"position bias cancels", func(string) string { return "A" }, 1, 1, 0, 0.5},
		{"ties", func(string) string { return "tie" }, 0, 0, 2, 0.5},
		{"one win one tie", func(a string) string {
			if strings.HasPrefix(a, "GOOD") {
				return "A"
			}
			return "tie"
		}, 1, 0, 1, 0.75},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := chattest.NewFakeAPI(t, func(n int, w http.ResponseWriter, r *http.Request, req chattest.Body) {
				a := responseA(req.Messages[1].Content)
				chattest.WriteReply(w, `{"rationale":"A was `+a+`","winner":"`+tt.verdict(a)+`"}`)
			})
			c, _ := newTestChat(t, testClientOptions(srv))
			j, err := NewPairwiseJudge(c, AspectConflictResolution)
			if err != nil {
				t.Fatal(err)
			}
			tk := therapist()
			res, err := j.Compare(context.Background(), tk.Task, tk.Persona("A"), tk.Persona("B"), good, bad)
			if err != nil {
				t.Fatalf("Compare: %v", err)
			}
			if res.LeftWins != tt.wantLeft || res.RightWins != tt.wantRight || res.Ties != tt.wantTies || res.Outcome != tt.wantOut {
				t.Errorf("Compare = %d/%d/%d outcome %v, want %d/%d/%d outcome %v",
					res.LeftWins, res.RightWins, res.Ties, res.Outcome, tt.wantLeft, tt.wantRight, tt.wantTies, tt.wantOut)
			}
			if !strings.Contains(res.LeftFirstRationale, good) || !strings.Contains(res.RightFirstRationale, bad) {
				t.Errorf("rationales = %q / %q, want the left-first one to show left as A", res.LeftFirstRationale, res.RightFirstRationale)
			}
			if srv.Calls() != 2 {
				t.Fatalf("calls = %d, want 2 (both orders)", srv.Calls())
			}
			seenA := map[string]bool{}
			for i := 0; i < 2; i++ {
				var body chattest.Body
				mustUnmarshal(t, srv.Body(i), &body)
				if body.ResponseFormat == nil || body.ResponseFormat.JSONSchema.Name != PairwiseSchemaName || !body.ResponseFormat.JSONSchema.Strict {
					t.Errorf("response_format = %+v, want strict %s", body.ResponseFormat, PairwiseSchemaName)
				}
				if body.Temperature == nil || *body.Temperature != 0 {
					t.Errorf("temperature = %v, want 0", body.Temperature)
				}
				if !strings.Contains(body.Messages[0].Content, "Conflict resolution") {
					t.Errorf("system prompt lacks the aspect")
				}
				user := body.Messages[1].Content
				for _, want := range []string{tk.Task, tk.Persona("A"), tk.Persona("B"), good, bad} {
					if !strings.Contains(user, want) {
						t.Errorf("pairwise prompt lacks %q", want)
					}
				}
				seenA[responseA(user)] = true
			}
			if !seenA[good] || !seenA[bad] {
				t.Errorf("Response A texts = %v, want each response shown first once", seenA)
			}
		})
	}
}

func TestPairwiseCacheAndTokens(t *testing.T) {
	srv := chattest.NewFakeAPI(t, func(n int, w http.ResponseWriter, r *http.Request, req chattest.Body) {
		chattest.WriteReply(w, "Both are close, but Response A is better.\nWinner: A")
	})
	opts := testClientOptions(srv)
	opts.CacheDir = t.TempDir()
	c1, err := chat.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	j, err := NewPairwiseJudge(c1, "")
	if err != nil {
		t.Fatal(err)
	}
	res, err := j.Compare(context.Background(), "task", "", "", "left", "right")
	if err != nil {
		t.Fatal(err)
	}
	if res.Cached || res.PromptTokens != 200 || res.LeftWins != 1 || res.RightWins != 1 {
		t.Errorf("Compare = %+v, want fresh, 200 prompt tokens, 1/1", res)
	}
	c1.Close()
	c2, _ := newTestChat(t, opts)
	j2, err := NewPairwiseJudge(c2, "")
	if err != nil {
		t.Fatal(err)
	}
	res2, err := j2.Compare(context.Background(), "task", "", "", "left", "right")
	if err != nil {
		t.Fatal(err)
	}
	if !res2.Cached || res2.PromptTokens != 0 || res2.Outcome != res.Outcome || srv.Calls() != 2 {
		t.Errorf("cached Compare = %+v after %d calls, want cached, no tokens, same outcome, 2 calls", res2, srv.Calls())
	}
}

func TestPairwiseFailure(t *testing.T) {
	srv := chattest.NewFakeAPI(t, func(n int, w http.ResponseWriter, r *http.Request, req chattest.Body) {
		chattest.WriteReply(w, `{"rationale":"x","winner":"C+"}`)
	})
	c, _ := newTestChat(t, testClientOptions(srv))
	j, err := NewPairwiseJudge(c, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Compare(context.Background(), "task", "", "", "l", "r"); err == nil {
		t.Errorf("Compare(bad winner) = nil error, want error")
	}
}

func TestPairwiseUnknownAspect(t *testing.T) {
	c, _ := newTestChat(t, chat.Options{Model: "m"})
	if _, err := NewPairwiseJudge(c, "style"); err == nil {
		t.Errorf("NewPairwiseJudge(aspect style) = nil error, want error")
	}
}
