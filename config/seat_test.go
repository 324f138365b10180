package config

import (
	"reflect"
	"testing"
	"time"

	"github.com/parleyhq/parley/dataset"
)

// TestRoleSeat: each spelling of roles.<role> becomes the seat it means:
// an adapter's name is its adapter (on the policy's servers), an external
// model's chat endpoint takes the run's concurrency, timeout and retries.
func TestRoleSeat(t *testing.T) {
	cfg := Default()
	cfg.Rollout.Concurrency, cfg.Policy.RequestTimeout, cfg.Policy.MaxRetries = 12, 9*time.Second, 2
	tests := []struct {
		r    RoleModel
		want Seat
	}{
		{RoleModel{Policy: dataset.PolicyBase, Model: "ignored"}, Seat{Kind: dataset.PolicyBase}},
		{RoleModel{Policy: dataset.PolicyScripted}, Seat{Kind: dataset.PolicyScripted}},
		{RoleModel{Policy: dataset.PolicyAdapter, Model: "persuader", AdapterPath: "/a"}, Seat{Kind: dataset.PolicyAdapter, Adapter: "persuader", AdapterPath: "/a"}},
		{RoleModel{Policy: dataset.PolicyEndpoint, Model: "m", Endpoints: []string{"http://x"}, APIKeyEnv: "K"},
			Seat{Kind: dataset.PolicyEndpoint, Model: "m", Endpoints: []string{"http://x"}, APIKeyEnv: "K"}},
		{RoleModel{Policy: dataset.PolicyExternal, Model: "gpt", BaseURL: "http://e/v1", APIKeyEnv: "K"},
			Seat{Kind: dataset.PolicyExternal, Model: "gpt", Chat: ChatEndpoint{BaseURL: "http://e/v1", Model: "gpt", APIKeyEnv: "K",
				Concurrency: 12, MaxRetries: 2, Timeout: 9 * time.Second, StructuredOutput: true}}},
	}
	for _, tt := range tests {
		tt.want.Name, tt.want.Key, tt.want.Sampling = "B", "roles.B", cfg.Sampling
		if got := cfg.RoleSeat("B", "roles.B", tt.r); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("RoleSeat(%+v) = %+v, want %+v", tt.r, got, tt.want)
		}
	}
}

// TestAgentSeat: a tournament agent's seat; the agents on one endpoint
// share its smallest bound and its key, an external agent gets the
// tournament's timeout and retries.
func TestAgentSeat(t *testing.T) {
	tt, err := ParseTournament([]byte(`judge: {base_url: http://j/v1, model: j}
request_timeout: 9s
max_retries: 2
sampling: {temperature: 0.5, max_tokens: 77}
agents:
  - {name: a, endpoint: http://x, model: m, max_concurrent: 32}
  - {name: b, endpoint: http://x, model: m, adapter: p, api_key_env: K, max_concurrent: 4}
  - {name: c, endpoint: http://y, model: m}
  - {name: d, kind: external, base_url: http://e/v1, model: gpt, api_key_env: E}
`))
	if err != nil {
		t.Fatal(err)
	}
	samp := Sampling{Temperature: 0.5, TopP: 1, MaxTokens: 77}
	want := []Seat{
		{Name: "a", Key: "agents[0] (a)", Kind: dataset.PolicyEndpoint, Endpoints: []string{"http://x"}, APIKeyEnv: "K", MaxConcurrent: 4, Model: "m", Sampling: samp},
		{Name: "b", Key: "agents[1] (b)", Kind: dataset.PolicyAdapter, Endpoints: []string{"http://x"}, APIKeyEnv: "K", MaxConcurrent: 4, Model: "m", Adapter: "p", Sampling: samp},
		{Name: "c", Key: "agents[2] (c)", Kind: dataset.PolicyEndpoint, Endpoints: []string{"http://y"}, MaxConcurrent: 8, Model: "m", Sampling: samp},
		{Name: "d", Key: "agents[3] (d)", Kind: dataset.PolicyExternal, Model: "gpt", Sampling: samp,
			Chat: ChatEndpoint{BaseURL: "http://e/v1", Model: "gpt", APIKeyEnv: "E", Concurrency: 8, MaxRetries: 2, Timeout: 9 * time.Second, StructuredOutput: true}},
	}
	for i := range tt.Agents {
		if got := tt.Seat(i); !reflect.DeepEqual(got, want[i]) {
			t.Errorf("Seat(%d) = %+v, want %+v", i, got, want[i])
		}
	}
}
