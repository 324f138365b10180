package train

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/parleyhq/parley/curriculum"
	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/grpo"
	"github.com/parleyhq/parley/handshake"
	"github.com/parleyhq/parley/internal/crashpoint"
	"github.com/parleyhq/parley/league"
	"github.com/parleyhq/parley/metrics"
	"github.com/parleyhq/parley/reward"
	"github.com/parleyhq/parley/rollout"
	"go.uber.org/zap"
)

// AdapterLoader loads a trained LoRA adapter into every inference endpoint
// (the llm client does).
type AdapterLoader interface {
	// LoadLoRA loads the adapter folder path under name, a name never
	// used before, into every endpoint.
	LoadLoRA(ctx context.Context, name, path string) error
	// UnloadLoRA unloads the adapter served under name from every
	// endpoint.
	UnloadLoRA(ctx context.Context, name string) error
}

// WeightSync brings every inference endpoint to a step's full weights
// (trainer.full_finetune; package llm/weightsync does): paused, transferred,
// versioned, verified against the trainer's files and resumed.
type WeightSync interface {
	// Sync makes every endpoint serve the weights trained on step, which
	// the trainer wrote to dir (step 0: the base model's folder), and
	// returns the update's metrics (metrics.KeyUpdate…). It is idempotent:
	// called again after a crash anywhere in an update, it completes it.
	Sync(ctx context.Context, step int, dir string) (map[string]float64, error)
}

// LoopOptions configure the training loop.
type LoopOptions struct {
	Dir   dataset.RunDir
	RunID string
	Seed  int64
	// Steps is the last step to train (steps count from 1).
	Steps int
	// MaxStaleness is how many steps sampling may run ahead of training:
	// 0 samples step N with the policy of step N-1, k > 0 samples step
	// N+j (j <= k) while step N trains, with the newest policy trained.
	MaxStaleness int
	// Stream plays groups continuously instead of step by step (stream;
	// MaxStaleness must be at least 1): step N's batch takes the first groups judged whose policy is at most
	// MaxStaleness (or MaxOffPolicySteps, when smaller) steps older than
	// the one the batch trains.
	Stream bool
	// ServingSampleEvery is how often the servers' requests running are
	// read for the step lines (0: DefaultServingSampleEvery; negative:
	// never).
	ServingSampleEvery time.Duration
	// Curriculum, when set, draws the prompt rows by the adaptive
	// sampler (package curriculum) with these options instead of
	// uniformly within their categories.
	Curriculum *curriculum.Options
	// MaxOffPolicySteps, when positive, drops from step N's batch the
	// rollouts whose policy version is below N-1-MaxOffPolicySteps (the
	// batch trains step N-1's policy), counted in the step's
	// rollouts_dropped_off_policy; 0 drops none.
	MaxOffPolicySteps int

	Prompts        []dataset.Prompt
	Mix            map[string]float64
	PromptsPerStep int
	// Series, when set, makes each step play the next game of a set of
	// series of a SeriesGame, their state carried from step to step,
	// instead of drawing prompt rows (see SeriesOptions).
	Series *SeriesOptions

	// Rollout is the runner template; Model is the base model, replaced by
	// the newest adapter once one is trained. Step, PolicyVersion, RunID
	// and Seed are set per step.
	Rollout rollout.RunnerOptions

	Judge            reward.Judge
	JudgeConcurrency int
	// JudgeCost, when set, prices the judge's prompt and completion
	// tokens (config judge.price): each step line then carries the step's
	// cost and the run's (metrics.KeyJudgeCost, KeyJudgeCostTotal).
	JudgeCost func(promptTokens, completionTokens int64) float64
	// Gold is a gold set (ReadGold) the judge scores again at every
	// GoldEvery-th step, beside the step's judging, into the judge/gold_*
	// keys of its line (0: never).
	Gold      []GoldItem
	GoldEvery int
	// Audit is the audit judge beside training (judge.audit).
	Audit AuditOptions
	// DynamicSampling judges each group as it completes and plays further
	// prompt rows until PromptsPerStep groups have an advantage that is not
	// zero, at most OversampleMax times as many groups a step (default
	// DefaultOversampleMax); the batch trains the first PromptsPerStep of
	// them, and every group played stays in the step's rollouts. It needs
	// an advantage that drops zero-variance groups, and step by step
	// prompt rows drawn per step (no Series, no League).
	DynamicSampling bool
	OversampleMax   float64

	Advantage grpo.AdvantageOptions
	Mask      string

	Adapters      AdapterLoader
	AdapterPrefix string
	// Weights, when set, trains full weights instead of an adapter: after
	// each step's DONE every endpoint is brought to the step's weights,
	// and before each sampling to the weights of the policy that samples
	// (BaseWeights before the first step). Adapters is then unused.
	Weights     WeightSync
	BaseWeights string

	// League maps the roles played by a league (roles.<role>.policy:
	// league) to their league: each group draws a member, rated as it
	// plays; the league after each step is league/step-N.json.
	League map[string]LeagueRole

	// TrainerTimeout bounds the wait for one step's DONE.
	TrainerTimeout time.Duration
	// DonePoll is the DONE polling period (default 500ms).
	DonePoll time.Duration
	// TrainerAlive, if set, reports why a trainer parley started is not
	// running (nil when it runs), so waiting can say so.
	TrainerAlive func() error
	// TrainerGone, if set, reports non-nil once a trainer parley started
	// has failed for good (its restarts spent): waiting stops with that error.
	TrainerGone func() error
	// MaxFailedFraction fails a step whose rollouts failed, in sampling or
	// judging, beyond this share (default 0.5): a run whose judge key or
	// adapter is broken stops at once instead of training on nothing.
	MaxFailedFraction float64
	// WaitLogEvery is how often a long wait for the trainer is logged
	// (default 30s).
	WaitLogEvery time.Duration

	// Progress, if set, is told of each phase of a step with a known
	// size (rollouts, judging, the trainer's step): it returns the tick
	// and the end call of a progress bar.
	Progress func(label string, total int) (tick func(), end func(failed bool))

	// Eval configures the evaluations run while training
	// (train.eval_every); its zero value runs none.
	Eval EvalOptions
	// CrossPlay runs cross-play among the checkpoints beside training
	// (train.crossplay_every); its zero value runs none.
	CrossPlay CrossPlayOptions

	// OnStart, if set, is called when Run starts with the number of steps
	// already completed (a resumed run).
	OnStart func(completed int)
	// OnStep is called after each completed step with its metrics line.
	OnStep func(m map[string]any)
	Logger *zap.Logger
}

