// Package config defines parley's one typed configuration, its defaults, its
// strict loading (a YAML file, then PARLEY_* environment variables, then
// flags) and its validation. Errors name the file, line and key path.
package config

import (
	"fmt"
	"strings"
	"time"

	"github.com/parleyhq/parley/curriculum"
	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/internal/textfile"
	"github.com/parleyhq/parley/reward"
	"github.com/parleyhq/parley/rollout"
	"gopkg.in/yaml.v3"
)

// Config is the whole of a parley run's configuration.
type Config struct {
	Run        Run        `yaml:"run"`
	Policy     Policy     `yaml:"policy"`
	Sampling   Sampling   `yaml:"sampling"`
	Game       Game       `yaml:"game"`
	Curriculum Curriculum `yaml:"curriculum"`
	Rollout    Rollout    `yaml:"rollout"`
	// Roles maps a game role to what plays it when not the trained policy.
	Roles     map[string]RoleModel `yaml:"roles"`
	Judge     Judge                `yaml:"judge"`
	Generator Generator            `yaml:"generator"`
	GRPO      GRPO                 `yaml:"grpo"`
	Train     Train                `yaml:"train"`
	Trainer   Trainer              `yaml:"trainer"`
	Log       Log                  `yaml:"log"`

	// given holds the key paths the file, the environment or flags set
	// (Given); the others hold defaults.
	given map[string]bool
	// origin names, per key path set, where its value came from: the
	// file and the line ("configs/x.yaml:12"), a flag ("flag --run.seed")
	// or an environment variable; validation errors start with it.
	origin map[string]string
	// file is the config file's path ("" for none): the origin of a
	// validation error of a key the file does not set.
	file string
}

// Given reports whether key (a key path such as policy.endpoints, or a
// section such as judge) was set by the config file, a PARLEY_* variable
// or a flag, rather than left at its default.
func (c Config) Given(key string) bool {
	if c.given[key] {
		return true
	}
	for k := range c.given {
		if strings.HasPrefix(k, key+".") {
			return true
		}
	}
	return false
}

// Run names the run and fixes its seed.
type Run struct {
	// Name is the run's name: its directory is Dir/Name.
	Name string `yaml:"name"`
	// Dir is the parent directory of run directories.
	Dir string `yaml:"dir"`
	// Seed seeds curriculum order and sampling seeds.
	Seed int64 `yaml:"seed"`
}

// Policy is the policy inference server (vLLM or a stand-in).
type Policy struct {
	// Endpoints are base URLs of the vLLM servers (replicas are balanced), or one router's URL; dns+http://NAME:PORT is every address NAME resolves to (a headless Service), resolved again every resolve_interval.
	Endpoints []string `yaml:"endpoints"`
	// Model is the served model name (vLLM's --served-model-name).
	Model string `yaml:"model"`
	// APIKeyEnv names the environment variable holding vLLM's --api-key, if any.
	APIKeyEnv string `yaml:"api_key_env"`
	// MaxConcurrentPerEndpoint bounds in-flight requests per endpoint.
	MaxConcurrentPerEndpoint int `yaml:"max_concurrent_per_endpoint"`
	// RequestTimeout bounds one attempt of one request.
	RequestTimeout time.Duration `yaml:"request_timeout"`
	// MaxRetries is how many times a failed request is retried.
	MaxRetries int `yaml:"max_retries"`
	// HealthInterval is the period of background health checks (0: off).
	HealthInterval time.Duration `yaml:"health_interval"`
	// SessionHeader is the header that carries each completion's session id (rollout id/role) for a router in front of vLLM (vllm-router, llm-d); "" sends none.
	SessionHeader string `yaml:"session_header"`
	// SessionBound is ε of dialogue-affine routing: a session leaves its endpoint when it is down, holds more than ceil((1+ε)·mean) sessions, or is saturated past ceil((1+ε)·mean) outstanding requests (negative: no affinity, every request to the least-loaded endpoint).
	SessionBound float64 `yaml:"session_bound"`
	// ResolveInterval is how often dns+ endpoints are resolved again, adding and retiring replicas, and lost endpoints (an adapter load could not reach them) are asked to come back.
	ResolveInterval time.Duration `yaml:"resolve_interval"`
	// EnableThinking sets Qwen3's chat_template_kwargs.enable_thinking.
	EnableThinking bool `yaml:"enable_thinking"`
}

