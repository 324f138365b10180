package tournament

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"strings"
	"time"

	"github.com/parleyhq/parley/rollout/endowment"
	"gopkg.in/yaml.v3"
)

// Agent kinds.
const (
	// KindEndpoint is a vLLM server (token level), optionally one of its
	// LoRA adapters.
	KindEndpoint = "endpoint"
	// KindTrained is the trained policy of a parley run: its newest
	// checkpoint, loaded as an adapter on the agent's endpoint.
	KindTrained = "trained"
	// KindExternal is an OpenAI-compatible chat model.
	KindExternal = "external"
)

// Schedules.
const (
	// ScheduleAlternate: one game per unordered pair per round and
	// framing, roles alternating with the round and swapped between the
	// framings, so every ordered pairing plays `rounds` games over the two
	// framings (seed 001's table 9: 15 agents, 5 rounds, 1,050 games).
	ScheduleAlternate = "alternate"
	// ScheduleBoth: every unordered pair meets in both role assignments
	// every round and framing (twice the games: 2,100 at 15 agents and 5
	// rounds).
	ScheduleBoth = "both"
)

// Spec is a tournament as its YAML file describes it (see
// configs/tournament-agents.yaml).
type Spec struct {
	// Seed seeds every game (with its id) and the analysis.
	Seed int64 `yaml:"seed"`
	// Rounds per framing.
	Rounds int `yaml:"rounds"`
	// Framings played (default both, singular then group).
	Framings []string `yaml:"framings"`
	// Schedule is ScheduleAlternate (default) or ScheduleBoth.
	Schedule string `yaml:"schedule"`
	// Scenarios is a curriculum of endowment scenarios (default
	// builtin:endowment); each framing cycles through its own rows.
	Scenarios string `yaml:"scenarios"`
	// Game is the endowment game's section (max_turns, endowment, …).
	Game endowment.Config `yaml:"game"`
	// Judge is the ledger judge.
	Judge JudgeSpec `yaml:"judge"`
	// Sampling applies to every agent.
	Sampling SamplingSpec `yaml:"sampling"`
	// Concurrency bounds the games in flight (per-endpoint limits are the
	// agents' max_concurrent).
	Concurrency int `yaml:"concurrency"`
	// MaxAttempts is how many times a game is played before it is
	// recorded as failed.
	MaxAttempts int `yaml:"max_attempts"`
	// RetryWait is the wait before a failed game's next attempt (times
	// the attempt number).
	RetryWait time.Duration `yaml:"retry_wait"`
	// RequestTimeout and MaxRetries govern each agent request.
	RequestTimeout time.Duration `yaml:"request_timeout"`
	MaxRetries     int           `yaml:"max_retries"`
	// Preflight checks every agent's server before the first game.
	Preflight bool `yaml:"preflight"`
	// Agents play every role against every other agent.
	Agents []AgentSpec `yaml:"agents"`
	// Cohorts are the subsets of table 4, by agent names.
	Cohorts []CohortSpec `yaml:"cohorts"`
	// Analysis sets the report's statistics.
	Analysis AnalysisSpec `yaml:"analysis"`
}

// AgentSpec is one agent.
type AgentSpec struct {
	// Name labels the agent everywhere (letters, digits, . _ -).
	Name string `yaml:"name"`
	// Kind is KindEndpoint (the default), KindTrained or KindExternal.
	Kind string `yaml:"kind"`
	// Endpoint is the vLLM server's base URL (endpoint, trained).
	Endpoint string `yaml:"endpoint"`
	// Model is the served base model (endpoint, trained) or the external
	// model's name.
	Model string `yaml:"model"`
	// Adapter is a LoRA adapter served on Endpoint; AdapterPath, if set,
	// is loaded under that name before the first game.
	Adapter     string `yaml:"adapter"`
	AdapterPath string `yaml:"adapter_path"`
	// Run is a parley run directory (trained): its newest checkpoint.
	Run string `yaml:"run"`
	// BaseURL is the external model's API root (external).
	BaseURL string `yaml:"base_url"`
	// APIKeyEnv names the environment variable with the server's key.
	APIKeyEnv string `yaml:"api_key_env"`
	// MaxConcurrent bounds this agent's server's requests in flight
	// (agents sharing an endpoint share the smallest bound).
	MaxConcurrent int `yaml:"max_concurrent"`
	// Family and OpenWeights are labels for table 5.
	Family      string `yaml:"family"`
	OpenWeights bool   `yaml:"open_weights"`

	line int
}

