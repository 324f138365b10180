package sim

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"
)

// Defaults of Options fields left zero.
const (
	DefaultModel       = "sim-policy"
	DefaultJudgeModel  = "sim-judge"
	DefaultMaxModelLen = 32768
	DefaultAgreeProb   = 0.3
	DefaultTailMult    = 10
	DefaultRetryAfter  = time.Second
	DefaultHangMax     = 10 * time.Minute
)

// Options configure a simulated server. Every field maps to one serve-sim
// flag. Zero values mean the documented defaults.
type Options struct {
	// Model is the served base model name (default "sim-policy").
	Model string
	// JudgeModel is the judge's name in chat completions (default
	// "sim-judge"); chat completions accept any model name.
	JudgeModel string
	// MaxModelLen is the context length reported and enforced (default 32768).
	MaxModelLen int
	// AgreeProb is the chance a scripted agent agrees on a turn when neither
	// rule forces it (default 0.3; negative means never): the disposition
	// of the simulated model a game's agreement protocol reads
	// (scripted.Model.AgreeProb, seed 000's deliberation Speaker).
	AgreeProb float64
	// AdapterAgreeProb is AgreeProb for completions served by a LoRA adapter
	// (default AgreeProb+0.3, at most 1; negative means never).
	AdapterAgreeProb float64
	// Tokenizer, when set, is a served model's tokenizer.json or model
	// folder: the server's token ids are that model's (LoadTokenizer), so
	// a trainer on the model can train on them. Empty: the built-in
	// vocabulary with Qwen's special token ids.
	Tokenizer string
	// Template is the chat template of /tokenize and chat completions:
	// TemplateChatML (the default) or TemplateQwen3, which renders exactly
	// as Qwen3's template does (so re-rendering a conversation breaks the
	// prefix its turns were sampled from) and whose agents, when thinking
	// is enabled, open each reply with a <think> block.
	Template string
	// EngineDiesAfter, when positive, kills the simulated engine after that
	// many completion requests, as vLLM 0.32's CPU engine dies on a seeded,
	// chunked prefill: every later completion and chat completion gets
	// vLLM's 500 "EngineCore encountered an issue", /health answers 503,
	// and /tokenize and /v1/models keep working (they need no engine).
	EngineDiesAfter int
	// LegacyErrors answers errors in the older flat shape
	// {"object":"error","message",...} instead of {"error":{...}}.
	LegacyErrors bool
	// NoTokenIDs emulates vLLM < 0.10.2, which silently ignores
	// return_token_ids: choices then carry no token_ids or prompt_token_ids.
	NoTokenIDs bool
	// APIKey, when set, is required as "Authorization: Bearer <key>" on
	// /v1/* paths (vLLM's --api-key); other paths stay open.
	APIKey string
	// RequireLoRAPath makes /v1/load_lora_adapter check that lora_path
	// exists on this machine (404 otherwise, as vLLM answers).
	RequireLoRAPath bool
	// PrefixCacheBlocks is the capacity, in 16-token blocks, of the
	// prefix-cache model (vLLM's automatic prefix caching, per model or
	// adapter, least recently used out): zero is DefaultPrefixCacheBlocks,
	// negative disables it. /metrics reports vllm:prefix_cache_queries_total
	// and vllm:prefix_cache_hits_total in tokens, as vLLM does.
	PrefixCacheBlocks int
	// PrefillTokenLatency is added to a completion per prompt token not
	// served from the prefix cache (the prefill it computes).
	PrefillTokenLatency time.Duration
	// MaxConcurrent bounds the completions and chat completions served at
	// once; requests above it wait and count as waiting in /metrics.
	// Zero means unbounded.
	MaxConcurrent int

	// LatencyMedian and LatencySigma give the lognormal latency of
	// completions and chat completions: median * exp(sigma * N(0,1)).
	LatencyMedian time.Duration
	LatencySigma  float64
	// TailProb is the chance a request's latency is multiplied by TailMult
	// (default 10).
	TailProb float64
	TailMult float64
	// ParetoAlpha, when positive, multiplies each completion's latency by
	// a Pareto draw of that shape and scale 1 (capped at ParetoCap): a
	// share x^-alpha of turns take x times longer, the heavy-tailed turn
	// lengths of long generations (1.5: mean 3, 3 % over 10×).
	ParetoAlpha float64
	// PerTokenLatency is added per generated token (longest choice) to
	// completions.
	PerTokenLatency time.Duration
	// TokenizeLatency is the lognormal median latency of /tokenize and
	// /detokenize (same sigma, no tail).
	TokenizeLatency time.Duration

	// Transport faults, each a per-request probability; they apply to
	// /tokenize, /detokenize, /v1/completions and /v1/chat/completions, and
	// their sum must not exceed 1.
	// ErrorRate answers 500, 502 or 503 with a vLLM error body.
	ErrorRate float64
	// RateLimitRate answers 429 with a Retry-After header.
	RateLimitRate float64
	// HangRate holds the request until the client goes away or HangMax.
	HangRate float64
	// DropRate closes the connection without a response.
	DropRate float64
	// RetryAfter is the Retry-After of 429 answers, rounded up to whole
	// seconds (default 1s).
	RetryAfter time.Duration
	// HangMax caps a hang (default 10m); the request then gets a 504.
	HangMax time.Duration
	// FaultSeed seeds the fault and latency draws, which are independent of
	// the content: a run with faults gives the same outputs as a clean run.
	FaultSeed int64

	// Judge misbehaviour, each a per-request probability on judge replies:
	// content that is not JSON (truncated), a score of 7 (winner "C"), or a
	// refusal sentence.
	JudgeMalformedRate  float64
	JudgeOutOfRangeRate float64
	JudgeRefusalRate    float64
	// JudgeGroupFault makes the group judge (requests of schema
	// SchemaCAGroup, or plain ones showing "### Solution <label>:"
	// sections) answer every group badly: one of GroupFaults (a missing,
	// repeated, out-of-range or unknown label, or a bias for the
	// solution shown first). Empty: it answers one score per label.
	JudgeGroupFault string
	// JudgeDiverge makes the single-score judge score 6 minus its
	// Collective Agency score: an audit judge (judge.audit) that disagrees
	// with a training judge served by another serve-sim, its mean falling
	// as the training judge's rises.
	JudgeDiverge bool
	// AdapterCAGain, when positive, makes each LoRA adapter loaded after
	// the first write more Collective-Agency sentences than the one before
	// (its bias grows by this per adapter, up to AdapterCABiasMax): a
	// simulated learner whose training reward keeps rising.
	AdapterCAGain float64

	// Games answer their own prompts (their agents' replies, their judges'
	// verdicts) before the persona agents and the built-in judge, in
	// order: serve-sim gives every registered game's (rollout.Spec.Sim).
	// Nil means none: every prompt gets a persona agent or the built-in
	// judge.
	Games []Answerer

	// Weights, when set, is a folder of safetensors weights the simulated
	// engine starts with and turns on vLLM's RL routes (VLLM_SERVER_DEV_MODE=1):
	// /pause, /resume, /is_paused, /collective_rpc reload_weights,
	// /update_weight_version, /weight_info, /weight_checker and
	// /reset_prefix_cache. Its checksums are vLLM's for a model whose
	// parameters are the folder's tensors (no fusion, no padding).
	Weights string

	// Repacked names tensors of Weights whose /weight_checker checksum is
	// that of no bytes (weights.EmptyDigest), as vLLM's CPU build reports
	// the linear layers it repacks for its kernels: a client cannot check
	// them. RLState still reports their real checksums.
	Repacked []string

	// Logger receives request errors; nil means no logging.
	Logger *zap.Logger
}