// Sampling holds the policy's sampling parameters for rollouts.
type Sampling struct {
	// Temperature is the sampling temperature (0: greedy).
	Temperature float64 `yaml:"temperature"`
	// TopP is nucleus sampling's probability mass (1: off).
	TopP float64 `yaml:"top_p"`
	// TopK keeps the k likeliest tokens (0: off; sent to vLLM as -1, so
	// that its generation-config defaults cannot change the sampling the
	// trainer assumes).
	TopK int `yaml:"top_k"`
	// MaxTokens bounds each negotiation turn.
	MaxTokens int `yaml:"max_tokens"`
	// FinalMaxTokens bounds the final completion (and the single-agent answer).
	FinalMaxTokens int `yaml:"final_max_tokens"`
}

// Curriculum is where prompt rows come from and how they are mixed.
type Curriculum struct {
	// Path is a JSONL or parquet file of prompts, or a bundled curriculum
	// (builtin:dilemmas, builtin:open-ended, or a game's own such as
	// builtin:endowment or builtin:2hb2g). When it is not given, the
	// configured game's default curriculum is used (builtin:dilemmas for
	// deliberation).
	Path string `yaml:"path"`
	// Personas is a JSONL or parquet persona-pair library ("" = the built-in 25).
	Personas string `yaml:"personas"`
	// Mix weighs categories when sampling rows (empty = as in the file).
	Mix map[string]float64 `yaml:"mix"`
	// Split keeps only rows of this split: train (rows without a split are
	// train rows), eval (held out), or "" for every row. parley train
	// refuses eval rows.
	Split string `yaml:"split"`
	// Sampler draws a training step's rows within their categories:
	// uniform (the default), or adaptive, which prefers the rows whose
	// recent groups' rewards still spread (the policy can learn from
	// them), keeps an exploration floor, and rests for a cool-down the
	// rows whose groups keep coming back with equal rewards (solved or
	// hopeless). The categories keep their mix either way.
	Sampler string `yaml:"sampler"`
	// Adaptive tunes the adaptive sampler.
	Adaptive AdaptiveCurriculum `yaml:"adaptive"`
}

// The curriculum samplers (curriculum.sampler).
const (
	SamplerUniform  = "uniform"
	SamplerAdaptive = "adaptive"
)

// AdaptiveCurriculum tunes curriculum.sampler: adaptive.
type AdaptiveCurriculum struct {
	// Floor is the draw weight every row keeps besides its reward spread
	// (its mean spread over the largest any row has; a row never drawn
	// weighs 1 + floor, the most).
	Floor float64 `yaml:"floor"`
	// Window is how many of a row's latest groups its statistics keep.
	Window int `yaml:"window"`
	// RetireAfter is how many groups in a row of equal rewards rest a row,
	// and Cooldown for how many steps.
	RetireAfter int `yaml:"retire_after"`
	Cooldown    int `yaml:"cooldown"`
}

// RoleModel names what plays one role of the game (roles.<role>): the
// trained policy (the default for every role not listed), the frozen base
// model or a fixed adapter on policy.endpoints, another vLLM server, or an
// external OpenAI-compatible chat model. Only the trained policy's roles go
// into training batches.
type RoleModel struct {
	// Policy is trained, base, adapter, endpoint, external, scripted (the
	// game plays the role itself), pool or league.
	Policy dataset.PolicyKind `yaml:"policy"`
	// Model is the adapter (adapter), the served model (endpoint) or the
	// external model name (external).
	Model string `yaml:"model"`
	// AdapterPath is where an adapter is loaded from, as the inference
	// server sees it; empty when the adapter is already loaded.
	AdapterPath string `yaml:"adapter_path"`
	// Endpoints are the other server's base URLs (endpoint).
	Endpoints []string `yaml:"endpoints"`
	// BaseURL is the external model's OpenAI-compatible API (external).
	BaseURL string `yaml:"base_url"`
	// APIKeyEnv names the environment variable holding that server's key.
	APIKeyEnv string `yaml:"api_key_env"`
	// Pool lists the opponents of policy pool: each group of rollouts
	// draws one of them (base, adapter, endpoint, external or scripted),
	// so a group holds one opponent and its advantages compare like with
	// like.
	Pool []RoleModel `yaml:"pool"`
	// League configures policy league: the pool's agents (frozen) plus the
	// run's own past adapters, one member drawn per group and rated as it
	// plays (Glicko-2); the league after each step is RUN/league/step-N.json.
	League League `yaml:"league"`
}