// Loop is the training loop: sample a step's groups, judge, compute
// advantages, write the rollouts and the batch, wait for the trainer's
// DONE, load the adapter into every endpoint, record metrics and state, go
// on. Every phase is idempotent and keyed by the files of the run
// directory, so a crash at any point resumes without losing or repeating a
// step: a written batch is never sampled again, a trained step never
// trained again, a recorded metrics line never appended twice.
type Loop struct {
	opts     LoopOptions
	log      *zap.Logger
	state    State
	recorded map[int]bool
	// baseline is the role baseline after the newest written batch (with
	// staleness k it runs up to k steps ahead of the state's).
	baseline *grpo.RoleBaseline
	// cur is the adaptive sampler's statistics after the newest written
	// batch (nil: rows drawn uniformly).
	cur *curriculum.State
	// ev runs the evaluations of the current Run, xp its cross-play.
	ev *evalRunner
	xp *crossPlayer
	// metricsMu serialises the appends to metrics.jsonl of the loop and
	// its evaluations; evalRecorded (under it) holds the steps whose
	// evaluation line is written.
	metricsMu    sync.Mutex
	evalRecorded map[int]bool
	// auditRecorded (under metricsMu) holds the steps whose audit line is
	// written; au runs the audits (judge.audit).
	auditRecorded map[int]bool
	au            *auditRunner
	// evalsUnsent (under metricsMu) are the evaluations recorded in this
	// session and not yet handed to the trainer's reporters: the next
	// written batch's sidecar carries them (metrics.KeyEvals).
	evalsUnsent []EvalReport
	// league is the league after the newest written batch (nil without
	// league roles).
	league *league.State
	// stream plays the groups of a streaming run (nil: step by step).
	stream *stream
	// serving reads the servers' requests running through the run (nil:
	// the policy reports none).
	serving *servingSampler
	// jm reads the judge's API counters into each step line (nil: the
	// judge asks no LLM).
	jm *judgeMeter
	// gold scores the gold set again every few steps (nil: no gold set).
	gold *goldCheck
}

// sidecar is what a step's sampling leaves beside its rollouts for the
// step's metrics line and the role baseline, so that a resumed run that
// skips the written batch still has both.
type sidecar struct {
	Metrics      metrics.Line       `json:"metrics"`
	RoleBaseline *grpo.RoleBaseline `json:"role_baseline"`
	// Curriculum is the adaptive sampler's statistics after the step.
	Curriculum *curriculum.State `json:"curriculum,omitempty"`
	// Series are the series cursors after the step (series training).
	Series []SeriesCursor `json:"series,omitempty"`
}

