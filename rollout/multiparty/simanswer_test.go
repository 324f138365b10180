package multiparty_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/rollout/multiparty"
	"github.com/parleyhq/parley/rollout/multiparty/protocol"
	"github.com/parleyhq/parley/rollout/multiparty/scenario"
	"github.com/parleyhq/parley/rollout/multiparty/trust"
	"github.com/parleyhq/parley/sim"
)

// newSim is serve-sim answering the game's prompts (multiparty.Sim), with
// opts otherwise.
func newSim(t testing.TB, opts sim.Options) *sim.Server {
	t.Helper()
	opts.Games = []sim.Answerer{multiparty.Sim{}}
	s, err := sim.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// mustPost posts body as JSON, requires a 200 answer and decodes it into v.
func mustPost(t testing.TB, url string, body, v any) {
	t.Helper()
	buf, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(url, "application/json", bytes.NewReader(buf))
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s = %d %s (%v), want 200", url, resp.StatusCode, raw, err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("POST %s: decode %s: %v", url, raw, err)
	}
}

// TestSimParties: with the game's answers, serve-sim answers a prompt that
// is a party's of the five-party negotiation as that game's scripted
// party, on both the token-level completions and the chat API; other
// prompts still get the persona agents.
func TestSimParties(t *testing.T) {
	set, err := scenario.LoadSet(dataset.BuiltinPrefix + scenario.Type2HB2G)
	if err != nil {
		t.Fatal(err)
	}
	s := set[0]
	names := protocol.Names(5)
	sys := func(i int) string {
		return protocol.System(protocol.Setup{Self: names[i], Parties: names, Scenario: s, Party: s.Parties[i], MaxRounds: 10, VotesNeeded: 4,
			Trust: trust.Settings{Method: trust.MethodBRS, Condition: trust.CondNone}})
	}
	adv := 4 // the adversary is the last party of a generated scenario
	vote := protocol.RoundStart(1, 10) + "\n" + protocol.Proposed(names[0], "A1 B1 C1 D1 E1") + "\n\n" + protocol.VoteTurn(names[0], "A1 B1 C1 D1 E1", nil)
	srv := newSim(t, sim.Options{})
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	t.Cleanup(srv.Close)

	type chatResponse struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	var chat chatResponse
	mustPost(t, ts.URL+"/v1/chat/completions", map[string]any{"model": sim.DefaultModel, "seed": 1,
		"messages": []map[string]string{{"role": "system", "content": sys(adv)}, {"role": "user", "content": vote}}}, &chat)
	if got := chat.Choices[0].Message.Content; !strings.HasSuffix(got, "VOTE: NO") {
		t.Errorf("the adversary's chat reply %q, want a NO vote", got)
	}

	tok := sim.NewTokenizer()
	prompt := tok.ApplyChatTemplate([]sim.Message{{Role: "system", Content: sys(2)}, {Role: "user", Content: protocol.RoundStart(1, 10) + "\n" + protocol.ProposeTurn(1, s, nil)}},
		sim.TemplateOptions{AddGenerationPrompt: true})
	var comp struct {
		Choices []struct {
			Text string `json:"text"`
		} `json:"choices"`
	}
	mustPost(t, ts.URL+"/v1/completions", map[string]any{"model": sim.DefaultModel, "prompt": prompt, "max_tokens": 256, "seed": 3}, &comp)
	got := comp.Choices[0].Text
	pkg, err := protocol.ParseProposal(got, protocol.Shape{Issues: []string{"A", "B", "C", "D", "E"}, Options: []int{4, 4, 4, 4, 4}})
	if err != nil || s.Utility(2, pkg) < s.Parties[2].BATNA {
		t.Errorf("g1's proposal %q (%v): want a package meeting its BATNA %d", got, err, s.Parties[2].BATNA)
	}
	if !strings.Contains(got, "My priorities:") {
		t.Errorf("g1's proposal states no priorities: %q", got)
	}

	// A deliberation prompt still gets a persona agent.
	mustPost(t, ts.URL+"/v1/chat/completions", map[string]any{"model": sim.DefaultModel, "seed": 1,
		"messages": []map[string]string{{"role": "system", "content": "You are Agent A. Persona: a careful nurse."}, {"role": "user", "content": "Open the negotiation."}}}, &chat)
	if got := chat.Choices[0].Message.Content; strings.Contains(got, "VOTE:") || strings.Contains(got, "PROPOSAL:") {
		t.Errorf("a persona agent answered as a party: %q", got)
	}
	if _, err := multiparty.NewSim(map[string]string{"x": "1"}); err == nil {
		t.Error("NewSim accepted an unknown option")
	}
}