// League configures a role's league (roles.<role>.league).
type League struct {
	// SnapshotEvery is K: the run's adapter of every step j with j % K == 0
	// (and the base model, version 0) joins the league once the policy
	// that samples has reached it (default 1).
	SnapshotEvery int `yaml:"snapshot_every"`
	// Draw is how a group's member is drawn: uniform (the default), latest
	// (the newest snapshot) or pfsp (prioritized fictitious self-play:
	// weight (1 − p)^pfsp_power, p the trained policy's estimated win
	// probability against the member, from the ratings).
	Draw string `yaml:"draw"`
	// PFSPPower is pfsp's exponent (default 2, AlphaStar's hard opponents).
	PFSPPower float64 `yaml:"pfsp_power"`
	// MaxLoaded bounds the league's adapters loaded at once on the policy
	// endpoints (default 4); the least recently drawn beyond it are
	// unloaded. Keep it below the server's --max-loras less the two the
	// trained policy's adapter swap needs.
	MaxLoaded int `yaml:"max_loaded"`
}

// Rollout sizes the sampling of groups.
type Rollout struct {
	// GroupSize is G, the rollouts per prompt row.
	GroupSize int `yaml:"group_size"`
	// PromptsPerStep is the number of prompt rows per training step.
	PromptsPerStep int `yaml:"prompts_per_step"`
	// Concurrency bounds the dialogues in flight.
	Concurrency int `yaml:"concurrency"`
	// History is how an agent's conversation carries from one of its turns
	// to the next. tokens (the default): its training sequence is its first
	// rendered prompt, then its sampled tokens verbatim and, for each new
	// message, only the bridge tokens the server renders — one sequence per
	// agent, whatever the chat template does to earlier turns. rerender:
	// render the whole conversation every turn and start a new sequence
	// when it does not extend the last (Qwen3's template strips the think
	// blocks of earlier turns, so every later turn breaks: counted as
	// prefix_breaks, and the trainer processes the history again each time).
	History string `yaml:"history"`
}

// Judge is the reward model.
type Judge struct {
	// Kind is ca (the Collective Agency rubric judge, an LLM), rule (a
	// rule scorer), game (the game's own scorer) or python (a Python
	// function, judge.python).
	Kind reward.JudgeKind `yaml:"kind"`
	// ChatEndpoint is the judge's API (an LLM judge's, and the judge a
	// game consults during play).
	ChatEndpoint `yaml:",inline"`
	// Rule configures the rule scorer when Kind is rule.
	Rule Rule `yaml:"rule"`
	// RationaleMaxChars, when positive, bounds the CA judge's rationale
	// (each member's in group mode) in the structured-output schema (JSON
	// schema maxLength), so that a small
	// judge served by vLLM cannot write its rationale until the token limit
	// cuts off the score. OpenAI's strict structured output refuses
	// maxLength: leave 0 (unbounded) there. Needs structured_output.
	RationaleMaxChars int `yaml:"rationale_max_chars"`
	// Mode is pointwise (one request per rollout, the default) or group
	// (one request per group: the group's finals in a seeded shuffled
	// order under neutral labels, one score each, as ART's RULER does; a
	// reply that does not score every member exactly once fails the whole
	// group). Group needs an LLM rubric judge (kind ca).
	Mode string `yaml:"mode"`
	// PositionCheck is the share of groups (0 to 1, drawn by seed) that
	// group mode re-scores in reversed order to measure position bias:
	// the step metric judge_position_moved is the share of their scores
	// that moved (0: none).
	PositionCheck float64 `yaml:"position_check"`
	// Python configures the Python judge when Kind is python.
	Python PythonJudge `yaml:"python"`
	// Price is what the judge's API charges; unset (both zero), parley
	// train writes no cost keys.
	Price Price `yaml:"price"`
	// Gold is a fixed gold set the judge scores again every few steps of
	// parley train, to see the judge change under the run.
	Gold Gold `yaml:"gold"`
	// Audit is a second judge that scores a sample of each step's finals
	// beside training (parley train), to watch the training judge.
	Audit Audit `yaml:"audit"`
}