// readSidecar reads step's sidecar (dataset.RunDir.SidecarPath) as it is
// written, with an empty metrics line and baseline where it has none.
func (l *Loop) readSidecar(step int) (sidecar, error) {
	var sc sidecar
	path := l.opts.Dir.SidecarPath(step)
	b, err := os.ReadFile(path)
	if err == nil {
		if err = json.Unmarshal(b, &sc); err != nil {
			err = fmt.Errorf("%s: %w", path, err)
		}
	}
	if err != nil {
		return sc, fmt.Errorf("train.Loop step %d: %w", step, err)
	}
	if sc.Metrics == nil {
		sc.Metrics = metrics.Line{}
	}
	if sc.RoleBaseline == nil {
		sc.RoleBaseline = grpo.NewRoleBaseline()
	}
	return sc, nil
}

// NewLoop checks opts and reads the run's state.
func NewLoop(opts LoopOptions) (*Loop, error) {
	if err := opts.check(); err != nil {
		return nil, fmt.Errorf("train.NewLoop: %w", err)
	}
	opts.setDefaults()
	if err := opts.Dir.Create(); err != nil {
		return nil, err
	}
	st, err := loadRunState(opts)
	if err != nil {
		return nil, err
	}
	rec, err := recordedSteps(opts.Dir.MetricsPath())
	if err != nil {
		return nil, err
	}
	l := &Loop{opts: opts, log: opts.Logger, state: st, recorded: rec.steps, evalRecorded: rec.evals, auditRecorded: rec.audits, baseline: st.RoleBaseline.Clone()}
	cost, err := recordedJudgeCost(opts.Dir)
	if err != nil {
		return nil, err
	}
	l.jm = newJudgeMeter(opts.Judge, opts.JudgeCost, cost, opts.Logger)
	if opts.GoldEvery > 0 && len(opts.Gold) > 0 {
		l.gold = &goldCheck{items: opts.Gold, every: opts.GoldEvery, concurrency: opts.JudgeConcurrency, log: opts.Logger}
	}
	if opts.Curriculum != nil {
		l.cur = st.Curriculum.Clone()
	}
	if err := l.loadLeague(st.Step + 1); err != nil {
		return nil, err
	}
	return l, nil
}

// check validates o.
func (o *LoopOptions) check() error {
	if o.Rollout.Game == nil || o.Rollout.Policy == nil || o.Judge == nil || (o.Adapters == nil && o.Weights == nil) {
		return errors.New("game, policy, judge and adapter loader (or weight sync) are required")
	}
	if o.Weights != nil && o.BaseWeights == "" {
		return errors.New("full-weights training needs the base model's folder")
	}
	if len(o.Prompts) == 0 || o.PromptsPerStep <= 0 || o.Steps <= 0 {
		return fmt.Errorf("need prompts (%d), prompts per step (%d) and steps (%d)", len(o.Prompts), o.PromptsPerStep, o.Steps)
	}
	if err := dataset.CheckTrainRows("the curriculum", o.Prompts); err != nil {
		return err
	}
	if o.MaxStaleness < 0 || o.MaxOffPolicySteps < 0 {
		return fmt.Errorf("max staleness %d, max off-policy steps %d: must not be negative", o.MaxStaleness, o.MaxOffPolicySteps)
	}
	if o.Stream && o.MaxStaleness < 1 {
		return fmt.Errorf("streaming needs max staleness at least 1 (%d)", o.MaxStaleness)
	}
	if o.DynamicSampling && !o.Stream && (o.Series != nil || len(o.League) > 0) {
		return errors.New("dynamic sampling step by step draws prompt rows per step: not with series or league roles (it is with streaming)")
	}
	if so := o.Series; so != nil {
		if _, ok := o.Rollout.Game.(rollout.SeriesGame); !ok || so.Plan == nil || so.Slots <= 0 {
			return fmt.Errorf("series training needs a SeriesGame (%s), a plan and slots (%d)", o.Rollout.Game.Name(), so.Slots)
		}
	}
	return o.Eval.check()
}