// UnmarshalYAML records the agent's line for error messages and refuses
// unknown keys (a custom unmarshaler does not inherit KnownFields).
func (a *AgentSpec) UnmarshalYAML(n *yaml.Node) error {
	type plain AgentSpec
	if n.Kind == yaml.MappingNode {
		known := map[string]bool{}
		t := reflect.TypeOf(plain{})
		for i := 0; i < t.NumField(); i++ {
			if tag := strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]; tag != "" {
				known[tag] = true
			}
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := n.Content[i]; !known[k.Value] {
				return fmt.Errorf("line %d: field %s not found in type tournament.AgentSpec", k.Line, k.Value)
			}
		}
	}
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	*a = AgentSpec(p)
	a.line = n.Line
	return nil
}

// JudgeSpec is the ledger judge's API.
type JudgeSpec struct {
	BaseURL    string        `yaml:"base_url"`
	Model      string        `yaml:"model"`
	APIKeyEnv  string        `yaml:"api_key_env"`
	MaxRetries int           `yaml:"max_retries"`
	Timeout    time.Duration `yaml:"timeout"`
	// Concurrency bounds judge requests in flight.
	Concurrency int `yaml:"concurrency"`
	// StructuredOutput asks for the verdict's JSON schema (default true).
	StructuredOutput bool `yaml:"structured_output"`
}

// SamplingSpec is every agent's sampling.
type SamplingSpec struct {
	Temperature float64 `yaml:"temperature"`
	TopP        float64 `yaml:"top_p"`
	TopK        int     `yaml:"top_k"`
	// MaxTokens bounds a turn (trace included).
	MaxTokens int `yaml:"max_tokens"`
	// EnableThinking is Qwen3's chat_template_kwargs.enable_thinking.
	EnableThinking bool `yaml:"enable_thinking"`
}

// CohortSpec is a subset of the agents for table 4.
type CohortSpec struct {
	Name string `yaml:"name"`
	// DropHolders are left out as holders, DropRequesters as requesters,
	// Drop in both roles.
	DropHolders    []string `yaml:"drop_holders"`
	DropRequesters []string `yaml:"drop_requesters"`
	Drop           []string `yaml:"drop"`
}

// AnalysisSpec sets the report's statistics.
type AnalysisSpec struct {
	// Bootstrap resamples at the ordered-pairing level (default 2,000).
	Bootstrap int `yaml:"bootstrap"`
	// Splits of the split-half held-out coefficient (default 2,000).
	Splits int `yaml:"splits"`
	// AuditDraws per probe count k (default 800); AuditMaxK the largest k
	// (default 30, at most an agent's holder games − 1).
	AuditDraws int `yaml:"audit_draws"`
	AuditMaxK  int `yaml:"audit_max_k"`
	// EloPermutations of the game order averaged over (default 1,000);
	// EloK and EloStart the rating constants (32, 1500).
	EloPermutations int     `yaml:"elo_permutations"`
	EloK            float64 `yaml:"elo_k"`
	EloStart        float64 `yaml:"elo_start"`
	// WinThreshold: the requester wins a game whose share exceeds it, the
	// holder one whose share is below it (default 0.5).
	WinThreshold float64 `yaml:"win_threshold"`
	// TOSTBounds are the equivalence bounds in pooled-SD units (default
	// 0.1, 0.2, 0.3).
	TOSTBounds []float64 `yaml:"tost_bounds"`
}