// Audit is the audit judge of parley train: the evaluation judge (seed
// 000: GPT-5.2 audits GPT-4o-mini) scoring, with the Collective Agency
// rubric, a seeded sample of each step's judged final completions beside
// training, never blocking it. Each audited step gets its record
// (RUN/audit/step-N.json) and a metrics line {"kind": "audit"}: both
// judges' mean score and their agreement (seed 000's table 7: exact, ±1,
// Pearson, quadratic kappa). Its failures (down, rate-limited, garbage)
// are counted per step and warned once per cause; they never fail a step.
//
// The over-optimisation alarm (Gao et al., 2022) compares the newer half
// of the last AlarmWindow audited steps with the older half: it fires when
// the training judge's mean score rose by at least AlarmThreshold while
// the audit judge's fell by at least as much. The defaults, 6 steps and
// 0.3 rubric points: with the default 16 audited finals a step and a
// score spread near 1 point, a half-window mean (48 finals) has a
// standard error near 0.14, so a 0.3 move is about 1.5 standard errors of
// the difference each way; both at once, in opposite directions, happen by
// chance well under 1% of the time without a trend, while a real
// divergence of 0.1 point a step trips it within a window.
type Audit struct {
	// ChatEndpoint is the audit judge's API: its own base_url, model,
	// api_key_env, concurrency, limits, retries and timeout.
	ChatEndpoint `yaml:",inline"`
	// Share is the share (0 to 1) of each step's judged rollouts the audit
	// judge scores, drawn by seed (run.seed and the step), at least one;
	// 0, the default, audits nothing.
	Share float64 `yaml:"share"`
	// AlarmWindow is the number of audited steps the alarm compares (its
	// older half with its newer half): even, at least 2.
	AlarmWindow int `yaml:"alarm_window"`
	// AlarmThreshold is the rise of the training judge's mean score, and
	// the fall of the audit judge's, in score points, that together fire
	// the alarm.
	AlarmThreshold float64 `yaml:"alarm_threshold"`
}

// On reports whether the audit judge is configured.
func (a Audit) On() bool { return a.Share > 0 }

// Gold is a fixed set of final completions with the scores the judge
// first gave them, scored again every Every steps: a score that moves
// means the judge changed under the run (an API model update, a new
// system fingerprint, a changed prompt). The step keys judge/gold_* say
// how many moved, and the run warns once naming them.
type Gold struct {
	// Path is the gold set, a JSONL file: one item a line, {"id", "task",
	// "final", "personas" (optional, [{"role", "text"}]), "score"}.
	Path string `yaml:"path"`
	// Every is K: the judge scores the gold set again at every K-th step
	// (0: never, the default).
	Every int `yaml:"every"`
}

// PythonJudge configures a Python reward function (judge.kind: python),
// run in a long-lived worker process (python -m
// parley_tools.reward_worker) called in batches. The function takes one
// rollout as `parley export --format jsonl` writes it, plus "roles" (its
// roles' names), and returns a number or a dict of role name to number.
type PythonJudge struct {
	// Function is the reward function, module:function (e.g.
	// parley_tools.rewards_example:keyword_length).
	Function string `yaml:"function"`
	// Interpreter is the Python that runs it, with parley_tools installed
	// (empty: $PARLEY_PYTHON, else .venv/bin/python, else python3).
	Interpreter string `yaml:"interpreter"`
	// Path lists directories put first on the worker's sys.path (the
	// current directory is on it too).
	Path []string `yaml:"path"`
	// BatchSize bounds the rollouts per call (at most judge.concurrency
	// are waiting at once).
	BatchSize int `yaml:"batch_size"`
	// Timeout bounds one batch (and the worker's start); a batch past it
	// fails, as judge failures, and its worker is killed and restarted.
	Timeout time.Duration `yaml:"timeout"`
	// Min and Max are the range of the function's scores; a score outside
	// it is a judge failure.
	Min float64 `yaml:"min"`
	Max float64 `yaml:"max"`
}