// setDefaults fills the zero options that have a default.
func (o *LoopOptions) setDefaults() {
	if o.DonePoll <= 0 {
		o.DonePoll = handshake.DefaultDonePoll
	}
	if o.WaitLogEvery <= 0 {
		o.WaitLogEvery = 30 * time.Second
	}
	if o.TrainerTimeout <= 0 {
		o.TrainerTimeout = 24 * time.Hour
	}
	if o.AdapterPrefix == "" {
		o.AdapterPrefix = "parley"
	}
	if o.MaxFailedFraction <= 0 {
		o.MaxFailedFraction = 0.5
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
}

// loadRunState reads the run's state.json, or starts the state of a new
// run; a state without a nonce gets one, saved at once, so that the run's
// adapter names never change.
func loadRunState(opts LoopOptions) (State, error) {
	st, ok, err := LoadState(opts.Dir.StatePath())
	if err != nil {
		return State{}, err
	}
	if !ok {
		st = State{Version: StateVersion, RunID: opts.RunID, Seed: opts.Seed, RoleBaseline: grpo.NewRoleBaseline()}
	}
	if st.Nonce == "" {
		var b [4]byte
		if _, err := rand.Read(b[:]); err != nil {
			return State{}, fmt.Errorf("train.NewLoop: %w", err)
		}
		st.Nonce = hex.EncodeToString(b[:])
		if err := SaveState(opts.Dir.StatePath(), st); err != nil {
			return State{}, err
		}
	}
	if st.RoleBaseline == nil {
		st.RoleBaseline = grpo.NewRoleBaseline()
	}
	return st, nil
}

// progress starts a progress bar through opts.Progress, or nothing.
func (l *Loop) progress(label string, total int) (tick func(), end func(bool)) {
	if l.opts.Progress == nil {
		return func() {}, func(bool) {}
	}
	return l.opts.Progress(label, total)
}

// State is the loop's current state.
func (l *Loop) State() State { return l.state }

// AdapterName names the adapter trained on step: the prefix, the run's
// nonce and the step.
func (l *Loop) AdapterName(step int) string {
	return fmt.Sprintf("%s-%s-%06d", l.opts.AdapterPrefix, l.state.Nonce, step)
}

// Run trains from the step after the last completed one to Steps. The
// evaluations (LoopOptions.Eval) run beside it: Run waits for those still
// running when training is done, and cancels them when it fails.
func (l *Loop) Run(ctx context.Context) (err error) {
	l.ev, err = l.startEvals(ctx)
	if err != nil {
		return err
	}
	defer func() { err = l.ev.finish(err) }()
	l.au, err = l.startAudits(ctx)
	if err != nil {
		return err
	}
	defer func() { err = l.au.finish(err) }()
	l.xp = startCrossPlay(ctx, l.opts.CrossPlay, l.state.Step, l.log)
	defer func() { l.xp.finish(err != nil) }()
	if l.state.Step >= l.opts.Steps {
		l.log.Info("run already complete", zap.Int("step", l.state.Step))
		return nil
	}
	if l.state.Step > 0 {
		l.log.Info("resuming", zap.Int("completed_step", l.state.Step), zap.Int("policy_version", l.state.PolicyVersion))
	}
	if l.opts.OnStart != nil {
		l.opts.OnStart(l.state.Step)
	}
	l.serving = startServingSampler(ctx, l.opts.Rollout.Policy, l.opts.ServingSampleEvery)
	defer l.serving.close()
	if l.opts.Stream {
		if l.stream, err = l.startStream(ctx, l.state.Step+1); err != nil {
			return err
		}
		defer func() { l.stream.stop(); l.stream = nil }()
	}
	// pending are the steps whose batch is written and whose DONE is not
	// yet finished, oldest first: at most MaxStaleness of them while a
	// step samples, so that step N+k samples while step N trains.
	var pending []int
	for step := l.state.Step + 1; step <= l.opts.Steps; step++ {
		if pending, err = l.finishReady(ctx, pending, step); err != nil {
			return err
		}
		if err := l.ensureBatch(ctx, step); err != nil {
			return err
		}
		pending = append(pending, step)
		if l.opts.MaxStaleness == 0 {
			if pending, err = l.finishReady(ctx, pending, allPending); err != nil {
				return err
			}
		}
	}
	_, err = l.finishReady(ctx, pending, allPending)
	return err
}

// finishReady finishes, in order, the pending steps that step's sampling
// must wait for (those before step-MaxStaleness) and, beyond them, those
// up to step-2 whose DONE is already written, so that step samples with
// the newest policy trained. Step-1's batch was written just before, so
// it is never waited for; with staleness 0 or 1 the policy that samples a
// step is therefore fixed (step-1, step-2), beyond 1 it is the newest
// trained. allPending finishes every pending step. It returns the steps
// still pending.
func (l *Loop) finishReady(ctx context.Context, pending []int, step int) ([]int, error) {
	for len(pending) > 0 {
		next := pending[0]
		if next >= step-l.opts.MaxStaleness {
			if next > step-2 {
				break
			}
			if _, ok, err := handshake.ReadDone(l.opts.Dir.CheckpointDir(next)); err != nil || !ok {
				break
			}
		}
		if err := l.finish(ctx, next); err != nil {
			return pending, err
		}
		pending = pending[1:]
	}
	return pending, nil
}

// dropOffPolicy removes from s the rollouts sampled by a policy more than
// MaxOffPolicySteps older than the one step's batch trains (step-1's) and
// returns how many it removed.
func (l *Loop) dropOffPolicy(step int, s *sampled) int {
	if l.opts.MaxOffPolicySteps <= 0 {
		return 0
	}
	oldest := step - 1 - l.opts.MaxOffPolicySteps
	kept := s.rs[:0]
	for _, r := range s.rs {
		if int(r.PolicyVersion) >= oldest {
			kept = append(kept, r)
		}
	}
	n := len(s.rs) - len(kept)
	s.rs = kept
	if n > 0 {
		l.log.Warn("rollouts dropped: their policy is older than train.max_off_policy_steps allows",
			zap.Int("step", step), zap.Int("count", n), zap.Int("oldest_policy_kept", oldest))
	}
	return n
}

// allPending is finishReady's step that finishes every pending step.
const allPending = math.MaxInt

// adapterFiles are the files a LoRA adapter folder must hold (peft's
// save_pretrained): its config and its weights in one of two formats.
var adapterFiles = [][]string{{"adapter_config.json"}, {"adapter_model.safetensors", "adapter_model.bin"}}

// adapterDir returns the absolute path of the adapter trained on step
// (AdapterDir).
func (l *Loop) adapterDir(step int, done handshake.Done) (string, error) {
	return AdapterDir(l.opts.Dir, step, done)
}

// AdapterDir returns the absolute path of the adapter trained on step of
// run d: the folder DONE's adapter_path names (doneDir), after checking
// that it holds an adapter. An error names the step, what is missing and
// what to remove to train the step again.
func AdapterDir(d dataset.RunDir, step int, done handshake.Done) (string, error) {
	dir, err := doneDir(d, step, done, "adapter")
	if err != nil {
		return "", err
	}
	for _, alts := range adapterFiles {
		found := false
		for _, name := range alts {
			if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
				found = true
				break
			}
		}
		if !found {
			return "", fmt.Errorf("train.Loop step %d: the trainer wrote DONE, but the adapter in %s has no %s: "+
				"remove %s (the adapter and its DONE) to have step %d trained again from its batch",
				step, dir, strings.Join(alts, " or "), d.CheckpointDir(step), step)
		}
	}
	return dir, nil
}

