package contract_test

import (
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/parleyhq/parley/llm/contract"
	"github.com/parleyhq/parley/sim"
)

func startSim(t *testing.T, opts sim.Options) *httptest.Server {
	t.Helper()
	srv, err := sim.New(opts)
	if err != nil {
		t.Fatalf("sim.New: %v", err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	t.Cleanup(srv.Close)
	return ts
}

func TestContractSim(t *testing.T) {
	ts := startSim(t, sim.Options{})
	contract.Run(t, contract.Config{BaseURL: ts.URL, Model: sim.DefaultModel, LoRAPath: "/adapters/contract-test"})
}

// TestContractSimLegacyErrorsAPIKey runs the suite against the older flat
// error shape and with an API key required.
func TestContractSimLegacyErrorsAPIKey(t *testing.T) {
	ts := startSim(t, sim.Options{Model: "Qwen/Qwen3-0.6B", LegacyErrors: true, APIKey: "contract-secret"})
	contract.Run(t, contract.Config{BaseURL: ts.URL, Model: "Qwen/Qwen3-0.6B", LoRAPath: "/adapters/x",
		APIKey: "contract-secret"})
}

// TestContractURL runs the suite against an external server (a real
// vLLM elsewhere) named by PARLEY_CONTRACT_URL.
func TestContractURL(t *testing.T) {
	url := os.Getenv("PARLEY_CONTRACT_URL")
	if url == "" {
		t.Skip("PARLEY_CONTRACT_URL not set")
	}
	model := os.Getenv("PARLEY_CONTRACT_MODEL")
	if model == "" {
		t.Fatal("PARLEY_CONTRACT_MODEL must name the served model when PARLEY_CONTRACT_URL is set")
	}
	contract.Run(t, contract.Config{BaseURL: url, Model: model,
		LoRAPath: os.Getenv("PARLEY_CONTRACT_LORA_PATH"), APIKey: os.Getenv("PARLEY_CONTRACT_API_KEY")})
}

// TestContractDetectsBrokenServer checks that the suite fails, naming the
// broken contract point, against a server that ignores return_token_ids as
// vLLM < 0.10.2 does. The suite runs in a child process so its failures do
// not fail this test.
func TestContractDetectsBrokenServer(t *testing.T) {
	if os.Getenv("PARLEY_CONTRACT_BROKEN_CHILD") == "1" {
		ts := startSim(t, sim.Options{NoTokenIDs: true})
		contract.Run(t, contract.Config{BaseURL: ts.URL, Model: sim.DefaultModel})
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestContractDetectsBrokenServer$", "-test.v")
	cmd.Env = append(os.Environ(), "PARLEY_CONTRACT_BROKEN_CHILD=1", "PARLEY_CONTRACT_URL=")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("contract suite passed against a server without token_ids; output:\n%s", out)
	}
	for _, want := range []string{"--- FAIL: TestContractDetectsBrokenServer/completion_token_ids_and_logprobs", "token_ids missing",
		"--- PASS: TestContractDetectsBrokenServer/health"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("child output lacks %q; output:\n%s", want, out)
		}
	}
}