// withDefaults returns o with zero fields replaced by their defaults, or an
// error naming the first invalid field.
func (o Options) withDefaults() (Options, error) {
	if o.Model == "" {
		o.Model = DefaultModel
	}
	if o.JudgeModel == "" {
		o.JudgeModel = DefaultJudgeModel
	}
	if o.MaxModelLen == 0 {
		o.MaxModelLen = DefaultMaxModelLen
	}
	switch {
	case o.AgreeProb == 0:
		o.AgreeProb = DefaultAgreeProb
	case o.AgreeProb < 0:
		o.AgreeProb = 0
	}
	switch {
	case o.AdapterAgreeProb == 0:
		o.AdapterAgreeProb = min(o.AgreeProb+0.3, 1)
	case o.AdapterAgreeProb < 0:
		o.AdapterAgreeProb = 0
	}
	if o.Template == "" {
		o.Template = TemplateChatML
	}
	if o.TailMult == 0 {
		o.TailMult = DefaultTailMult
	}
	if o.RetryAfter == 0 {
		o.RetryAfter = DefaultRetryAfter
	}
	if o.HangMax == 0 {
		o.HangMax = DefaultHangMax
	}
	if o.PrefixCacheBlocks == 0 {
		o.PrefixCacheBlocks = DefaultPrefixCacheBlocks
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	var errs []error
	check := func(name string, bad bool) {
		if bad {
			errs = append(errs, fmt.Errorf("invalid %s", name))
		}
	}
	prob := func(p float64) bool { return p < 0 || p > 1 || p != p }
	check("Template (must be "+TemplateChatML+" or "+TemplateQwen3+")", o.Template != TemplateChatML && o.Template != TemplateQwen3)
	check("EngineDiesAfter (must not be negative)", o.EngineDiesAfter < 0)
	check("MaxModelLen (must be positive)", o.MaxModelLen < 0)
	check("AgreeProb (must be at most 1)", o.AgreeProb > 1)
	check("AdapterAgreeProb (must be at most 1)", o.AdapterAgreeProb > 1)
	check("AdapterCAGain (must not be negative)", o.AdapterCAGain < 0)
	check("MaxConcurrent (must not be negative)", o.MaxConcurrent < 0)
	check("PrefillTokenLatency (must not be negative)", o.PrefillTokenLatency < 0)
	check("LatencyMedian (must not be negative)", o.LatencyMedian < 0)
	check("LatencySigma (must not be negative)", o.LatencySigma < 0)
	check("TailProb (must be in [0,1])", prob(o.TailProb))
	check("TailMult (must be positive)", o.TailMult < 0)
	check("ParetoAlpha (must not be negative)", o.ParetoAlpha < 0)
	check("PerTokenLatency (must not be negative)", o.PerTokenLatency < 0)
	check("TokenizeLatency (must not be negative)", o.TokenizeLatency < 0)
	check("ErrorRate (must be in [0,1])", prob(o.ErrorRate))
	check("RateLimitRate (must be in [0,1])", prob(o.RateLimitRate))
	check("HangRate (must be in [0,1])", prob(o.HangRate))
	check("DropRate (must be in [0,1])", prob(o.DropRate))
	check("ErrorRate+RateLimitRate+HangRate+DropRate (must not exceed 1)",
		o.ErrorRate+o.RateLimitRate+o.HangRate+o.DropRate > 1+1e-9)
	check("RetryAfter (must not be negative)", o.RetryAfter < 0)
	check("HangMax (must be positive)", o.HangMax < 0)
	check("JudgeMalformedRate (must be in [0,1])", prob(o.JudgeMalformedRate))
	check("JudgeOutOfRangeRate (must be in [0,1])", prob(o.JudgeOutOfRangeRate))
	check("JudgeRefusalRate (must be in [0,1])", prob(o.JudgeRefusalRate))
	check("JudgeGroupFault (must be empty or one of "+strings.Join(GroupFaults, ", ")+")",
		o.JudgeGroupFault != "" && !slices.Contains(GroupFaults, o.JudgeGroupFault))
	for i, g := range o.Games {
		check(fmt.Sprintf("Games[%d] (nil)", i), g == nil)
	}
	check("JudgeMalformedRate+JudgeOutOfRangeRate+JudgeRefusalRate (must not exceed 1)",
		o.JudgeMalformedRate+o.JudgeOutOfRangeRate+o.JudgeRefusalRate > 1+1e-9)
	return o, errors.Join(errs...)
}