// CheckpointAdapter reads the DONE of step of run d and returns its
// checked adapter folder (AdapterDir).
func CheckpointAdapter(d dataset.RunDir, step int) (string, error) {
	done, ok, err := handshake.ReadDone(d.CheckpointDir(step))
	if err != nil {
		return "", fmt.Errorf("train: step %d: %w", step, err)
	}
	if !ok {
		return "", fmt.Errorf("train: step %d: %s has no DONE", step, d.CheckpointDir(step))
	}
	return AdapterDir(d, step, done)
}

// doneDir is the absolute folder the DONE of run d's step names in
// adapter_path (relative to the checkpoint directory, or absolute inside
// it), else the checkpoint directory itself; what names the files in the
// error of a path outside.
func doneDir(d dataset.RunDir, step int, done handshake.Done, what string) (string, error) {
	ck, err := filepath.Abs(d.CheckpointDir(step))
	if err != nil {
		return "", fmt.Errorf("train.Loop step %d: %w", step, err)
	}
	dir := done.AdapterPath
	switch {
	case dir == "" || dir == d.CheckpointDir(step):
		dir = ck
	case !filepath.IsAbs(dir):
		dir = filepath.Join(ck, dir)
	}
	if rel, err := filepath.Rel(ck, filepath.Clean(dir)); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("train.Loop step %d: DONE's adapter_path %q is outside %s: the trainer must write the %s inside the step's checkpoint directory", step, done.AdapterPath, ck, what)
	}
	return dir, nil
}

// trainedAdapter reads step's DONE and returns its checked adapter folder.
func (l *Loop) trainedAdapter(step int) (string, error) {
	done, ok, err := handshake.ReadDone(l.opts.Dir.CheckpointDir(step))
	if err != nil {
		return "", fmt.Errorf("train.Loop step %d: %w", step, err)
	}
	if !ok {
		return "", fmt.Errorf("train.Loop step %d: state.json says it was trained, but %s has no DONE", step, l.opts.Dir.CheckpointDir(step))
	}
	return l.adapterDir(step, done)
}

