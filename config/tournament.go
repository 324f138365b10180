package config

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/eval/tournament/schedule"
	"github.com/parleyhq/parley/internal/textfile"
	"github.com/parleyhq/parley/rollout"
	"gopkg.in/yaml.v3"
)

// Tournament is a tournament file (`parley tournament --agents FILE`,
// configs/tournaments/seed001-agents.yaml): a round robin of a game among
// agents. Its game section and the game's analysis keys (for seed 001's
// endowment game: analysis and cohorts) are the game's own types, found
// through the registry (rollout.Spec.Config, rollout.Tournament.Analysis).
type Tournament struct {
	// Env is the game played (default endowment, seed 001's).
	Env string `yaml:"env"`
	// Seed seeds every game (with its id) and the analysis.
	Seed int64 `yaml:"seed"`
	// Rounds per condition.
	Rounds int `yaml:"rounds"`
	// Conditions played (default the game's: seed 001's framings,
	// singular then group; the key framings is read as conditions).
	Conditions []string `yaml:"conditions"`
	// Schedule is alternate (the default) or both.
	Schedule string `yaml:"schedule"`
	// Scenarios is the curriculum the games are drawn from (default the
	// game's default curriculum); each condition cycles through its own
	// rows.
	Scenarios string `yaml:"scenarios"`
	// Game is the game's section (for endowment: max_turns, endowment, …),
	// a pointer to the game's config type; Analysis the game's analysis
	// settings, whose fields are top-level keys of the file.
	Game     any `yaml:"-"`
	Analysis any `yaml:"-"`
	// Judge is the judge the game consults during play (seed 001's ledger
	// judge): the run config's chat-endpoint block.
	Judge ChatEndpoint `yaml:"judge"`
	// Sampling applies to every agent.
	Sampling TournamentSampling `yaml:"sampling"`
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
	// Agents play every seat against every other agent.
	Agents []Agent `yaml:"agents"`
}

// Agent is one agent of a tournament.
type Agent struct {
	// Name labels the agent everywhere (letters, digits, . _ -).
	Name string `yaml:"name"`
	// Kind is endpoint (the default), trained or external.
	Kind dataset.PolicyKind `yaml:"kind"`
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
	// (agents sharing an endpoint share the smallest bound; default 8).
	MaxConcurrent int `yaml:"max_concurrent"`
	// Family and OpenWeights are labels for the report's tables.
	Family      string `yaml:"family"`
	OpenWeights bool   `yaml:"open_weights"`

	// Line is the agent's line in the file (0 when not read from one).
	Line int `yaml:"-"`
}

// UnmarshalYAML records the agent's line for error messages.
func (a *Agent) UnmarshalYAML(n *yaml.Node) error {
	type plain Agent
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	*a = Agent(p)
	a.Line = n.Line
	return nil
}

// AgentKinds are the kinds a tournament agent can be.
var AgentKinds = []dataset.PolicyKind{dataset.PolicyEndpoint, dataset.PolicyTrained, dataset.PolicyExternal}

// TournamentSampling is every agent's sampling.
type TournamentSampling struct {
	Temperature float64 `yaml:"temperature"`
	TopP        float64 `yaml:"top_p"`
	TopK        int     `yaml:"top_k"`
	// MaxTokens bounds a turn (trace included).
	MaxTokens int `yaml:"max_tokens"`
	// EnableThinking is Qwen3's chat_template_kwargs.enable_thinking.
	EnableThinking bool `yaml:"enable_thinking"`
}

// DefaultTournamentEnv is the game a tournament file plays when it names
// none: seed 001's, the game tournaments were first made for.
const DefaultTournamentEnv = "endowment"

