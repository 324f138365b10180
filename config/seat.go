package config

import (
	"fmt"
	"time"

	"github.com/parleyhq/parley/dataset"
)

// ChatEndpoint is an OpenAI-compatible chat API and how parley talks to
// it: the block the judge (judge.*), the generator (generator.*), a
// tournament's judge and an external seat share. Its keys sit in the
// section that holds it.
type ChatEndpoint struct {
	// BaseURL is the OpenAI-compatible API root.
	BaseURL string `yaml:"base_url"`
	// Model is the model the requests ask.
	Model string `yaml:"model"`
	// APIKeyEnv names the environment variable holding the API key.
	APIKeyEnv string `yaml:"api_key_env"`
	// Concurrency bounds the requests in flight.
	Concurrency int `yaml:"concurrency"`
	// RequestsPerMinute and TokensPerMinute rate-limit the requests (0: unlimited).
	RequestsPerMinute int `yaml:"requests_per_minute"`
	TokensPerMinute   int `yaml:"tokens_per_minute"`
	// MaxRetries and Timeout govern each request.
	MaxRetries int           `yaml:"max_retries"`
	Timeout    time.Duration `yaml:"timeout"`
	// StructuredOutput asks for a JSON schema response format.
	StructuredOutput bool `yaml:"structured_output"`
}

// checkUsed checks the keys under section (judge, generator) that a chat
// endpoint in use needs: its URL, model, key variable, concurrency and
// timeout.
func (e ChatEndpoint) checkUsed(k *checker, section string) {
	k.httpURL(section+".base_url", e.BaseURL, section+".api_key_env")
	if e.Model == "" {
		k.bad(section+".model", "must not be empty")
	}
	k.envName(section+".api_key_env", e.APIKeyEnv, false)
	k.positive(section+".concurrency", e.Concurrency)
	if e.Timeout <= 0 {
		k.bad(section+".timeout", "must be positive, got %s", e.Timeout)
	}
}

// checkLimits checks the rate limits and retries under section.
func (e ChatEndpoint) checkLimits(k *checker, section string) {
	k.nonNegative(section+".requests_per_minute", e.RequestsPerMinute)
	k.nonNegative(section+".tokens_per_minute", e.TokensPerMinute)
	k.nonNegative(section+".max_retries", e.MaxRetries)
}

// Seat is what plays one seat of a game: the base model or an adapter on
// the run's policy servers, another vLLM server (its model, or an adapter
// on it), a run's newest checkpoint, an external chat model, or the game's
// own script. It is the one type behind roles.<role> (its pool and league
// members included), a tournament's agents and cross-play's: each file
// spells a seat its own way (RoleModel, Agent), Config.RoleSeat and
// Tournament.Seat make it a Seat, and app builds every player from one.
type Seat struct {
	// Name names the seat's player in logs and clients: a role's name, a
	// tournament agent's.
	Name string
	// Key is the seat's config key path, for errors ("roles.B.pool[1]",
	// "agents[2] (gpt)").
	Key string
	// Kind is what plays: base, adapter, endpoint, trained, external or
	// scripted.
	Kind dataset.PolicyKind
	// Endpoints are the vLLM servers the seat samples from (endpoint,
	// trained, an adapter on a server of its own); none: the run's policy
	// servers.
	Endpoints []string
	// APIKeyEnv names the environment variable holding those servers' key.
	APIKeyEnv string
	// MaxConcurrent bounds each of those servers' requests in flight (0:
	// the connection's own bound).
	MaxConcurrent int
	// Model is the served model (none: the policy's), or a scripted
	// seat's label.
	Model string
	// Adapter is a LoRA adapter on the seat's servers; AdapterPath, if
	// set, is where it is loaded from, as the server sees it.
	Adapter, AdapterPath string
	// Run is the run directory whose newest checkpoint plays (trained).
	Run string
	// Chat is the external model's chat endpoint (external).
	Chat ChatEndpoint
	// Sampling is the seat's sampling; an external model's requests carry
	// its temperature and max_tokens.
	Sampling Sampling
}

// RoleSeat is the seat that r, the entry of role at key path key
// (roles.<role> or one of its pool's members), describes: an adapter and a
// base model play on the policy's servers; another server's client keeps
// the policy's connection settings; an external model gets the run's
// concurrency, request timeout, retries and sampling.
func (c Config) RoleSeat(role, key string, r RoleModel) Seat {
	s := Seat{Name: role, Key: key, Kind: r.Policy, Model: r.Model, Sampling: c.Sampling}
	switch r.Policy {
	case dataset.PolicyBase:
		s.Model = ""
	case dataset.PolicyAdapter:
		s.Model, s.Adapter, s.AdapterPath = "", r.Model, r.AdapterPath
	case dataset.PolicyEndpoint:
		s.Endpoints, s.APIKeyEnv = r.Endpoints, r.APIKeyEnv
	case dataset.PolicyExternal:
		s.Chat = ChatEndpoint{BaseURL: r.BaseURL, Model: r.Model, APIKeyEnv: r.APIKeyEnv, Concurrency: c.Rollout.Concurrency,
			MaxRetries: c.Policy.MaxRetries, Timeout: c.Policy.RequestTimeout, StructuredOutput: true}
	}
	return s
}

// Seat is the seat of agent i: its server (shared with the agents on the
// same endpoint) or its external API, its model or adapter, and the
// tournament's sampling, request timeout and retries. Validate has filled
// the agents' kinds and bounds.
func (t Tournament) Seat(i int) Seat {
	a := t.Agents[i]
	s := Seat{Name: a.Name, Key: fmt.Sprintf("agents[%d] (%s)", i, a.Name), Kind: a.Kind, Model: a.Model,
		Adapter: a.Adapter, AdapterPath: a.AdapterPath, Run: a.Run, APIKeyEnv: a.APIKeyEnv, MaxConcurrent: a.MaxConcurrent,
		Sampling: Sampling{Temperature: t.Sampling.Temperature, TopP: t.Sampling.TopP, TopK: t.Sampling.TopK, MaxTokens: t.Sampling.MaxTokens}}
	switch a.Kind {
	case dataset.PolicyExternal:
		s.Chat = ChatEndpoint{BaseURL: a.BaseURL, Model: a.Model, APIKeyEnv: a.APIKeyEnv, Concurrency: a.MaxConcurrent,
			MaxRetries: t.MaxRetries, Timeout: t.RequestTimeout, StructuredOutput: true}
		s.APIKeyEnv, s.MaxConcurrent = "", 0
	default:
		s.Endpoints = []string{a.Endpoint}
		if a.Adapter != "" && a.Kind == dataset.PolicyEndpoint {
			s.Kind = dataset.PolicyAdapter
		}
		// The agents on one endpoint share its client: the smallest
		// bound, and the key any of them names.
		for _, b := range t.Agents {
			if b.Kind == dataset.PolicyExternal || b.Endpoint != a.Endpoint {
				continue
			}
			s.MaxConcurrent = min(s.MaxConcurrent, b.MaxConcurrent)
			if b.APIKeyEnv != "" {
				s.APIKeyEnv = b.APIKeyEnv
			}
		}
	}
	return s
}