// finish completes step once the trainer has: it waits for the step's
// DONE, serves the new adapter, records the step's metrics line and then
// the state, and queues the step's evaluation. A crash between two of
// these resumes here: DONE is final, the adapter is loaded again, a
// recorded line is not appended twice, and the state is saved last.
func (l *Loop) finish(ctx context.Context, step int) error {
	t0 := time.Now()
	tick, end := l.progress(fmt.Sprintf("step %d trainer", step), 1)
	done, err := l.waitTrainer(ctx, step)
	if err == nil {
		tick()
	}
	end(err != nil)
	if err != nil {
		return err
	}
	crashpoint.Hit("after-done") // the step trained, nothing recorded yet
	waitSec := time.Since(t0).Seconds()
	name, update, err := l.serve(ctx, step, done)
	if err != nil {
		return err
	}
	m, sc, err := l.recordStep(step, done, waitSec, update)
	if err != nil {
		return err
	}
	crashpoint.Hit("after-metrics") // the metrics line written, the state not
	if err := l.saveState(step, name, sc); err != nil {
		return err
	}
	if l.opts.OnStep != nil {
		l.opts.OnStep(m.Strings())
	}
	l.xp.queue(step)
	// Queued, not run: the evaluation goes on beside the next steps.
	if err := l.ev.queue(step); err != nil {
		l.log.Warn("the step's evaluation cannot run", zap.Int("step", step), zap.Error(err))
	}
	return nil
}

// serve puts the policy trained on step in service: its adapter under
// its name, or (full weights) its weights, with the update's metrics.
func (l *Loop) serve(ctx context.Context, step int, done handshake.Done) (string, map[string]float64, error) {
	if l.opts.Weights == nil {
		name := l.AdapterName(step)
		return name, nil, l.serveAdapter(ctx, step, name, done)
	}
	dir, err := l.weightsDir(step, done)
	if err != nil {
		return "", nil, err
	}
	m, err := l.opts.Weights.Sync(ctx, step, dir)
	if err != nil {
		return "", nil, fmt.Errorf("train.Loop step %d: %w", step, err)
	}
	if l.stream != nil {
		l.stream.serve("", step)
	}
	l.log.Info("weights updated", zap.Int("step", step), zap.Float64("seconds", m[string(metrics.KeyUpdateSeconds)]),
		zap.Float64("checksums_compared", m[string(metrics.KeyUpdateChecksums)]))
	return "", m, nil
}

// weightsDir returns the absolute folder of the full weights trained on
// step (DONE's adapter_path, as adapterDir), after checking that it holds
// safetensors files.
func (l *Loop) weightsDir(step int, done handshake.Done) (string, error) {
	dir, err := doneDir(l.opts.Dir, step, done, "weights")
	if err != nil {
		return "", err
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*.safetensors")); len(m) == 0 {
		return "", fmt.Errorf("train.Loop step %d: the trainer wrote DONE, but %s holds no *.safetensors weights (trainer.full_finetune: true needs a trainer that writes full weights; an adapter cannot be loaded as weights): "+
			"remove %s to have step %d trained again from its batch", step, dir, l.opts.Dir.CheckpointDir(step), step)
	}
	return dir, nil
}

// policyWeights returns the folder of the full weights of policy version
// v: the base model's for 0, else the trained step's.
func (l *Loop) policyWeights(v int) (string, error) {
	if v == 0 {
		return l.opts.BaseWeights, nil
	}
	done, ok, err := handshake.ReadDone(l.opts.Dir.CheckpointDir(v))
	if err != nil {
		return "", fmt.Errorf("train.Loop step %d: %w", v, err)
	}
	if !ok {
		return "", fmt.Errorf("train.Loop step %d: state.json says it was trained, but %s has no DONE", v, l.opts.Dir.CheckpointDir(v))
	}
	return l.weightsDir(v, done)
}

// serveAdapter loads the adapter trained on step (its DONE, done) into
// every endpoint under name, then unloads the adapter it replaces.
func (l *Loop) serveAdapter(ctx context.Context, step int, name string, done handshake.Done) error {
	dir, err := l.adapterDir(step, done)
	if err != nil {
		return err
	}
	if err := l.opts.Adapters.LoadLoRA(ctx, name, dir); err != nil {
		return fmt.Errorf("train.Loop step %d: load adapter %s from %s: %w", step, name, dir, err)
	}
	if l.stream != nil {
		// Groups in flight may play the adapter replaced: the stream
		// unloads it once they are done.
		l.stream.serve(name, step)
		return nil
	}
	if prev := l.state.Adapter; prev != "" && prev != name && (l.league == nil || !l.league.Holds(prev)) {
		if err := l.opts.Adapters.UnloadLoRA(ctx, prev); err != nil {
			l.log.Warn("unload of the previous adapter failed", zap.String("adapter", prev), zap.Error(err))
		}
	}
	return nil
}