// DefaultTournament is a tournament file's defaults for game env.
func DefaultTournament(env string) (Tournament, error) {
	spec, ok := rollout.Lookup(env)
	if !ok {
		return Tournament{}, fmt.Errorf("unknown game %q (registered: %s)", env, strings.Join(rollout.GameNames(), ", "))
	}
	if spec.Tournament == nil {
		return Tournament{}, fmt.Errorf("the %s game cannot be played as a tournament (games that can: %s)", env, strings.Join(TournamentGames(), ", "))
	}
	t := Tournament{
		Env: env, Seed: 1, Rounds: 5, Conditions: slices.Clone(spec.Tournament.Conditions), Schedule: schedule.Alternate,
		Scenarios:   spec.Curriculum.Default,
		Judge:       ChatEndpoint{MaxRetries: 3, Timeout: 2 * time.Minute, Concurrency: 16, StructuredOutput: true},
		Sampling:    TournamentSampling{Temperature: 0.7, TopP: 1, MaxTokens: 1024},
		Concurrency: 8, MaxAttempts: 3, RetryWait: 5 * time.Second, RequestTimeout: 5 * time.Minute, MaxRetries: 4, Preflight: true,
	}
	if len(t.Conditions) == 0 {
		t.Conditions = []string{""}
	}
	if spec.Config != nil {
		t.Game = spec.Config()
	}
	if spec.Tournament.Analysis != nil {
		t.Analysis = spec.Tournament.Analysis()
	}
	return t, nil
}

// TournamentGames are the registered games that can be played as a
// tournament, sorted.
func TournamentGames() []string {
	var out []string
	for _, s := range rollout.Games() {
		if s.Tournament != nil {
			out = append(out, s.Name)
		}
	}
	return out
}

// LoadTournament reads a tournament file: unknown keys, bad values and
// inconsistent agents are errors naming the file, the line and the key.
func LoadTournament(path string) (Tournament, error) {
	b, err := textfile.ReadFile(path)
	if err != nil {
		return Tournament{}, fmt.Errorf("config.LoadTournament: %w", err)
	}
	t, err := ParseTournament(b)
	if err != nil {
		return Tournament{}, fmt.Errorf("config.LoadTournament: %s: %w", path, err)
	}
	return t, nil
}

// ParseTournament parses and validates a tournament file's YAML.
func ParseTournament(data []byte) (Tournament, error) {
	t, err := decodeTournament(textfile.StripBOM(data))
	if err != nil {
		return Tournament{}, err
	}
	if err := t.Validate(); err != nil {
		return Tournament{}, err
	}
	return t, nil
}

// tournamentHead is what a tournament file is read for before its keys
// can be checked: the game, whose section and analysis keys the file may
// hold, and the conditions under both their names.
type tournamentHead struct {
	Env        *string  `yaml:"env"`
	Conditions []string `yaml:"conditions"`
	Framings   []string `yaml:"framings"`
}

// decodeTournament decodes a tournament file over the defaults of its
// game, through the run config's strict decoder (strictDecode): one
// document of the tournament's own keys, the game's section under game and
// the game's analysis keys at the top (tournamentFile).
func decodeTournament(data []byte) (Tournament, error) {
	var head tournamentHead
	_ = yaml.Unmarshal(textfile.StripBOM(data), &head) // the strict decode reports what is wrong
	env := DefaultTournamentEnv
	if head.Env != nil {
		env = *head.Env
	}
	t, err := DefaultTournament(env)
	if err != nil {
		return Tournament{}, fmt.Errorf("key env: %w", err)
	}
	if head.Conditions != nil && head.Framings != nil {
		return Tournament{}, errors.New("key framings: is read as conditions, which the file gives too")
	}
	file := tournamentFile(&t)
	if err := strictDecode(data, file.Interface(), "", nil); err != nil {
		return Tournament{}, err
	}
	if fr := file.Elem().FieldByName("Framings"); fr.Len() > 0 || head.Framings != nil {
		t.Conditions = fr.Interface().([]string)
	}
	return t, nil
}

// tournamentFile is a pointer to a tournament file of t's game, over t:
// its own keys are t's, framings is read as conditions, game is t.Game's
// section and the game's analysis keys (t.Analysis) sit at the top.
func tournamentFile(t *Tournament) reflect.Value {
	fields := []reflect.StructField{
		{Name: "Tournament", Type: reflect.TypeOf(t), Tag: `yaml:",inline"`},
		{Name: "Framings", Type: reflect.TypeOf([]string(nil)), Tag: `yaml:"framings,omitempty"`},
	}
	if t.Game != nil {
		fields = append(fields, reflect.StructField{Name: "Game", Type: reflect.TypeOf(t.Game), Tag: `yaml:"game"`})
	}
	if t.Analysis != nil {
		fields = append(fields, reflect.StructField{Name: "Analysis", Type: reflect.TypeOf(t.Analysis), Tag: `yaml:",inline"`})
	}
	file := reflect.New(reflect.StructOf(fields))
	file.Elem().Field(0).Set(reflect.ValueOf(t))
	if t.Game != nil {
		file.Elem().FieldByName("Game").Set(reflect.ValueOf(t.Game))
	}
	if t.Analysis != nil {
		file.Elem().FieldByName("Analysis").Set(reflect.ValueOf(t.Analysis))
	}
	return file
}

var agentNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Validate checks the tournament; errors name the key (and an agent's
// line). It fills the agents' default kinds and bounds.
func (t *Tournament) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("key %s: %s", key, fmt.Sprintf(format, args...)))
	}
	spec, _ := rollout.Lookup(t.Env)
	if t.Rounds < 1 {
		bad("rounds", "must be at least 1, got %d", t.Rounds)
	}
	if len(t.Conditions) == 0 {
		bad("conditions", "must list at least one condition")
	}
	known := spec.Tournament.Conditions
	seen := map[string]bool{}
	for i, c := range t.Conditions {
		if (len(known) > 0 && !slices.Contains(known, c)) || (len(known) == 0 && c != "") || seen[c] {
			bad(fmt.Sprintf("conditions[%d]", i), "must be one of %s, once each; got %q", quoteAll(known), c)
		}
		seen[c] = true
	}
	if !slices.Contains(schedule.Names, t.Schedule) {
		bad("schedule", "must be %s, got %q", quoteAll(schedule.Names), t.Schedule)
	}
	if v, ok := t.Game.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("game: %w", err))
		}
	}
	if spec.UsesJudge {
		if t.Judge.BaseURL == "" {
			bad("judge.base_url", "must name the OpenAI-compatible API of the judge the %s game consults", t.Env)
		} else if err := checkTournamentURL(t.Judge.BaseURL); err != nil {
			bad("judge.base_url", "%v", err)
		}
		if t.Judge.Model == "" {
			bad("judge.model", "must not be empty")
		}
	}
	if t.Judge.Concurrency < 1 {
		bad("judge.concurrency", "must be at least 1")
	}
	if t.Judge.RequestsPerMinute < 0 || t.Judge.TokensPerMinute < 0 {
		bad("judge", "requests_per_minute and tokens_per_minute must not be negative (0: unlimited)")
	}
	if t.Sampling.MaxTokens < 1 {
		bad("sampling.max_tokens", "must be at least 1")
	}
	if t.Sampling.Temperature < 0 || t.Sampling.TopP <= 0 || t.Sampling.TopP > 1 {
		bad("sampling", "temperature must be ≥ 0 and top_p in (0, 1]")
	}
	if t.Concurrency < 1 {
		bad("concurrency", "must be at least 1")
	}
	if t.MaxAttempts < 1 {
		bad("max_attempts", "must be at least 1")
	}
	if len(t.Agents) < 2 {
		bad("agents", "must list at least 2 agents, got %d", len(t.Agents))
	}
	names := map[string]int{}
	var list []string
	for i := range t.Agents {
		a := &t.Agents[i]
		key := fmt.Sprintf("agents[%d] (line %d)", i, a.Line)
		if err := a.validate(); err != nil {
			errs = append(errs, fmt.Errorf("key %s: %w", key, err))
		}
		if j, dup := names[a.Name]; dup {
			bad(key+".name", "%q is also agents[%d]'s name", a.Name, j)
		}
		names[a.Name] = i
		list = append(list, a.Name)
	}
	if v, ok := t.Analysis.(interface{ Validate(agents []string) error }); ok {
		if err := v.Validate(list); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func quoteAll(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = fmt.Sprintf("%q", x)
	}
	return strings.Join(q, " or ")
}

