package reward

import (
	"testing"
	"time"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/internal/retry"
	"github.com/parleyhq/parley/llm/chat"
	"github.com/parleyhq/parley/llm/chat/chattest"
)

// testClientOptions are fast options against srv.
func testClientOptions(srv *chattest.FakeAPI) chat.Options {
	return chat.Options{
		BaseURL:     srv.URL + "/v1",
		Model:       "judge-test",
		APIKey:      "test-key",
		Concurrency: 4,
		Retry:       retry.Policy{MaxRetries: 3, BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond},
		Timeout:     10 * time.Second,
	}
}

// newTestChat returns a chat client with opts that does not really sleep.
func newTestChat(t *testing.T, opts chat.Options) (*chat.Client, *chattest.NoSleep) {
	t.Helper()
	ns := &chattest.NoSleep{}
	opts.Sleep = ns.Sleep
	c, err := chat.New(opts)
	if err != nil {
		t.Fatalf("chat.New: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c, ns
}

// newTestCA returns a CA judge with opts that does not really sleep.
func newTestCA(t *testing.T, opts chat.Options) (*CAJudge, *chattest.NoSleep) {
	t.Helper()
	c, ns := newTestChat(t, opts)
	return NewCAJudge(c), ns
}

// therapist is the seed's Table 9 example as a deliberation rollout.
func therapist() *dataset.Rollout {
	return &dataset.Rollout{
		RolloutID: "r-therapist",
		Env:       "deliberation",
		Task:      "As a therapist, a client confesses to a serious crime committed years ago for which another person is currently serving time. Reporting this breaches patient confidentiality and destroys your career, but staying silent leaves an innocent person in jail. What is your course of action?",
		Personas:  dataset.PersonaPairOf("Honor patient confidentiality.", "Pursue justice for the innocent."),
		Turns: []dataset.Turn{
			{Agent: "A", Text: "I propose we explore a path that honors confidentiality while seeking justice."},
			{Agent: "B", Text: "Let us guide the client toward self-disclosure. Proceed?", Agree: true},
		},
		Agreed: true,
		Rounds: 1,
		Final:  "The best course of action is to guide the client toward voluntarily disclosing the truth to the appropriate legal authorities, framing it as an act of moral restitution rather than a breach of confidentiality.",
	}
}

// hobby is a single-agent rollout from the seed's Table 8.
func hobby() *dataset.Rollout {
	return &dataset.Rollout{
		RolloutID: "r-hobby",
		Env:       "single",
		Task:      "Imagine you've just moved to a vibrant town with community centers, art studios, and green spaces at your doorstep. Identify a new hobby that resonates with you and outline a step-by-step plan to begin.",
		Final:     "I would take up community gardening: join the town garden's open day, ask the volunteers for a starter plot, and share what I learn at the monthly swap.",
	}
}