// recordStep appends step's metrics line unless metrics.jsonl holds it:
// the sampling's metrics (the sidecar's), the wait for the trainer and the
// trainer's metrics from done. It returns the line and the role baseline
// after the step.
func (l *Loop) recordStep(step int, done handshake.Done, waitSec float64, update map[string]float64) (metrics.Line, sidecar, error) {
	sc, err := l.readSidecar(step)
	if err != nil {
		// Only a trained step gets here without its sidecar (resumeBatch
		// said so): record what the trainer reported.
		sc = sidecar{Metrics: metrics.Line{metrics.KeySampleMetricsLost: true}, RoleBaseline: l.baseline.Clone(), Curriculum: l.cur.Clone()}
	}
	m := sc.Metrics
	delete(m, metrics.KeyEvals) // the trainer's; metrics.jsonl has their own lines
	m[metrics.KeyStep] = step
	m[metrics.KeyWaitTrainerSeconds] = waitSec
	for k, v := range done.Metrics {
		m[metrics.TrainerPrefix+metrics.Key(k)] = v
	}
	for k, v := range update {
		m[metrics.Key(k)] = v
	}
	if !l.recorded[step] {
		l.metricsMu.Lock()
		err := AppendMetrics(l.opts.Dir.MetricsPath(), m)
		l.metricsMu.Unlock()
		if err != nil {
			return nil, sidecar{}, err
		}
		l.recorded[step] = true
	}
	return m, sc, nil
}

// saveState records step as the last completed one and its adapter (name)
// as the policy served. With staleness k the steps after this one
// may have been sampled by older policies; the state records the newest
// trained policy.
func (l *Loop) saveState(step int, name string, sc sidecar) error {
	l.state.Step = step
	l.state.PolicyVersion = step
	l.state.Adapter = name
	l.state.RoleBaseline = sc.RoleBaseline
	if l.opts.Curriculum != nil {
		l.state.Curriculum = sc.Curriculum
	}
	l.state.RunID = l.opts.RunID
	l.state.Seed = l.opts.Seed
	l.state.UpdatedUnixMS = time.Now().UnixMilli()
	return SaveState(l.opts.Dir.StatePath(), l.state)
}

// waitTrainer waits for step's DONE (train.trainer_timeout at most),
// checking the trainer at every poll (checkTrainer).
func (l *Loop) waitTrainer(ctx context.Context, step int) (handshake.Done, error) {
	if d, ok, err := handshake.ReadDone(l.opts.Dir.CheckpointDir(step)); err == nil && ok {
		return d, nil
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, l.opts.TrainerTimeout)
	defer cancel()
	type result struct {
		d   handshake.Done
		err error
	}
	ch := make(chan result, 1)
	go func() {
		d, err := handshake.WaitDone(ctx, l.opts.Dir.CheckpointDir(step), l.opts.DonePoll)
		ch <- result{d, err}
	}()
	poll := time.NewTicker(l.opts.DonePoll)
	defer poll.Stop()
	w := &trainerWatch{start: time.Now(), lastLog: time.Now()}
	for {
		select {
		case r := <-ch:
			return l.trainerDone(parent, step, r.d, r.err, w.wasDown)
		case <-poll.C:
			if err := l.checkTrainer(step, w); err != nil {
				return handshake.Done{}, err
			}
		}
	}
}

// trainerWatch is what waitTrainer remembers between polls: when it began
// waiting and last logged, and whether the trainer was seen down.
type trainerWatch struct {
	start, lastLog time.Time
	wasDown        bool
}

