package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/grpo"
	"github.com/parleyhq/parley/league/draw"
	"github.com/parleyhq/parley/reward"
	"github.com/parleyhq/parley/rollout"
	"gopkg.in/yaml.v3"
)

// Enumerations this package owns (the others come from the packages that
// own them: rollout's games, grpo's advantage and mask modes, reward's
// rules, dataset's categories).
var (
	// HandshakeKinds are train.handshake's values.
	HandshakeKinds = []string{"file", "http"}
	// ReportTargets are trainer.report_to's values (HF Trainer's names).
	ReportTargets = []string{ReportTensorBoard, ReportWandb, ReportNone}
	// LogLevels and LogFormats are log.level's and log.format's values.
	LogLevels  = []string{"debug", "info", "warn", "error"}
	LogFormats = []string{"auto", "console", "json"}
)

// trainer.report_to's values.
const (
	ReportTensorBoard = "tensorboard"
	ReportWandb       = "wandb"
	ReportNone        = "none"
)

// checker collects validation problems, each naming its key path and
// where its value came from.
type checker struct {
	errs []error
	// origin and file are the config's (Config.origin, Config.file).
	origin map[string]string
	file   string
}

func (c *checker) bad(key, format string, args ...any) {
	c.add(key, fmt.Sprintf(format, args...))
}

// add records problem msg of key, after the key's origin: the file and
// line that set it (or the nearest key above it that the file sets, for
// an item of a list or a map), the flag or the environment variable; the
// file alone when nothing sets it.
func (c *checker) add(key, msg string) {
	where := c.file
	for k := key; k != ""; k = parentKey(k) {
		if o, ok := c.origin[k]; ok {
			where = o
			break
		}
	}
	if where != "" {
		c.errs = append(c.errs, fmt.Errorf("%s: key %s: %s", where, key, msg))
		return
	}
	c.errs = append(c.errs, fmt.Errorf("key %s: %s", key, msg))
}

// parentKey is the key path above key ("policy.endpoints" above
// "policy.endpoints[1]", "curriculum.mix" above "curriculum.mix.x"; "" at
// the top). A section is not a key's origin: run is above run.name, but a
// file that sets run and not run.name does not set run.name.
func parentKey(key string) string {
	if i := strings.LastIndex(key, "["); i > 0 && strings.HasSuffix(key, "]") {
		return key[:i]
	}
	return ""
}

// oneOf checks that key's value v is one of allowed.
func oneOf[T ~string](c *checker, key string, v T, allowed []T) {
	if !slices.Contains(allowed, v) {
		names := make([]string, len(allowed))
		for i, a := range allowed {
			names[i] = string(a)
		}
		c.bad(key, "%q is not one of %s", v, strings.Join(names, ", "))
	}
}

func (c *checker) positive(key string, v int) {
	if v <= 0 {
		c.bad(key, "must be positive, got %d", v)
	}
}

func (c *checker) nonNegative(key string, v int) {
	if v < 0 {
		c.bad(key, "must be zero or more, got %d", v)
	}
}

func (c *checker) inRange(key string, v, lo, hi float64, loOpen, hiOpen bool) {
	if (loOpen && v <= lo) || v < lo || (hiOpen && v >= hi) || v > hi {
		l, h := "[", "]"
		if loOpen {
			l = "("
		}
		if hiOpen {
			h = ")"
		}
		c.bad(key, "must be in %s%g, %g%s, got %g", l, lo, hi, h, v)
	}
}

// reportTo checks a list of report targets: known names, none alone, no
// name twice, not empty.
func (c *checker) reportTo(key string, v []string) {
	if len(v) == 0 {
		c.bad(key, "is empty: name %s (or %s)", strings.Join(ReportTargets[:len(ReportTargets)-1], ", "), ReportNone)
		return
	}
	for i, t := range v {
		oneOf(c, key, t, ReportTargets)
		if slices.Contains(v[:i], t) {
			c.bad(key, "names %q twice", t)
		}
	}
	if len(v) > 1 && slices.Contains(v, ReportNone) {
		c.bad(key, "%q cannot be combined with other targets (%s)", ReportNone, strings.Join(v, ", "))
	}
}