// Price is a chat API's price per million tokens, in the currency of the
// bill (the metrics call it usd): the cost of a step is its prompt tokens
// times Input plus its completion tokens times Output, over a million.
// Cached prompt tokens are charged at Input (an upper bound where the API
// discounts them).
type Price struct {
	// Input is the price of a million prompt (input) tokens.
	Input float64 `yaml:"input"`
	// Output is the price of a million completion (output) tokens.
	Output float64 `yaml:"output"`
}

// Set reports whether a price was given.
func (p Price) Set() bool { return p.Input != 0 || p.Output != 0 }

// Cost is the price of prompt and completion tokens.
func (p Price) Cost(prompt, completion int64) float64 {
	return (float64(prompt)*p.Input + float64(completion)*p.Output) / 1e6
}

// Generator is the LLM that writes curricula (parley curriculum generate):
// any OpenAI-compatible chat endpoint, and the checks its prompts pass.
type Generator struct {
	// ChatEndpoint is the generator's API.
	ChatEndpoint `yaml:",inline"`
	// Temperature is the sampling temperature of generation requests
	// (checks of generated persona pairs are asked at 0).
	Temperature float64 `yaml:"temperature"`
	// MaxTokens bounds each generator reply.
	MaxTokens int `yaml:"max_tokens"`
	// BatchSize is the number of prompts asked for per request.
	BatchSize int `yaml:"batch_size"`
	// MinWords and MaxWords bound the length of an accepted prompt.
	MinWords int `yaml:"min_words"`
	MaxWords int `yaml:"max_words"`
	// NearDupThreshold rejects a prompt whose word 3-shingle Jaccard
	// similarity to an accepted one is at least this (1: exact duplicates only).
	NearDupThreshold float64 `yaml:"near_dup_threshold"`
	// EvalFraction is the share of prompts marked split "eval" (held out).
	EvalFraction float64 `yaml:"eval_fraction"`
	// Mix weighs the dilemma categories (empty: seed 000's 30/40/30 over
	// professional, interpersonal, micro_ethics).
	Mix map[string]float64 `yaml:"mix"`
}

// Rule configures a rule scorer.
type Rule struct {
	// Kind is keywords (the share of Keywords present), keyword_share (the
	// share of the final's words that are keywords), length, agreement or
	// target_word.
	Kind string `yaml:"kind"`
	// Keywords are counted in the final completion (keywords kind).
	Keywords []string `yaml:"keywords"`
	// TargetLength is the target length in words (length kind).
	TargetLength int `yaml:"target_length"`
	// TargetWord is the word whose share of the final's words is the
	// score (target_word kind).
	TargetWord string `yaml:"target_word"`
	// AgreementWeight mixes the dialogue's agreement into the rule's
	// score: (1 − w)·rule + w·(1 if the agents agreed, else 0), so that the
	// reward values agreement as well as words (0: off; not with the
	// agreement kind).
	AgreementWeight float64 `yaml:"agreement_weight"`
}

// GRPO sets the advantage and mask modes.
type GRPO struct {
	// Advantage is group, group_mean or role_baseline.
	Advantage string `yaml:"advantage"`
	// Epsilon is added to the std in group mode.
	Epsilon float64 `yaml:"epsilon"`
	// KeepZeroVariance keeps groups whose rewards are all equal (dropped by default).
	KeepZeroVariance bool `yaml:"keep_zero_variance"`
	// BaselineMomentum is the EMA momentum of role_baseline.
	BaselineMomentum float64 `yaml:"baseline_momentum"`
	// Mask is dialogue, dialogue+final or final.
	Mask string `yaml:"mask"`
}

// The ways a run samples (train.sampling).
const (
	SamplingStream = "stream"
	SamplingStep   = "step"
)