// trainerDone is waitTrainer's answer once WaitDone returned d or err:
// the error says whether the run was stopped, the trainer timed out or
// its DONE is bad.
func (l *Loop) trainerDone(parent context.Context, step int, d handshake.Done, err error, wasDown bool) (handshake.Done, error) {
	if err != nil {
		if parent.Err() != nil {
			return handshake.Done{}, fmt.Errorf("train.Loop step %d: waiting for the trainer: %w", step, parent.Err())
		}
		if errors.Is(err, context.DeadlineExceeded) {
			if m, _ := filepath.Glob(filepath.Join(l.opts.Dir.CheckpointDir(step), "*.safetensors")); len(m) > 0 {
				return handshake.Done{}, fmt.Errorf("train.Loop step %d: %s holds weights but no DONE after %s (train.trainer_timeout): the trainer died or stopped while saving them, and weights without DONE are never served; "+
					"restart the trainer (it trains the step again from its batch and replaces them), then resume with --resume", step, l.opts.Dir.CheckpointDir(step), l.opts.TrainerTimeout)
			}
			return handshake.Done{}, fmt.Errorf("train.Loop step %d: no DONE from the trainer after %s (train.trainer_timeout); is the trainer running on %s?", step, l.opts.TrainerTimeout, l.opts.Dir.Root())
		}
		return handshake.Done{}, fmt.Errorf("train.Loop step %d: %w", step, err)
	}
	if wasDown {
		l.log.Info("trainer is back", zap.Int("step", step))
	}
	return d, nil
}

// checkTrainer runs at every poll of the wait for step's DONE, so that a
// trainer that refuses the batch or has failed for good is seen at once:
// it fails the wait on a REFUSED marker or a trainer parley gave up
// restarting, and says when the trainer parley started is down and, every
// WaitLogEvery, that the wait goes on.
func (l *Loop) checkTrainer(step int, w *trainerWatch) error {
	if ref, ok := handshake.ReadRefused(l.opts.Dir.CheckpointDir(step)); ok {
		return fmt.Errorf("train.Loop step %d: the trainer refused the batch %s: %s; "+
			"remove %s, %s and %s to have the step sampled again", step, l.opts.Dir.BatchPath(step), ref.Reason,
			l.opts.Dir.BatchPath(step), l.opts.Dir.ReadyPath(step), filepath.Join(l.opts.Dir.CheckpointDir(step), handshake.RefusedFile))
	}
	if l.opts.TrainerGone != nil {
		if err := l.opts.TrainerGone(); err != nil {
			return fmt.Errorf("train.Loop step %d: %w", step, err)
		}
	}
	down := false
	if l.opts.TrainerAlive != nil {
		if err := l.opts.TrainerAlive(); err != nil {
			if !w.wasDown {
				l.log.Warn("the trainer is not running", zap.Int("step", step), zap.Error(err))
			}
			w.wasDown, down = true, true
		}
	}
	if time.Since(w.lastLog) >= l.opts.WaitLogEvery {
		w.lastLog = time.Now()
		fields := []zap.Field{zap.Int("step", step), zap.Duration("waited", time.Since(w.start).Round(time.Second))}
		if down {
			l.log.Warn("waiting for the trainer, which is not running", fields...)
		} else {
			l.log.Info("waiting for the trainer", fields...)
		}
	}
	return nil
}

// recorded is what metrics.jsonl holds: the steps whose step line it
// holds, and those whose evaluation line ("kind": "eval") and audit line
// ("kind": "audit") it holds.
type recorded struct {
	steps, evals, audits map[int]bool
}

// recordedSteps reads what metrics.jsonl holds, dropping a torn last line
// left by a crash. Any other line that is not a JSON object with an
// integer step is an error naming the file and the line: skipped, it would
// hide a step's record (which the resumed loop would then write again).
func recordedSteps(path string) (recorded, error) {
	rec := recorded{steps: map[int]bool{}, evals: map[int]bool{}, audits: map[int]bool{}}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return rec, nil
	}
	if err != nil {
		return recorded{}, fmt.Errorf("train: read %s: %w", path, err)
	}
	if n := len(b); n > 0 && b[n-1] != '\n' {
		cut := bytes.LastIndexByte(b, '\n') + 1
		if err := os.Truncate(path, int64(cut)); err != nil {
			return recorded{}, fmt.Errorf("train: drop torn line of %s: %w", path, err)
		}
		b = b[:cut]
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for line := 1; sc.Scan(); line++ {
		var m struct {
			Step *int   `json:"step"`
			Kind string `json:"kind"`
		}
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil || m.Step == nil {
			if err == nil {
				err = errors.New(`no integer "step"`)
			}
			return recorded{}, fmt.Errorf("train: %s line %d is not a metrics line (%w): repair or remove it, then resume", path, line, err)
		}
		switch m.Kind {
		case metrics.EvalKind:
			rec.evals[*m.Step] = true
		case metrics.AuditKind:
			rec.audits[*m.Step] = true
		default:
			rec.steps[*m.Step] = true
		}
	}
	return rec, nil
}