// DefaultSpec is a spec's defaults before its file is read.
func DefaultSpec() Spec {
	return Spec{
		Seed: 1, Rounds: 5, Framings: []string{endowment.FramingSingular, endowment.FramingGroup}, Schedule: ScheduleAlternate,
		Scenarios: endowment.BuiltinCurriculum, Game: *endowment.DefaultConfig(),
		Judge:       JudgeSpec{MaxRetries: 3, Timeout: 2 * time.Minute, Concurrency: 16, StructuredOutput: true},
		Sampling:    SamplingSpec{Temperature: 0.7, TopP: 1, MaxTokens: 1024},
		Concurrency: 8, MaxAttempts: 3, RetryWait: 5 * time.Second, RequestTimeout: 5 * time.Minute, MaxRetries: 4, Preflight: true,
		Analysis: AnalysisSpec{Bootstrap: 2000, Splits: 2000, AuditDraws: 800, AuditMaxK: 30, EloPermutations: 1000,
			EloK: 32, EloStart: 1500, WinThreshold: 0.5, TOSTBounds: []float64{0.1, 0.2, 0.3}},
	}
}

// LoadSpec reads a tournament file: unknown keys, bad values and
// inconsistent agents are errors naming the file, the line and the key.
func LoadSpec(path string) (Spec, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Spec{}, fmt.Errorf("tournament.LoadSpec: %w", err)
	}
	s, err := ParseSpec(b)
	if err != nil {
		return Spec{}, fmt.Errorf("tournament.LoadSpec: %s: %w", path, err)
	}
	return s, nil
}

// ParseSpec parses and validates a tournament's YAML.
func ParseSpec(b []byte) (Spec, error) {
	s := DefaultSpec()
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		return Spec{}, fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if err := s.Validate(); err != nil {
		return Spec{}, err
	}
	return s, nil
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Validate checks the spec; errors name the key (and an agent's line).
func (s *Spec) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("key %s: %s", key, fmt.Sprintf(format, args...)))
	}
	if s.Rounds < 1 {
		bad("rounds", "must be at least 1, got %d", s.Rounds)
	}
	if len(s.Framings) == 0 {
		bad("framings", "must list at least one framing")
	}
	seenF := map[string]bool{}
	for i, f := range s.Framings {
		if f != endowment.FramingSingular && f != endowment.FramingGroup || seenF[f] {
			bad(fmt.Sprintf("framings[%d]", i), "must be %q or %q, once each; got %q", endowment.FramingSingular, endowment.FramingGroup, f)
		}
		seenF[f] = true
	}
	if s.Schedule != ScheduleAlternate && s.Schedule != ScheduleBoth {
		bad("schedule", "must be %q or %q, got %q", ScheduleAlternate, ScheduleBoth, s.Schedule)
	}
	if err := s.Game.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("game: %w", err))
	}
	if s.Judge.BaseURL == "" {
		bad("judge.base_url", "must name the ledger judge's OpenAI-compatible API")
	} else if err := checkURL(s.Judge.BaseURL); err != nil {
		bad("judge.base_url", "%v", err)
	}
	if s.Judge.Model == "" {
		bad("judge.model", "must not be empty")
	}
	if s.Judge.Concurrency < 1 {
		bad("judge.concurrency", "must be at least 1")
	}
	if s.Sampling.MaxTokens < 1 {
		bad("sampling.max_tokens", "must be at least 1")
	}
	if s.Sampling.Temperature < 0 || s.Sampling.TopP <= 0 || s.Sampling.TopP > 1 {
		bad("sampling", "temperature must be ≥ 0 and top_p in (0, 1]")
	}
	if s.Concurrency < 1 {
		bad("concurrency", "must be at least 1")
	}
	if s.MaxAttempts < 1 {
		bad("max_attempts", "must be at least 1")
	}
	if len(s.Agents) < 2 {
		bad("agents", "must list at least 2 agents, got %d", len(s.Agents))
	}
	names := map[string]int{}
	for i := range s.Agents {
		a := &s.Agents[i]
		key := fmt.Sprintf("agents[%d] (line %d)", i, a.line)
		if err := a.validate(); err != nil {
			errs = append(errs, fmt.Errorf("key %s: %w", key, err))
		}
		if j, dup := names[a.Name]; dup {
			bad(key+".name", "%q is also agents[%d]'s name", a.Name, j)
		}
		names[a.Name] = i
	}
	for i, c := range s.Cohorts {
		key := fmt.Sprintf("cohorts[%d]", i)
		if strings.TrimSpace(c.Name) == "" {
			bad(key+".name", "must not be empty")
		}
		for _, l := range [][]string{c.DropHolders, c.DropRequesters, c.Drop} {
			for _, n := range l {
				if _, ok := names[n]; !ok {
					bad(key, "names agent %q, which is not in agents", n)
				}
			}
		}
	}
	an := s.Analysis
	if an.Bootstrap < 0 || an.Splits < 0 || an.AuditDraws < 0 || an.EloPermutations < 1 || an.EloK <= 0 || an.AuditMaxK < 1 {
		bad("analysis", "bootstrap, splits and audit_draws must be ≥ 0, elo_permutations and audit_max_k ≥ 1, elo_k > 0")
	}
	if !(an.WinThreshold > 0 && an.WinThreshold < 1) {
		bad("analysis.win_threshold", "must be in (0, 1)")
	}
	for i, b := range an.TOSTBounds {
		if !(b > 0) {
			bad(fmt.Sprintf("analysis.tost_bounds[%d]", i), "must be positive")
		}
	}
	return errors.Join(errs...)
}