// Train drives the training loop and the trainer handshake.
type Train struct {
	// Steps is the number of training steps.
	Steps int `yaml:"steps"`
	// MaxStaleness is how many steps sampling runs ahead of training: 0 is
	// strictly on-policy, k samples step N+k while step N trains.
	MaxStaleness int `yaml:"max_staleness"`
	// MaxOffPolicySteps, when positive, drops (and counts in
	// rollouts_dropped_off_policy) the rollouts sampled by a policy more
	// than that many steps older than the one their batch trains (step N
	// trains step N-1's); 0 drops none.
	MaxOffPolicySteps int `yaml:"max_off_policy_steps"`
	// Sampling is how a run with max_staleness ≥ 1 samples: stream (the
	// default) plays groups continuously, each judged as it completes,
	// and each step's batch takes the first groups done whose policy is
	// at most max_staleness steps older than the one it trains, so the
	// inference server never waits for a step's stragglers; step samples
	// step by step, as max_staleness 0 always does, which reproduces a
	// run's batches exactly. Series training keeps prompts_per_step ×
	// (1 + max_staleness) series in flight, each playing one game at a
	// time; league roles draw their member as each group starts.
	Sampling string `yaml:"sampling"`
	// DynamicSampling (DAPO's dynamic sampling) judges each group as it
	// completes and keeps drawing prompt rows until the step's batch holds
	// rollout.prompts_per_step groups whose advantages are not all zero,
	// so that no step trains on nothing; the groups of equal rewards stay
	// in the rollouts, untrained. It applies where such groups train
	// nothing (grpo.advantage group or group_mean without
	// keep_zero_variance), and with series training or league roles only
	// when the run streams; elsewhere it is off, and the log says why.
	DynamicSampling bool `yaml:"dynamic_sampling"`
	// ServingSampleEvery is how often the policy servers' requests running
	// (vllm:num_requests_running) are read for the step lines
	// (policy/server_running_mean, _min); 0 reads none.
	ServingSampleEvery time.Duration `yaml:"serving_sample_every"`
	// OversampleMax caps dynamic sampling: at most this many groups a step
	// per group the batch asks for (at least 1). A step that reaches it
	// trains the informative groups it has, with a warning.
	OversampleMax float64 `yaml:"oversample_max"`
	// Handshake is file or http.
	Handshake string `yaml:"handshake"`
	// HTTPAddr is the handshake server's listen address (loopback by default).
	HTTPAddr string `yaml:"http_addr"`
	// MetricsAddr, if set (host:port), serves Prometheus metrics of the
	// run at http://MetricsAddr/metrics: steps, rollouts in flight and by
	// outcome, judge latency and failures, policy requests and retries,
	// and every numeric metric of the last step. "" serves none.
	MetricsAddr string `yaml:"metrics_addr"`
	// TokenEnv names the environment variable holding the handshake bearer token.
	TokenEnv string `yaml:"token_env"`
	// TrainerTimeout bounds the wait for one step's DONE.
	TrainerTimeout time.Duration `yaml:"trainer_timeout"`
	// TrainerCommand, if set, is started by parley and stopped when it exits.
	TrainerCommand []string `yaml:"trainer_command"`
	// ServerCommand, if set, starts the inference server (the quickstart: vLLM
	// on the tiny model, python -m parley_trainer.serve_vllm).
	ServerCommand []string `yaml:"server_command"`
	// AdapterPrefix names loaded LoRA adapters: <prefix>-<step>.
	AdapterPrefix string `yaml:"adapter_prefix"`
	// EvalEvery evaluates the adapter of every N-th step (0: never): it
	// plays the curriculum's eval split against the base model, greedy,
	// compared by the run's judge (an LLM judge pairwise in both orders, a
	// rule by its scores), beside training; results go to
	// RUN/evals/step-N.json, metrics.jsonl and parley report.
	EvalEvery int `yaml:"eval_every"`
	// CrossPlayEvery plays cross-play among the run's checkpoints every N
	// steps (0: never), beside training, as parley league crossplay does
	// (the checkpoints up to the step, both seats, the game's own scorer or the run's judge;
	// RUN/crossplay/step-N/report.md), on CrossPlayEndpoint: a vLLM server
	// of its own serving policy.model, so that weight updates never abort
	// its games.
	CrossPlayEvery    int    `yaml:"crossplay_every"`
	CrossPlayEndpoint string `yaml:"crossplay_endpoint"`
	// MaxFailedFraction fails a step whose rollouts failed (sampling or
	// judging) beyond this share, instead of training on what is left.
	MaxFailedFraction float64 `yaml:"max_failed_fraction"`
	// ServerStartTimeout bounds the wait for train.server_command's health.
	ServerStartTimeout time.Duration `yaml:"server_start_timeout"`
	// WeightSync is how full weights (trainer.full_finetune) reach the
	// inference endpoints.
	WeightSync WeightSync `yaml:"weight_sync"`
}

// Weight transfers (train.weight_sync.transfer).
const (
	TransferDisk = "disk"
	TransferNCCL = "nccl"
)