// envName checks a config value that names an environment variable.
func (c *checker) envName(key, v string, required bool) {
	if v == "" {
		if required {
			c.bad(key, "must name an environment variable")
		}
		return
	}
	for _, r := range v {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			c.bad(key, "%q is not an environment variable name (put the secret in the environment, never in the config)", v)
			return
		}
	}
}

// validHeaderName reports whether h is a plain HTTP header name.
func validHeaderName(h string) bool {
	for _, r := range h {
		if !(r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return h != ""
}

// httpURL checks a base URL: http(s), a host, no credentials.
func (c *checker) httpURL(key, v, keyEnv string) {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		c.bad(key, "%q is not an http(s) URL", redactURL(v))
	} else if u.User != nil {
		c.bad(key, "credentials in the URL: name an environment variable in %s instead", keyEnv)
	}
}

// mix checks category weights against the known categories.
func (c *checker) mix(key string, m map[string]float64, known []string) {
	var sum float64
	for k, w := range m {
		if !slices.Contains(known, k) {
			c.bad(key+"."+k, "unknown category (%s)", strings.Join(known, ", "))
		}
		if w < 0 {
			c.bad(key+"."+k, "weight must be zero or more, got %g", w)
		}
		sum += w
	}
	if len(m) > 0 && sum <= 0 {
		c.bad(key, "weights must not all be zero")
	}
}

// Validate checks every value, returning all problems joined; each names
// its key path.
func (c Config) Validate() error {
	k := checker{origin: c.origin, file: c.file}
	c.validateRun(&k)
	c.validatePolicy(&k)
	c.validateSampling(&k)
	c.validateGame(&k)
	c.validateCurriculum(&k)
	c.validateRoles(&k)
	c.validateJudge(&k)
	c.validateGenerator(&k)
	c.validateGRPO(&k)
	c.validateTrain(&k)
	c.validateTrainer(&k)
	oneOf(&k, "log.level", c.Log.Level, LogLevels)
	oneOf(&k, "log.format", c.Log.Format, LogFormats)
	return errors.Join(k.errs...)
}

func (c Config) validateRun(k *checker) {
	if c.Run.Name == "" || strings.ContainsAny(c.Run.Name, `/\`) || c.Run.Name == "." || c.Run.Name == ".." {
		k.bad("run.name", "must be a plain directory name, got %q", c.Run.Name)
	}
	if c.Run.Dir == "" {
		k.bad("run.dir", "must not be empty")
	}
}

func (c Config) validatePolicy(k *checker) {
	if len(c.Policy.Endpoints) == 0 {
		k.bad("policy.endpoints", "must list at least one base URL")
	}
	for i, e := range c.Policy.Endpoints {
		k.httpURL(fmt.Sprintf("policy.endpoints[%d]", i), strings.TrimPrefix(e, "dns+"), "policy.api_key_env")
	}
	if h := c.Policy.SessionHeader; h != "" && !validHeaderName(h) {
		k.bad("policy.session_header", "%q is not an HTTP header name (letters, digits and -)", h)
	}
	if c.Policy.SessionBound == 0 {
		k.bad("policy.session_bound", "must be positive (ε of the bound, e.g. 0.25), or negative for no affinity")
	}
	if c.Policy.ResolveInterval <= 0 {
		k.bad("policy.resolve_interval", "must be positive, got %s", c.Policy.ResolveInterval)
	}
	if c.Policy.Model == "" {
		k.bad("policy.model", "must not be empty")
	}
	k.envName("policy.api_key_env", c.Policy.APIKeyEnv, false)
	k.positive("policy.max_concurrent_per_endpoint", c.Policy.MaxConcurrentPerEndpoint)
	if c.Policy.RequestTimeout <= 0 {
		k.bad("policy.request_timeout", "must be positive, got %s", c.Policy.RequestTimeout)
	}
	k.nonNegative("policy.max_retries", c.Policy.MaxRetries)
}

func (c Config) validateSampling(k *checker) {
	k.inRange("sampling.temperature", c.Sampling.Temperature, 0, 5, false, false)
	k.inRange("sampling.top_p", c.Sampling.TopP, 0, 1, true, false)
	k.nonNegative("sampling.top_k", c.Sampling.TopK)
	k.positive("sampling.max_tokens", c.Sampling.MaxTokens)
	k.positive("sampling.final_max_tokens", c.Sampling.FinalMaxTokens)
}

// validateGame checks game.env against the registry and the configured
// game's own section with its Validate method.
func (c Config) validateGame(k *checker) {
	if _, ok := rollout.Lookup(c.Game.Env); !ok {
		k.bad("game.env", "%q is not one of %s", c.Game.Env, strings.Join(rollout.GameNames(), ", "))
		return
	}
	if v, ok := c.Game.Active().(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			for _, e := range splitJoined(err) {
				msg := e.Error()
				if rest, ok := strings.CutPrefix(msg, "key "); ok {
					if name, what, ok := strings.Cut(rest, ": "); ok {
						k.add("game."+c.Game.Env+"."+name, what)
						continue
					}
				}
				k.add("game."+c.Game.Env, msg)
			}
		}
	}
}

// splitJoined returns the errors an errors.Join made, or err alone.
func splitJoined(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

func (c Config) validateCurriculum(k *checker) {
	if c.Curriculum.Path == "" {
		k.bad("curriculum.path", "must name a prompts file or a bundled curriculum (builtin:dilemmas, builtin:open-ended, a game's builtin:<name>)")
	}
	cats := dataset.Categories
	if spec, ok := rollout.Lookup(c.Game.Env); ok && len(spec.Curriculum.Categories) > 0 {
		cats = append(slices.Clone(cats), spec.Curriculum.Categories...)
	}
	k.mix("curriculum.mix", c.Curriculum.Mix, cats)
	if c.Curriculum.Split != "" {
		oneOf(k, "curriculum.split", c.Curriculum.Split, []string{"train", "eval"})
	}
	oneOf(k, "curriculum.sampler", c.Curriculum.Sampler, []string{SamplerUniform, SamplerAdaptive})
	a := c.Curriculum.Adaptive
	k.inRange("curriculum.adaptive.floor", a.Floor, 0, 10, false, true)
	k.positive("curriculum.adaptive.window", a.Window)
	k.positive("curriculum.adaptive.retire_after", a.RetireAfter)
	if a.Cooldown < 0 {
		k.bad("curriculum.adaptive.cooldown", "must not be negative, got %d", a.Cooldown)
	}
	k.positive("rollout.group_size", c.Rollout.GroupSize)
	k.positive("rollout.prompts_per_step", c.Rollout.PromptsPerStep)
	k.positive("rollout.concurrency", c.Rollout.Concurrency)
	oneOf(k, "rollout.history", c.Rollout.History, rollout.HistoryModes)
}

// RolePolicies are roles.<role>.policy's values.
var RolePolicies = []dataset.PolicyKind{dataset.PolicyTrained, dataset.PolicyBase, dataset.PolicyAdapter, dataset.PolicyEndpoint, dataset.PolicyExternal,
	dataset.PolicyScripted, dataset.PolicyPool, dataset.PolicyLeague}

func (c Config) validateRoles(k *checker) {
	spec, _ := rollout.Lookup(c.Game.Env)
	for role, r := range c.Roles {
		key := "roles." + role
		if r.Policy == dataset.PolicyLeague {
			c.validateLeague(k, key, role, r, spec.Players)
		} else if r.League != (League{}) {
			k.bad(key+".league", "is for policy %s", dataset.PolicyLeague)
		}
		if r.Policy == dataset.PolicyPool || r.Policy == dataset.PolicyLeague {
			if len(r.Pool) == 0 && r.Policy == dataset.PolicyPool {
				k.bad(key+".pool", "must list the opponents a group draws from")
			}
			for i, m := range r.Pool {
				pkey := fmt.Sprintf("%s.pool[%d]", key, i)
				if m.Policy == dataset.PolicyTrained || m.Policy == dataset.PolicyPool || m.Policy == dataset.PolicyLeague || len(m.Pool) > 0 {
					k.bad(pkey+".policy", "a pool holds frozen opponents: base, adapter, endpoint, external or scripted, got %q", m.Policy)
					continue
				}
				validateRole(k, pkey, m)
			}
			continue
		}
		if len(r.Pool) > 0 {
			k.bad(key+".pool", "is for policy %s or %s", dataset.PolicyPool, dataset.PolicyLeague)
		}
		validateRole(k, key, r)
	}
}

// validateLeague checks roles.<role> with policy league: the game has the
// role (players, the game's fixed roles; nil when they come from the
// scenario) and roles.<role>.league's values.
func (c Config) validateLeague(k *checker, key, role string, r RoleModel, players []string) {
	if players != nil && !slices.Contains(players, role) {
		k.bad(key+".policy", "game %s has no role %q to play by a league (its roles: %s)", c.Game.Env, role, strings.Join(players, ", "))
	}
	lk := key + ".league"
	k.nonNegative(lk+".snapshot_every", r.League.SnapshotEvery)
	k.nonNegative(lk+".max_loaded", r.League.MaxLoaded)
	if r.League.Draw != "" {
		oneOf(k, lk+".draw", r.League.Draw, draw.Rules)
	}
	if r.League.PFSPPower < 0 {
		k.bad(lk+".pfsp_power", "must not be negative, got %g", r.League.PFSPPower)
	}
	trained := 0
	for _, p := range players {
		if q, ok := c.Roles[p]; !ok || q.Policy == dataset.PolicyTrained || q.Policy == "" {
			trained++
		}
	}
	if players != nil && trained == 0 {
		k.bad(key+".policy", "a league plays against the trained policy, but no role of game %s is left to it", c.Game.Env)
	}
	if c.Trainer.FullFinetune {
		k.bad(key+".policy", "a league's snapshots are the run's LoRA adapters, served beside the policy; with trainer.full_finetune: true the endpoints hold one step's full weights and no snapshot can be served (train with LoRA, or play the role with policy pool)")
	}
}

// validateRole checks one role's player (key is its config path).
func validateRole(k *checker, key string, r RoleModel) {
	oneOf(k, key+".policy", r.Policy, RolePolicies)
	switch r.Policy {
	case dataset.PolicyAdapter:
		if r.Model == "" {
			k.bad(key+".model", "must name the adapter (as loaded, or to load from adapter_path)")
		}
	case dataset.PolicyEndpoint:
		if len(r.Endpoints) == 0 {
			k.bad(key+".endpoints", "must list the other server's base URLs")
		}
		for i, e := range r.Endpoints {
			k.httpURL(fmt.Sprintf("%s.endpoints[%d]", key, i), e, key+".api_key_env")
		}
		if r.Model == "" {
			k.bad(key+".model", "must name the model the other server serves")
		}
	case dataset.PolicyExternal:
		k.httpURL(key+".base_url", r.BaseURL, key+".api_key_env")
		if r.Model == "" {
			k.bad(key+".model", "must name the external model")
		}
	}
	k.envName(key+".api_key_env", r.APIKeyEnv, false)
}

// validateAudit checks judge.audit: an audit judge compares its rubric
// scores with the training judge's, so the training judge must score on
// the rubric too.
func (c Config) validateAudit(k *checker) {
	a := c.Judge.Audit
	k.inRange("judge.audit.share", a.Share, 0, 1, false, false)
	if !a.On() {
		return
	}
	if !c.Judge.Kind.Auditable() {
		k.bad("judge.audit.share", "audits a Collective Agency rubric judge (judge.kind ca), not %s: set 0", c.Judge.Kind)
	}
	a.checkUsed(k, "judge.audit")
	a.checkLimits(k, "judge.audit")
	if a.AlarmWindow < 2 || a.AlarmWindow%2 != 0 {
		k.bad("judge.audit.alarm_window", "must be an even number of audited steps, at least 2, got %d", a.AlarmWindow)
	}
	if !(a.AlarmThreshold > 0) || math.IsInf(a.AlarmThreshold, 0) {
		k.bad("judge.audit.alarm_threshold", "must be a positive number of score points, got %g", a.AlarmThreshold)
	}
}

func (c Config) validateJudge(k *checker) {
	oneOf(k, "judge.kind", c.Judge.Kind, reward.JudgeKinds)
	spec, _ := rollout.Lookup(c.Game.Env)
	if c.Judge.Kind.UsesGameScorer() && spec.Scorer == nil && spec.Name != "" {
		k.bad("judge.kind", "the %s game has no scorer of its own: use ca, rule or python", c.Game.Env)
	}
	if c.Judge.Kind.UsesChat() || spec.UsesJudge {
		c.Judge.checkUsed(k, "judge")
	}
	c.Judge.checkLimits(k, "judge")
	if c.Judge.Mode != "" { // "": an older run's config, pointwise
		oneOf(k, "judge.mode", c.Judge.Mode, reward.JudgeModes)
	}
	if c.Judge.Mode == reward.ModeGroup && !c.Judge.Kind.ScoresGroups() {
		k.bad("judge.mode", "group needs a judge that scores a group in one request (judge.kind ca), not %s", c.Judge.Kind)
	}
	k.inRange("judge.position_check", c.Judge.PositionCheck, 0, 1, false, false)
	if c.Judge.PositionCheck > 0 && c.Judge.Mode != reward.ModeGroup {
		k.bad("judge.position_check", "re-scores groups in reversed order: it needs judge.mode group")
	}
	k.nonNegative("judge.rationale_max_chars", c.Judge.RationaleMaxChars)
	if c.Judge.RationaleMaxChars > 0 && !c.Judge.StructuredOutput {
		k.bad("judge.rationale_max_chars", "bounds the structured output's rationale: set judge.structured_output: true, or 0")
	}
	for _, p := range []struct {
		key string
		v   float64
	}{{"judge.price.input", c.Judge.Price.Input}, {"judge.price.output", c.Judge.Price.Output}} {
		if !(p.v >= 0) || math.IsInf(p.v, 0) {
			k.bad(p.key, "must be a price per million tokens, zero or more, got %g", p.v)
		}
	}
	k.nonNegative("judge.gold.every", c.Judge.Gold.Every)
	if c.Judge.Gold.Every > 0 && c.Judge.Gold.Path == "" {
		k.bad("judge.gold.path", "must name the gold set (JSONL) when judge.gold.every is set")
	}
	c.validateAudit(k)
	if c.Judge.Price.Set() && !c.Judge.Kind.UsesChat() {
		k.bad("judge.price", "prices an LLM judge's tokens; the %s judge asks no API", c.Judge.Kind)
	}
	if c.Judge.Kind.UsesRule() {
		r := c.Judge.Rule
		oneOf(k, "judge.rule.kind", r.Kind, reward.RuleKinds)
		if (r.Kind == reward.RuleKeywords || r.Kind == reward.RuleKeywordShare) && len(r.Keywords) == 0 {
			k.bad("judge.rule.keywords", "must list at least one keyword for the %s rule", r.Kind)
		}
		if r.Kind == reward.RuleLength && r.TargetLength <= 0 {
			k.bad("judge.rule.target_length", "must be positive for the length rule")
		}
		if r.Kind == reward.RuleTargetWord && strings.TrimSpace(r.TargetWord) == "" {
			k.bad("judge.rule.target_word", "must name the word for the target_word rule")
		}
		k.inRange("judge.rule.agreement_weight", r.AgreementWeight, 0, 1, false, false)
		if r.AgreementWeight > 0 && r.Kind == reward.RuleAgreement {
			k.bad("judge.rule.agreement_weight", "is for the other rules: the agreement rule scores agreement alone")
		}
	}
	if c.Judge.Kind.UsesPython() {
		p := c.Judge.Python
		if m, f, ok := strings.Cut(p.Function, ":"); !ok || strings.TrimSpace(m) == "" || strings.TrimSpace(f) == "" {
			k.bad("judge.python.function", "must name the reward function as module:function, got %q", p.Function)
		}
		k.positive("judge.python.batch_size", p.BatchSize)
		if p.Timeout <= 0 {
			k.bad("judge.python.timeout", "must be positive, got %s", p.Timeout)
		}
		if !(p.Max > p.Min) {
			k.bad("judge.python.max", "must be above judge.python.min (%v), got %v", p.Min, p.Max)
		}
		// The calls in flight are what a batch gathers.
		k.positive("judge.concurrency", c.Judge.Concurrency)
	}
}

func (c Config) validateGenerator(k *checker) {
	g := c.Generator
	g.checkUsed(k, "generator")
	g.checkLimits(k, "generator")
	k.inRange("generator.temperature", g.Temperature, 0, 2, false, false)
	k.positive("generator.max_tokens", g.MaxTokens)
	if g.BatchSize < 1 || g.BatchSize > 50 {
		k.bad("generator.batch_size", "must be in [1, 50], got %d", g.BatchSize)
	}
	k.positive("generator.min_words", g.MinWords)
	if g.MaxWords < g.MinWords {
		k.bad("generator.max_words", "must be at least generator.min_words (%d), got %d", g.MinWords, g.MaxWords)
	}
	k.inRange("generator.near_dup_threshold", g.NearDupThreshold, 0, 1, true, false)
	k.inRange("generator.eval_fraction", g.EvalFraction, 0, 1, false, true)
	k.mix("generator.mix", g.Mix, dataset.DilemmaCategories)
}

func (c Config) validateGRPO(k *checker) {
	oneOf(k, "grpo.advantage", c.GRPO.Advantage, grpo.AdvantageModes)
	k.inRange("grpo.epsilon", c.GRPO.Epsilon, 0, 1, true, false)
	k.inRange("grpo.baseline_momentum", c.GRPO.BaselineMomentum, 0, 1, false, true)
	oneOf(k, "grpo.mask", c.GRPO.Mask, grpo.MaskModes)
	if spec, ok := rollout.Lookup(c.Game.Env); ok && len(spec.Kinds) > 0 {
		m, err := grpo.ParseMaskMode(c.GRPO.Mask)
		if err == nil && !slices.ContainsFunc(spec.Kinds, m.Trains) {
			k.bad("grpo.mask", "the %s game records only %s sequences, which mask %s never trains: use one that does", c.Game.Env, strings.Join(spec.Kinds, " and "), c.GRPO.Mask)
		}
	}
}

func (c Config) validateTrain(k *checker) {
	t := c.Train
	k.positive("train.steps", t.Steps)
	if t.MaxStaleness < 0 {
		k.bad("train.max_staleness", "must not be negative, got %d", t.MaxStaleness)
	}
	if t.MaxOffPolicySteps < 0 {
		k.bad("train.max_off_policy_steps", "must not be negative, got %d", t.MaxOffPolicySteps)
	}
	oneOf(k, "train.sampling", t.Sampling, []string{SamplingStream, SamplingStep})
	if t.ServingSampleEvery < 0 {
		k.bad("train.serving_sample_every", "must not be negative (0 reads none), got %s", t.ServingSampleEvery)
	}
	if !(t.OversampleMax >= 1) || math.IsInf(t.OversampleMax, 0) {
		k.bad("train.oversample_max", "must be a number of at least 1 (groups sampled per group trained), got %v", t.OversampleMax)
	}
	oneOf(k, "train.handshake", t.Handshake, HandshakeKinds)
	if _, _, err := net.SplitHostPort(t.HTTPAddr); err != nil {
		k.bad("train.http_addr", "%q is not host:port", t.HTTPAddr)
	}
	if t.MetricsAddr != "" {
		if _, _, err := net.SplitHostPort(t.MetricsAddr); err != nil {
			k.bad("train.metrics_addr", "%q is not host:port (e.g. 127.0.0.1:9464)", t.MetricsAddr)
		}
	}
	k.envName("train.token_env", t.TokenEnv, t.Handshake == "http")
	if t.TrainerTimeout <= 0 {
		k.bad("train.trainer_timeout", "must be positive, got %s", t.TrainerTimeout)
	}
	if t.AdapterPrefix == "" || strings.ContainsAny(t.AdapterPrefix, `/\ `) {
		k.bad("train.adapter_prefix", "must be a plain name, got %q", t.AdapterPrefix)
	}
	if t.CrossPlayEvery < 0 {
		k.bad("train.crossplay_every", "must be 0 (no cross-play) or a positive number of steps, got %d", t.CrossPlayEvery)
	}
	if t.CrossPlayEvery > 0 {
		if t.CrossPlayEndpoint == "" {
			k.bad("train.crossplay_endpoint", "must name a vLLM server of its own for train.crossplay_every")
		} else {
			k.httpURL("train.crossplay_endpoint", t.CrossPlayEndpoint, "")
			if slices.Contains(c.Policy.Endpoints, t.CrossPlayEndpoint) {
				k.bad("train.crossplay_endpoint", "is one of policy.endpoints: cross-play needs a server of its own, whose games the training's weight updates never abort")
			}
		}
		if spec, ok := rollout.Lookup(c.Game.Env); ok && spec.Tournament == nil {
			k.bad("train.crossplay_every", "game %s has no two-seat tournament to play cross-play with", c.Game.Env)
		}
	}
	if t.EvalEvery < 0 {
		k.bad("train.eval_every", "must be 0 (no evaluation) or a positive number of steps, got %d", t.EvalEvery)
	}
	k.inRange("train.max_failed_fraction", t.MaxFailedFraction, 0, 1, true, false)
	if t.ServerStartTimeout <= 0 {
		k.bad("train.server_start_timeout", "must be positive, got %s", t.ServerStartTimeout)
	}
	for key, args := range map[string][]string{"train.trainer_command": t.TrainerCommand, "train.server_command": t.ServerCommand, "trainer.extra_args": c.Trainer.ExtraArgs} {
		if r := redactArgs(args); fmt.Sprint(r) != fmt.Sprint(args) {
			k.bad(key, "holds a secret on the command line (%v): pass it through the environment (vLLM reads VLLM_API_KEY)", r)
		}
	}
	if len(t.TrainerCommand) > 0 && strings.TrimSpace(c.Trainer.Model) == "" {
		k.bad("trainer.model", "must name the base model folder the trainer loads (train.trainer_command is set)")
	}
}

func (c Config) validateTrainer(k *checker) {
	t := c.Trainer
	if t.FullFinetune {
		c.validateWeightSync(k)
	}
	k.inRange("trainer.lr", t.LR, 0, 1, true, false)
	k.inRange("trainer.epsilon_low", t.EpsilonLow, 0, 1, true, true)
	if t.EpsilonHigh <= 0 {
		k.bad("trainer.epsilon_high", "must be positive, got %g", t.EpsilonHigh)
	}
	if t.KLBeta < 0 {
		k.bad("trainer.kl_beta", "must be zero or more, got %g", t.KLBeta)
	}
	if t.TISCap < 0 || math.IsNaN(t.TISCap) || math.IsInf(t.TISCap, 0) {
		k.bad("trainer.tis_cap", "must be zero (off) or a positive cap, got %g", t.TISCap)
	}
	oneOf(k, "trainer.aggregation", t.Aggregation, Aggregations)
	if !t.FullFinetune {
		k.positive("trainer.lora_r", t.LoRAR)
		k.positive("trainer.lora_alpha", t.LoRAAlpha)
	}
	k.inRange("trainer.lora_dropout", t.LoRADropout, 0, 1, false, true)
	k.positive("trainer.micro_batch_tokens", t.MicroBatchTokens)
	k.nonNegative("trainer.keep_states", t.KeepStates)
	switch {
	case t.KeepWeights < 0:
		k.bad("trainer.keep_weights", "must be 0 (keep all) or a number of checkpoints, got %d", t.KeepWeights)
	case t.KeepWeights > 0 && !t.FullFinetune:
		k.bad("trainer.keep_weights", "is for trainer.full_finetune: a LoRA run keeps every adapter (the league and the servers load them)")
	case t.KeepWeights > 0 && t.KeepWeights < c.Train.MaxOffPolicySteps+2:
		k.bad("trainer.keep_weights", "must be 0 (keep all) or at least train.max_off_policy_steps + 2 = %d (the servers may still be loading an older step's weights), got %d",
			c.Train.MaxOffPolicySteps+2, t.KeepWeights)
	}
	k.reportTo("trainer.report_to", t.ReportTo)
	if t.MaxGradNorm <= 0 {
		k.bad("trainer.max_grad_norm", "must be positive, got %g", t.MaxGradNorm)
	}
}

// validateWeightSync checks train.weight_sync (full fine-tuning).
func (c Config) validateWeightSync(k *checker) {
	w := c.Train.WeightSync
	oneOf(k, "train.weight_sync.transfer", w.Transfer, Transfers)
	oneOf(k, "train.weight_sync.pause_mode", w.PauseMode, []string{"wait", "abort", "keep"})
	if w.ReloadTimeout <= 0 {
		k.bad("train.weight_sync.reload_timeout", "must be positive, got %s", w.ReloadTimeout)
	}
	if !(w.ProbeTolerance > 0) || math.IsInf(w.ProbeTolerance, 0) {
		k.bad("train.weight_sync.probe_tolerance", "must be a positive logprob difference, got %g", w.ProbeTolerance)
	}
	if w.Transfer == TransferNCCL && w.NCCLAddr == "" {
		k.bad("train.weight_sync.nccl_addr", "must be host:port of the NCCL rendezvous the trainer opens (transfer nccl), an address every endpoint reaches")
	}
	if strings.TrimSpace(c.Trainer.Model) == "" {
		k.bad("trainer.model", "must name the base model folder, the one the server serves: full fine-tuning checks every step's weights against it")
	}
	if c.Train.EvalEvery > 0 {
		k.bad("train.eval_every", "must be 0 with trainer.full_finetune: the evaluation plays the step's policy against the base model, which a server holding the trained weights no longer serves (evaluate checkpoints afterwards with parley eval)")
	}
}

// RunDir is the run's directory, Dir/Name.
func (c Config) RunDir() string { return filepath.Join(c.Run.Dir, c.Run.Name) }

// redactURL hides a URL's user information (credentials).
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	u.User = url.User("REDACTED")
	return u.String()
}

// Redacted returns a copy fit to print or store: credentials in URLs are
// replaced. Secrets themselves never live in the config, only the names of
// the environment variables that hold them.
func (c Config) Redacted() Config {
	out := c
	out.Policy.Endpoints = make([]string, len(c.Policy.Endpoints))
	for i, e := range c.Policy.Endpoints {
		out.Policy.Endpoints[i] = redactURL(e)
	}
	out.Judge.BaseURL = redactURL(c.Judge.BaseURL)
	out.Train.TrainerCommand = redactArgs(c.Train.TrainerCommand)
	out.Train.ServerCommand = redactArgs(c.Train.ServerCommand)
	out.Trainer.ExtraArgs = redactArgs(c.Trainer.ExtraArgs)
	out.Generator.BaseURL = redactURL(c.Generator.BaseURL)
	if c.Roles != nil {
		out.Roles = map[string]RoleModel{}
		for role, r := range c.Roles {
			r.BaseURL = redactURL(r.BaseURL)
			eps := make([]string, len(r.Endpoints))
			for i, e := range r.Endpoints {
				eps[i] = redactURL(e)
			}
			r.Endpoints = eps
			if r.Pool != nil {
				pool := make([]RoleModel, len(r.Pool))
				for i, m := range r.Pool {
					m.BaseURL = redactURL(m.BaseURL)
					meps := make([]string, len(m.Endpoints))
					for j, e := range m.Endpoints {
						meps[j] = redactURL(e)
					}
					m.Endpoints = meps
					pool[i] = m
				}
				r.Pool = pool
			}
			out.Roles[role] = r
		}
	}
	return out
}

// redactArgs hides the values of secret-looking flags in a command line
// (--api-key X, --hf-token=X, …); commands should take secrets from the
// environment instead (vLLM reads VLLM_API_KEY). A flag is secret when a
// word of its name (split at - and _) holds "key", "secret" or
// "password", or ends in "token": --tokenizer and
// --max-num-batched-tokens are not.
func redactArgs(args []string) []string {
	if args == nil {
		return nil
	}
	secret := func(flag string) bool {
		f := strings.ToLower(flag)
		if !strings.HasPrefix(f, "-") {
			return false
		}
		for _, w := range strings.FieldsFunc(f, func(r rune) bool { return r == '-' || r == '_' }) {
			if strings.Contains(w, "key") || strings.HasSuffix(w, "token") ||
				strings.Contains(w, "secret") || strings.Contains(w, "password") {
				return true
			}
		}
		return false
	}
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if name, _, ok := strings.Cut(a, "="); ok && secret(name) {
			out[i] = name + "=REDACTED"
		} else if i > 0 && secret(args[i-1]) && !strings.Contains(args[i-1], "=") && !strings.HasPrefix(a, "-") {
			out[i] = "REDACTED"
		}
	}
	return out
}

// YAML renders the config (redacted) as YAML.
func (c Config) YAML() ([]byte, error) {
	b, err := yaml.Marshal(c.Redacted())
	if err != nil {
		return nil, fmt.Errorf("config: marshal: %w", err)
	}
	return b, nil
}