func (a *AgentSpec) validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if !nameRE.MatchString(a.Name) {
		bad("name", "%q must be 1–64 letters, digits, '.', '_' or '-'", a.Name)
	}
	if a.Kind == "" {
		switch {
		case a.BaseURL != "":
			a.Kind = KindExternal
		case a.Run != "":
			a.Kind = KindTrained
		default:
			a.Kind = KindEndpoint
		}
	}
	switch a.Kind {
	case KindEndpoint, KindTrained:
		if a.Endpoint == "" {
			bad("endpoint", "must name the vLLM server's base URL")
		} else if err := checkURL(a.Endpoint); err != nil {
			bad("endpoint", "%v", err)
		}
		if a.Model == "" {
			bad("model", "must name the served model")
		}
		if a.BaseURL != "" {
			bad("base_url", "is for external agents; this one is %s", a.Kind)
		}
		if a.Kind == KindTrained && a.Run == "" {
			bad("run", "must name the run directory whose newest checkpoint plays")
		}
		if a.Kind == KindEndpoint && a.Run != "" {
			bad("run", "is for trained agents")
		}
		if a.AdapterPath != "" && a.Adapter == "" {
			bad("adapter", "must name the adapter that adapter_path is loaded as")
		}
	case KindExternal:
		if a.BaseURL == "" {
			bad("base_url", "must name the external model's API")
		} else if err := checkURL(a.BaseURL); err != nil {
			bad("base_url", "%v", err)
		}
		if a.Model == "" {
			bad("model", "must name the external model")
		}
		if a.Endpoint != "" || a.Adapter != "" || a.Run != "" {
			bad("endpoint", "endpoint, adapter and run are not for external agents")
		}
	default:
		bad("kind", "must be %s, %s or %s, got %q", KindEndpoint, KindTrained, KindExternal, a.Kind)
	}
	if a.MaxConcurrent < 0 {
		bad("max_concurrent", "must not be negative")
	}
	if a.MaxConcurrent == 0 {
		a.MaxConcurrent = 8
	}
	return errors.Join(errs...)
}

func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http(s) URL", s)
	}
	if u.User != nil {
		return errors.New("credentials in a URL are refused: use api_key_env")
	}
	return nil
}

// Index returns the agent's position, or -1.
func (s *Spec) Index(name string) int {
	for i, a := range s.Agents {
		if a.Name == name {
			return i
		}
	}
	return -1
}

// Canonical is the spec as YAML, for the frozen copy and for comparing a
// resumed tournament with it.
func (s Spec) Canonical() ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	return b.Bytes(), enc.Close()
}