// Transfers lists the weight transfers.
var Transfers = []string{TransferDisk, TransferNCCL}

// WeightSync configures the full-weights update of every endpoint after
// each step through vLLM's RL API (served with VLLM_SERVER_DEV_MODE=1):
// pause, transfer, set the weight version to the step, verify the version
// and the checksums against the trainer's files, reset the prefix cache,
// resume.
type WeightSync struct {
	// Transfer is disk (every endpoint reloads the step's safetensors from
	// the run directory, which it must see at the same path) or nccl (the
	// trainer broadcasts the weights to every endpoint's workers; GPU
	// only, vLLM served with --weight-transfer-config '{"backend":"nccl"}').
	Transfer string `yaml:"transfer"`
	// PauseMode is POST /pause's mode: wait (requests in flight finish
	// first), abort, or keep (frozen, resumed on the new weights).
	PauseMode string `yaml:"pause_mode"`
	// ReloadTimeout bounds one endpoint's reload from disk.
	ReloadTimeout time.Duration `yaml:"reload_timeout"`
	// ProbeTolerance bounds the mean absolute difference of the probe's
	// logprobs (the trainer's probe.json beside each step's weights) between
	// the trainer and every endpoint after an update: the check that the
	// engine computes with the weights whose checksums match.
	ProbeTolerance float64 `yaml:"probe_tolerance"`
	// NCCLAddr is the host:port of the NCCL rendezvous the trainer opens
	// (transfer nccl): an address every endpoint's workers reach.
	NCCLAddr string `yaml:"nccl_addr"`
}

// Names is a list of names that YAML may also give as one scalar, itself
// a comma list: "report_to: wandb" is "report_to: [wandb]".
type Names []string

// UnmarshalYAML reads a sequence of names, or one scalar split at commas.
func (n *Names) UnmarshalYAML(node *yaml.Node) error {
	if node.Kind != yaml.ScalarNode {
		var list []string
		if err := node.Decode(&list); err != nil {
			return err
		}
		*n = list
		return nil
	}
	var s string
	if err := node.Decode(&s); err != nil {
		return err
	}
	var out Names
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	*n = out
	return nil
}

// Log configures logging.
type Log struct {
	// Level is debug, info, warn or error.
	Level string `yaml:"level"`
	// Format is auto (console when stdout and stderr are terminals, else json), console or json.
	Format string `yaml:"format"`
}

// defaultEnv is the game a config plays when game.env is not given.
const defaultEnv = "deliberation"

// gameCurriculum is game env's default curriculum
// (rollout.Spec.Curriculum.Default), or "" for none.
func gameCurriculum(env string) string {
	s, _ := rollout.Lookup(env)
	return s.Curriculum.Default
}

// useGameCurriculum sets curriculum.path, when neither the file, the
// environment nor a flag gave it, to the configured game's default
// curriculum, if it has one.
func (c *Config) useGameCurriculum() {
	if c.given["curriculum.path"] {
		return
	}
	if p := gameCurriculum(c.Game.Env); p != "" {
		c.Curriculum.Path = p
	}
}

