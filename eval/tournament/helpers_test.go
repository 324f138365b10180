package tournament

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/parleyhq/parley/rollout/endowment"
	"github.com/parleyhq/parley/sim"
)

// startSim runs serve-sim, answering the endowment game's prompts
// (endowment.NewSim), behind a real HTTP server.
func startSim(t testing.TB, opts sim.Options) string {
	t.Helper()
	answers, err := endowment.NewSim(nil)
	if err != nil {
		t.Fatal(err)
	}
	opts.Games = []sim.Answerer{answers}
	srv, err := sim.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	t.Cleanup(srv.Close)
	return ts.URL
}

// simAgents are four scripted agents of serve-sim: adapters whose names
// give a holder's generosity and a requester's persuasiveness.
var simAgents = []string{"stingy-g5-p20", "firm-g25-p80", "soft-g70-p40", "open-g95-p90"}

// specYAML is a tournament of the sim agents on the server at url.
func specYAML(url, judgeURL string, rounds int, extra string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `seed: 3
rounds: %d
concurrency: 4
max_attempts: 2
retry_wait: 1ms
request_timeout: 5s
max_retries: 1
judge: {base_url: %s/v1, model: sim-judge, max_retries: 1, concurrency: 8}
sampling: {temperature: 1, max_tokens: 200}
analysis: {bootstrap: 200, splits: 200, audit_draws: 100, elo_permutations: 200}
%s
agents:
`, rounds, judgeURL, extra)
	for _, a := range simAgents {
		fmt.Fprintf(&b, "  - {name: %s, endpoint: %s, model: sim-policy, adapter: %s, adapter_path: /sim/%s, max_concurrent: 8, family: sim}\n", a, url, a, a)
	}
	return b.String()
}

func mustSpec(t testing.TB, y string) Spec {
	t.Helper()
	s, err := ParseSpec([]byte(y))
	if err != nil {
		t.Fatalf("ParseSpec: %v\n%s", err, y)
	}
	return s
}