func (a *Agent) validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if !agentNameRE.MatchString(a.Name) {
		bad("name", "%q must be 1–64 letters, digits, '.', '_' or '-'", a.Name)
	}
	if a.Kind == "" {
		switch {
		case a.BaseURL != "":
			a.Kind = dataset.PolicyExternal
		case a.Run != "":
			a.Kind = dataset.PolicyTrained
		default:
			a.Kind = dataset.PolicyEndpoint
		}
	}
	switch a.Kind {
	case dataset.PolicyEndpoint, dataset.PolicyTrained:
		if a.Endpoint == "" {
			bad("endpoint", "must name the vLLM server's base URL")
		} else if err := checkTournamentURL(a.Endpoint); err != nil {
			bad("endpoint", "%v", err)
		}
		if a.Model == "" {
			bad("model", "must name the served model")
		}
		if a.BaseURL != "" {
			bad("base_url", "is for external agents; this one is %s", a.Kind)
		}
		if a.Kind == dataset.PolicyTrained && a.Run == "" {
			bad("run", "must name the run directory whose newest checkpoint plays")
		}
		if a.Kind == dataset.PolicyEndpoint && a.Run != "" {
			bad("run", "is for trained agents")
		}
		if a.AdapterPath != "" && a.Adapter == "" {
			bad("adapter", "must name the adapter that adapter_path is loaded as")
		}
	case dataset.PolicyExternal:
		if a.BaseURL == "" {
			bad("base_url", "must name the external model's API")
		} else if err := checkTournamentURL(a.BaseURL); err != nil {
			bad("base_url", "%v", err)
		}
		if a.Model == "" {
			bad("model", "must name the external model")
		}
		if a.Endpoint != "" || a.Adapter != "" || a.Run != "" {
			bad("endpoint", "endpoint, adapter and run are not for external agents")
		}
	default:
		bad("kind", "must be %s, %s or %s, got %q", AgentKinds[0], AgentKinds[1], AgentKinds[2], a.Kind)
	}
	if a.MaxConcurrent < 0 {
		bad("max_concurrent", "must not be negative")
	}
	if a.MaxConcurrent == 0 {
		a.MaxConcurrent = 8
	}
	return errors.Join(errs...)
}

func checkTournamentURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http(s) URL", s)
	}
	if u.User != nil {
		return errors.New("credentials in a URL are refused: use api_key_env")
	}
	return nil
}

// AgentNames are the agents' names in the file's order.
func (t *Tournament) AgentNames() []string {
	out := make([]string, len(t.Agents))
	for i, a := range t.Agents {
		out[i] = a.Name
	}
	return out
}

// Canonical is the tournament as YAML, for the frozen copy and for
// comparing a resumed tournament with it: the tournament's own keys, the
// game's section under game, then the game's analysis keys.
func (t Tournament) Canonical() ([]byte, error) {
	var doc yaml.Node
	if err := doc.Encode(t); err != nil {
		return nil, fmt.Errorf("config.Tournament.Canonical: %w", err)
	}
	if t.Game != nil {
		var g yaml.Node
		if err := g.Encode(t.Game); err != nil {
			return nil, fmt.Errorf("config.Tournament.Canonical: %w", err)
		}
		doc.Content = append(doc.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "game"}, &g)
	}
	if t.Analysis != nil {
		var a yaml.Node
		if err := a.Encode(t.Analysis); err != nil {
			return nil, fmt.Errorf("config.Tournament.Canonical: %w", err)
		}
		doc.Content = append(doc.Content, a.Content...)
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, fmt.Errorf("config.Tournament.Canonical: %w", err)
	}
	return b.Bytes(), enc.Close()
}

// TournamentIdentity is what must not change for a tournament to resume on
// its directory: the file as Canonical writes it, without the judge's
// concurrency, rate limits, retries and timeout, which change how the
// judge is asked, never what it answers (a run's cross-play takes them
// from its judge, and a resumed run may have changed them).
func TournamentIdentity(data []byte) ([]byte, error) {
	t, err := ParseTournament(data)
	if err != nil {
		return nil, err
	}
	j := &t.Judge
	j.Concurrency, j.RequestsPerMinute, j.TokensPerMinute, j.MaxRetries, j.Timeout = 0, 0, 0, 0, 0
	return t.Canonical()
}

// CanonicalTournament rewrites a tournament file as Canonical would (a
// frozen copy, for comparing with the tournament resumed on it).
func CanonicalTournament(data []byte) ([]byte, error) {
	t, err := ParseTournament(data)
	if err != nil {
		return nil, err
	}
	return t.Canonical()
}