// Default returns the defaults every config starts from.
func Default() Config {
	return Config{
		Run: Run{Name: "run", Dir: "runs", Seed: 1},
		Policy: Policy{
			Endpoints:                []string{"http://127.0.0.1:8000"},
			Model:                    "sim-policy",
			MaxConcurrentPerEndpoint: 256,
			RequestTimeout:           120 * time.Second,
			MaxRetries:               8,
			SessionHeader:            "X-Session-ID",
			SessionBound:             0.25,
			ResolveInterval:          30 * time.Second,
		},
		Sampling: Sampling{Temperature: 1.0, TopP: 1.0, MaxTokens: 256, FinalMaxTokens: 512},
		Game:     defaultGame(defaultEnv),
		Curriculum: Curriculum{
			Path:    gameCurriculum(defaultEnv),
			Split:   "train",
			Sampler: SamplerUniform,
			Adaptive: AdaptiveCurriculum{Floor: curriculum.DefaultFloor, Window: curriculum.DefaultWindow,
				RetireAfter: curriculum.DefaultRetireAfter, Cooldown: curriculum.DefaultCooldown},
		},
		Rollout: Rollout{GroupSize: 8, PromptsPerStep: 16, Concurrency: 256, History: "tokens"},
		Judge: Judge{Kind: reward.JudgeCA, Mode: reward.ModePointwise, ChatEndpoint: ChatEndpoint{
			BaseURL: "https://api.openai.com/v1", Model: "gpt-4o-mini", APIKeyEnv: "OPENAI_API_KEY",
			Concurrency: 32, MaxRetries: 6, Timeout: 60 * time.Second, StructuredOutput: true,
		}, Python: PythonJudge{BatchSize: 32, Timeout: 60 * time.Second, Max: 1},
			Audit: Audit{ChatEndpoint: ChatEndpoint{APIKeyEnv: "OPENAI_API_KEY", Concurrency: 8, MaxRetries: 3,
				Timeout: 60 * time.Second, StructuredOutput: true}, AlarmWindow: 6, AlarmThreshold: 0.3}},
		Generator: Generator{
			ChatEndpoint: ChatEndpoint{BaseURL: "https://api.openai.com/v1", Model: "gpt-4o-mini", APIKeyEnv: "OPENAI_API_KEY",
				Concurrency: 8, MaxRetries: 6, Timeout: 120 * time.Second, StructuredOutput: true},
			Temperature: 1.0, MaxTokens: 4096, BatchSize: 5, MinWords: 15, MaxWords: 120, NearDupThreshold: 0.7,
			EvalFraction: 0.1,
		},
		GRPO: GRPO{Advantage: "group", Epsilon: 1e-6, BaselineMomentum: 0.9, Mask: "dialogue"},
		Train: Train{Steps: 100, Sampling: SamplingStream, DynamicSampling: true, OversampleMax: 3, ServingSampleEvery: 2 * time.Second, Handshake: "file", HTTPAddr: "127.0.0.1:0", TokenEnv: "PARLEY_HANDSHAKE_TOKEN", TrainerTimeout: 2 * time.Hour, AdapterPrefix: "parley", MaxFailedFraction: 0.5, ServerStartTimeout: 20 * time.Minute,
			WeightSync: WeightSync{Transfer: TransferDisk, PauseMode: "wait", ReloadTimeout: 30 * time.Minute, ProbeTolerance: 0.05}},
		Trainer: Trainer{
			LR: 1e-5, EpsilonLow: 0.2, EpsilonHigh: 0.28, Aggregation: "token_mean",
			LoRAR: 16, LoRAAlpha: 32, MicroBatchTokens: 8192, MaxGradNorm: 1.0,
			ReportTo: Names{ReportTensorBoard}, KeepStates: 2,
		},
		Log: Log{Level: "info", Format: "auto"},
	}
}

// ScoreScale is the scale of the scores the configured judge gives
// (judge.kind): the Collective Agency rubric's 1–5, a rule scorer's 0–1, or
// the game's own scorer's (rollout.Spec.ScoreScale). Exports, reports and
// charts label scores with it.
func (c Config) ScoreScale() dataset.ScoreScale {
	return c.Judge.Kind.Scale(reward.ScaleInputs{
		Rule:   reward.RuleOptions{Kind: c.Judge.Rule.Kind, AgreementWeight: c.Judge.Rule.AgreementWeight},
		Game:   c.gameScale(),
		Python: reward.PythonOptions{Function: c.Judge.Python.Function, Min: c.Judge.Python.Min, Max: c.Judge.Python.Max},
	})
}

// gameScale is the scale of the game's own scorer: its Spec's, else one
// named for the game.
func (c Config) gameScale() dataset.ScoreScale {
	spec, _ := rollout.Lookup(c.Game.Env)
	if spec.ScoreScale.IsZero() {
		return dataset.ScoreScale{Name: c.Game.Env + " score"}
	}
	return spec.ScoreScale
}

// ScoreScaleOf is the ScoreScale of a config file's YAML (a run's frozen
// config.yaml), read leniently over the defaults: keys this parley does not
// know, as an older or newer run's may hold, are ignored.
func ScoreScaleOf(data []byte) (dataset.ScoreScale, error) {
	cfg := Default()
	if err := yaml.Unmarshal(textfile.StripBOM(data), &cfg); err != nil {
		return dataset.ScoreScale{}, fmt.Errorf("config.ScoreScaleOf: %w", err)
	}
	return cfg.ScoreScale(), nil
}
