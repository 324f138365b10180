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
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/grpo"
	"github.com/parleyhq/parley/internal/crashpoint"
	"github.com/parleyhq/parley/reward"
	"github.com/parleyhq/parley/rollout"
	"go.uber.org/zap"
)

// AdapterLoader loads a trained LoRA adapter into every inference endpoint
// (the llm client does).
type AdapterLoader interface {
	LoadLoRA(ctx context.Context, name, path string) error
	UnloadLoRA(ctx context.Context, name string) error
}

// LoopOptions configure the training loop.
type LoopOptions struct {
	Dir   dataset.RunDir
	RunID string
	Seed  int64
	// Steps is the last step to train (steps count from 1).
	Steps int
	// MaxStaleness is 0 (step N is sampled by the policy of step N-1) or 1
	// (step N+1 is sampled while step N trains).
	MaxStaleness int

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
	Advantage        grpo.AdvantageOptions
	Mask             string

	Adapters      AdapterLoader
	AdapterPrefix string

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
	// staleness 1 it runs one step ahead of the state's).
	baseline *grpo.RoleBaseline
	// ev runs the evaluations of the current Run.
	ev *evaluator
	// metricsMu serialises the appends to metrics.jsonl of the loop and
	// its evaluations; evalRecorded (under it) holds the steps whose
	// evaluation line is written.
	metricsMu    sync.Mutex
	evalRecorded map[int]bool
}

// readSidecar reads step's sidecar (SidecarPath) as it is written.
func readSidecar(d dataset.RunDir, step int) (sidecar, error) {
	var sc sidecar
	b, err := os.ReadFile(SidecarPath(d, step))
	if err != nil {
		return sc, err
	}
	if err := json.Unmarshal(b, &sc); err != nil {
		return sc, fmt.Errorf("%s: %w", SidecarPath(d, step), err)
	}
	return sc, nil
}

// sidecar is what a step's sampling leaves beside its rollouts for the
// step's metrics line and the role baseline, so that a resumed run that
// skips the written batch still has both.
type sidecar struct {
	Metrics      map[string]any     `json:"metrics"`
	RoleBaseline *grpo.RoleBaseline `json:"role_baseline"`
	// Series are the series cursors after the step (series training).
	Series []SeriesCursor `json:"series,omitempty"`
}

func (l *Loop) readSidecar(step int) (sidecar, error) {
	sc, err := readSidecar(l.opts.Dir, step)
	if err != nil {
		return sc, fmt.Errorf("train.Loop step %d: %w", step, err)
	}
	if sc.Metrics == nil {
		sc.Metrics = map[string]any{}
	}
	if sc.RoleBaseline == nil {
		sc.RoleBaseline = grpo.NewRoleBaseline()
	}
	return sc, nil
}

// NewLoop checks opts and reads the run's state.
func NewLoop(opts LoopOptions) (*Loop, error) {
	if opts.Rollout.Game == nil || opts.Rollout.Policy == nil || opts.Judge == nil || opts.Adapters == nil {
		return nil, errors.New("train.NewLoop: game, policy, judge and adapter loader are required")
	}
	if len(opts.Prompts) == 0 || opts.PromptsPerStep <= 0 || opts.Steps <= 0 {
		return nil, fmt.Errorf("train.NewLoop: need prompts (%d), prompts per step (%d) and steps (%d)", len(opts.Prompts), opts.PromptsPerStep, opts.Steps)
	}
	if err := dataset.CheckTrainRows("the curriculum", opts.Prompts); err != nil {
		return nil, fmt.Errorf("train.NewLoop: %w", err)
	}
	if opts.MaxStaleness != 0 && opts.MaxStaleness != 1 {
		return nil, fmt.Errorf("train.NewLoop: max staleness %d: want 0 or 1", opts.MaxStaleness)
	}
	if so := opts.Series; so != nil {
		if _, ok := opts.Rollout.Game.(rollout.SeriesGame); !ok || so.Plan == nil || so.Slots <= 0 {
			return nil, fmt.Errorf("train.NewLoop: series training needs a SeriesGame (%s), a plan and slots (%d)", opts.Rollout.Game.Name(), so.Slots)
		}
	}
	if opts.DonePoll <= 0 {
		opts.DonePoll = DefaultDonePoll
	}
	if opts.WaitLogEvery <= 0 {
		opts.WaitLogEvery = 30 * time.Second
	}
	if opts.TrainerTimeout <= 0 {
		opts.TrainerTimeout = 24 * time.Hour
	}
	if opts.AdapterPrefix == "" {
		opts.AdapterPrefix = "parley"
	}
	if opts.MaxFailedFraction <= 0 {
		opts.MaxFailedFraction = 0.5
	}
	if err := opts.Eval.check(); err != nil {
		return nil, fmt.Errorf("train.NewLoop: %w", err)
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if err := opts.Dir.Create(); err != nil {
		return nil, err
	}
	st, ok, err := LoadState(opts.Dir.StatePath())
	if err != nil {
		return nil, err
	}
	if !ok {
		st = State{Version: StateVersion, RunID: opts.RunID, Seed: opts.Seed, RoleBaseline: grpo.NewRoleBaseline()}
	}
	if st.Nonce == "" {
		var b [4]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, fmt.Errorf("train.NewLoop: %w", err)
		}
		st.Nonce = hex.EncodeToString(b[:])
		if err := SaveState(opts.Dir.StatePath(), st); err != nil {
			return nil, err
		}
	}
	if st.RoleBaseline == nil {
		st.RoleBaseline = grpo.NewRoleBaseline()
	}
	recorded, evals, err := recordedSteps(opts.Dir.MetricsPath())
	if err != nil {
		return nil, err
	}
	return &Loop{opts: opts, log: opts.Logger, state: st, recorded: recorded, evalRecorded: evals, baseline: st.RoleBaseline.Clone()}, nil
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
	pending := 0
	for step := l.state.Step + 1; step <= l.opts.Steps; step++ {
		if err := l.ensureBatch(ctx, step); err != nil {
			return err
		}
		if l.opts.MaxStaleness == 1 && pending > 0 {
			if err := l.finish(ctx, pending); err != nil {
				return err
			}
		}
		pending = step
		if l.opts.MaxStaleness == 0 {
			if err := l.finish(ctx, step); err != nil {
				return err
			}
			pending = 0
		}
	}
	if pending > 0 {
		return l.finish(ctx, pending)
	}
	return nil
}

// adapterFiles are the files a LoRA adapter folder must hold (peft's
// save_pretrained): its config and its weights in one of two formats.
var adapterFiles = [][]string{{"adapter_config.json"}, {"adapter_model.safetensors", "adapter_model.bin"}}

// adapterDir returns the absolute path of the adapter trained on step: the
// folder DONE's adapter_path names (relative to the checkpoint directory,
// or absolute inside it), else the checkpoint directory itself, after
// checking that it holds an adapter. An error names the step, what is
// missing and what to remove to train the step again.
func (l *Loop) adapterDir(step int, done Done) (string, error) {
	ck, err := filepath.Abs(l.opts.Dir.CheckpointDir(step))
	if err != nil {
		return "", fmt.Errorf("train.Loop step %d: %w", step, err)
	}
	dir := done.AdapterPath
	switch {
	case dir == "" || dir == l.opts.Dir.CheckpointDir(step):
		dir = ck
	case !filepath.IsAbs(dir):
		dir = filepath.Join(ck, dir)
	}
	if rel, err := filepath.Rel(ck, filepath.Clean(dir)); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("train.Loop step %d: DONE's adapter_path %q is outside %s: the trainer must write the adapter inside the step's checkpoint directory", step, done.AdapterPath, ck)
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
				step, dir, strings.Join(alts, " or "), l.opts.Dir.CheckpointDir(step), step)
		}
	}
	return dir, nil
}

// trainedAdapter reads step's DONE and returns its checked adapter folder.
func (l *Loop) trainedAdapter(step int) (string, error) {
	done, ok, err := ReadDone(l.opts.Dir.CheckpointDir(step))
	if err != nil {
		return "", fmt.Errorf("train.Loop step %d: %w", step, err)
	}
	if !ok {
		return "", fmt.Errorf("train.Loop step %d: state.json says it was trained, but %s has no DONE", step, l.opts.Dir.CheckpointDir(step))
	}
	return l.adapterDir(step, done)
}

// ensureBatch samples, judges and writes step's rollouts and batch unless
// they are final: a batch with a verified .ready, or any batch of a step
// the trainer already finished (DONE). A step with DONE is never sampled
// again, even when its batch no longer verifies; a pending batch that does
// not verify is sampled again, and the log says why.
func (l *Loop) ensureBatch(ctx context.Context, step int) error {
	_, verr := dataset.VerifyBatch(l.opts.Dir.BatchPath(step), step)
	_, trained, derr := ReadDone(l.opts.Dir.CheckpointDir(step))
	if derr != nil {
		return fmt.Errorf("train.Loop step %d: %w", step, derr)
	}
	if verr == nil || trained {
		if verr != nil {
			l.log.Warn("step was trained (DONE), but its batch no longer verifies; going on with its adapter and never sampling it again",
				zap.Int("step", step), zap.Error(verr))
		}
		// The trainer may have trained this batch: never sample it again.
		sc, err := l.readSidecar(step)
		switch {
		case err == nil:
			l.baseline = sc.RoleBaseline
		case trained:
			l.log.Warn("step was trained, but the metrics of its sampling are lost; its metrics line will hold the trainer's",
				zap.Int("step", step), zap.Error(err))
		default:
			return fmt.Errorf("train.Loop: step %d's batch is written but its metrics are not: %w", step, err)
		}
		l.log.Info("batch already written", zap.Int("step", step))
		return nil
	}
	if _, err := os.Stat(l.opts.Dir.ReadyPath(step)); err == nil {
		l.log.Warn("the step's written batch does not verify against its .ready; sampling it again",
			zap.Int("step", step), zap.String("batch", l.opts.Dir.BatchPath(step)), zap.Error(verr))
	}
	// Load the sampling adapter again before every step: an inference
	// server restarted since (or a resumed run) no longer holds it.
	if l.state.Adapter != "" {
		dir, err := l.trainedAdapter(l.state.PolicyVersion)
		if err != nil {
			return err
		}
		if err := l.opts.Adapters.LoadLoRA(ctx, l.state.Adapter, dir); err != nil {
			return fmt.Errorf("train.Loop step %d: load adapter %s: %w", step, l.state.Adapter, err)
		}
	}
	pv := l.state.PolicyVersion
	model := l.opts.Rollout.Model
	if l.state.Adapter != "" {
		model = l.state.Adapter
	}
	ro := l.opts.Rollout
	ro.Model, ro.Step, ro.PolicyVersion, ro.RunID, ro.Seed = model, step, pv, l.opts.RunID, l.opts.Seed
	runner, err := rollout.NewRunner(ro)
	if err != nil {
		return err
	}
	t0 := time.Now()
	var (
		rs      []dataset.Rollout
		sum     rollout.Summary
		cursors []SeriesCursor
	)
	if l.opts.Series != nil {
		tick, end := l.progress(fmt.Sprintf("step %d rollouts", step), l.opts.Series.Slots*ro.GroupSize)
		rs, sum, cursors, err = l.sampleSeries(ctx, runner, step, tick)
		end(err != nil || ctx.Err() != nil)
	} else {
		prompts := rollout.SelectPrompts(l.opts.Prompts, l.opts.Mix, l.opts.PromptsPerStep, l.opts.Seed, step)
		tick, end := l.progress(fmt.Sprintf("step %d rollouts", step), len(prompts)*ro.GroupSize)
		sum, err = runner.Run(ctx, prompts, func(r *dataset.Rollout) error {
			rs = append(rs, *r)
			tick()
			return nil
		})
		end(err != nil || ctx.Err() != nil)
	}
	if err != nil {
		return fmt.Errorf("train.Loop step %d: %w", step, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("train.Loop step %d: %w", step, err)
	}
	// Completion order varies with timing; the step's files do not.
	sort.Slice(rs, func(i, j int) bool { return rs[i].RolloutID < rs[j].RolloutID })
	sampleSec := time.Since(t0).Seconds()
	t1 := time.Now()
	baseline := l.baseline.Clone()
	tick, end := l.progress(fmt.Sprintf("step %d judging", step), len(rs))
	res, err := ScoreStep(ctx, l.opts.Judge, rs, baseline, ScoreOptions{
		RunID: l.opts.RunID, Step: step, PolicyVersion: pv,
		Advantage: l.opts.Advantage, Mask: l.opts.Mask, JudgeConcurrency: l.opts.JudgeConcurrency,
		OnJudged: tick,
	})
	end(err != nil)
	if err != nil {
		return fmt.Errorf("train.Loop step %d: %w", step, err)
	}
	judgeSec := time.Since(t1).Seconds()
	for cause, n := range sum.Errors {
		l.log.Warn("rollouts failed", zap.Int("step", step), zap.Int("count", n), zap.String("cause", cause))
	}
	if failed := sum.Failed + res.Judge.Failed; float64(failed) > l.opts.MaxFailedFraction*float64(max(len(rs), 1)) {
		msg := fmt.Sprintf("train.Loop step %d: %d of %d rollouts failed (%d sampling, %d judging), more than train.max_failed_fraction %g; first error",
			step, failed, len(rs), sum.Failed, res.Judge.Failed, l.opts.MaxFailedFraction)
		if sum.FirstErr != nil {
			return fmt.Errorf("%s: %w", msg, sum.FirstErr)
		}
		return fmt.Errorf("%s: %s", msg, firstError(rs))
	}
	if len(res.Rows) == 0 {
		l.log.Warn("the step's batch is empty (every group dropped or failed)", zap.Int("step", step),
			zap.Int("groups_zero_variance", res.Advantage.DroppedZeroVariance), zap.Int("rollouts_failed", sum.Failed))
	}

	m := map[string]any{
		"step": step, "policy_version": pv,
		"score_min": res.Advantage.ScoreMin, "score_mean": res.Advantage.ScoreMean, "score_max": res.Advantage.ScoreMax,
		"reward_mean": res.Advantage.RewardMean, "reward_std": res.Advantage.RewardStd,
		"agreement_rate": sum.AgreementRate, "rounds_to_agreement": sum.RoundsToAgree, "mean_rounds": sum.MeanRounds,
		"rollouts": sum.Rollouts, "rollouts_failed": sum.Failed,
		"judge_failed": res.Judge.Failed, "judge_cached": res.Judge.Cached,
		"groups": res.Advantage.Groups, "groups_dropped_zero_variance": res.Advantage.DroppedZeroVariance,
		"prompt_tokens": sum.PromptTokens, "sampled_tokens": sum.SampledTokens, "prefix_breaks": sum.PrefixBreaks,
		"sequences_per_rollout": sum.SequencesPerRollout, "trainer_tokens_per_sampled_token": sum.TrainerTokensPerSampled,
		"prompt_tokens_sent": sum.PromptTokensSent, "closed_turns": sum.ClosedTurns,
		"batch_rows": res.Batch.Rows, "batch_tokens": res.Batch.Tokens, "trained_tokens": res.Batch.TrainedTokens,
		"sample_seconds": sampleSec, "judge_seconds": judgeSec,
	}
	addRoleMetrics(m, res.Advantage.Roles)
	if spec, ok := rollout.Lookup(l.opts.Rollout.Game.Name()); ok && spec.Metrics != nil {
		for k, v := range spec.Metrics(rs) {
			m[k] = v
		}
	}
	b, err := json.Marshal(sidecar{Metrics: m, RoleBaseline: baseline, Series: cursors})
	if err != nil {
		return fmt.Errorf("train.Loop step %d: metrics: %w", step, err)
	}
	ready, err := WriteStep(l.opts.Dir, step, pv, rs, res.Rows, res.Scale, b, l.log)
	if err != nil {
		return err
	}
	l.baseline = baseline
	l.log.Info("batch written", zap.Int("step", step), zap.Int("policy_version", pv), zap.Int("rows", ready.Rows), zap.Int64("tokens", ready.Tokens),
		zap.Float64("reward_mean", res.Advantage.RewardMean), zap.Float64("agreement_rate", sum.AgreementRate), zap.Int("rollouts_failed", sum.Failed))
	return nil
}

// finish waits for step's DONE, loads its adapter, records its metrics
// and saves the state.
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
	name := l.AdapterName(step)
	dir, err := l.adapterDir(step, done)
	if err != nil {
		return err
	}
	if err := l.opts.Adapters.LoadLoRA(ctx, name, dir); err != nil {
		return fmt.Errorf("train.Loop step %d: load adapter %s from %s: %w", step, name, dir, err)
	}
	if prev := l.state.Adapter; prev != "" && prev != name {
		if err := l.opts.Adapters.UnloadLoRA(ctx, prev); err != nil {
			l.log.Warn("unload of the previous adapter failed", zap.String("adapter", prev), zap.Error(err))
		}
	}
	sc, err := l.readSidecar(step)
	if err != nil {
		// Only a trained step gets here without its sidecar (ensureBatch
		// said so): record what the trainer reported.
		sc = sidecar{Metrics: map[string]any{"sample_metrics_lost": true}, RoleBaseline: l.baseline.Clone()}
	}
	m := sc.Metrics
	m["step"] = step
	m["wait_trainer_seconds"] = waitSec
	for k, v := range done.Metrics {
		m["trainer/"+k] = v
	}
	if !l.recorded[step] {
		l.metricsMu.Lock()
		err := AppendMetrics(l.opts.Dir.MetricsPath(), m)
		l.metricsMu.Unlock()
		if err != nil {
			return err
		}
		l.recorded[step] = true
	}
	crashpoint.Hit("after-metrics") // the metrics line written, the state not
	// With staleness 1 the step after this one was sampled by the policy of
	// the step before; the state records the newest trained policy.
	l.state.Step = step
	l.state.PolicyVersion = step
	l.state.Adapter = name
	l.state.RoleBaseline = sc.RoleBaseline
	l.state.RunID = l.opts.RunID
	l.state.Seed = l.opts.Seed
	l.state.UpdatedUnixMS = time.Now().UnixMilli()
	if err := SaveState(l.opts.Dir.StatePath(), l.state); err != nil {
		return err
	}
	if l.opts.OnStep != nil {
		l.opts.OnStep(m)
	}
	// Queued, not run: the evaluation goes on beside the next steps.
	if err := l.ev.queue(step); err != nil {
		l.log.Warn("the step's evaluation cannot run", zap.Int("step", step), zap.Error(err))
	}
	return nil
}

// waitTrainer waits for step's DONE, saying so while it waits and when the
// trainer parley started is down.
func (l *Loop) waitTrainer(ctx context.Context, step int) (Done, error) {
	if d, ok, err := ReadDone(l.opts.Dir.CheckpointDir(step)); err == nil && ok {
		return d, nil
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, l.opts.TrainerTimeout)
	defer cancel()
	type result struct {
		d   Done
		err error
	}
	ch := make(chan result, 1)
	go func() {
		d, err := WaitDone(ctx, l.opts.Dir.CheckpointDir(step), l.opts.DonePoll)
		ch <- result{d, err}
	}()
	poll := time.NewTicker(l.opts.DonePoll)
	defer poll.Stop()
	start, lastLog := time.Now(), time.Now()
	wasDown := false
	for {
		select {
		case r := <-ch:
			if r.err != nil {
				if parent.Err() != nil {
					return Done{}, fmt.Errorf("train.Loop step %d: waiting for the trainer: %w", step, parent.Err())
				}
				if errors.Is(r.err, context.DeadlineExceeded) {
					return Done{}, fmt.Errorf("train.Loop step %d: no DONE from the trainer after %s (train.trainer_timeout); is the trainer running on %s?", step, l.opts.TrainerTimeout, l.opts.Dir.Root())
				}
				return Done{}, fmt.Errorf("train.Loop step %d: %w", step, r.err)
			}
			if wasDown {
				l.log.Info("trainer is back", zap.Int("step", step))
			}
			return r.d, nil
		case <-poll.C:
			// Checked at every poll, so a trainer that refuses the batch
			// or has crashed for good is seen at once.
			if ref, ok := ReadRefused(l.opts.Dir.CheckpointDir(step)); ok {
				return Done{}, fmt.Errorf("train.Loop step %d: the trainer refused the batch %s: %s; "+
					"remove %s, %s and %s to have the step sampled again", step, l.opts.Dir.BatchPath(step), ref.Reason,
					l.opts.Dir.BatchPath(step), l.opts.Dir.ReadyPath(step), filepath.Join(l.opts.Dir.CheckpointDir(step), RefusedFile))
			}
			if l.opts.TrainerGone != nil {
				if err := l.opts.TrainerGone(); err != nil {
					return Done{}, fmt.Errorf("train.Loop step %d: %w", step, err)
				}
			}
			down := false
			if l.opts.TrainerAlive != nil {
				if err := l.opts.TrainerAlive(); err != nil {
					if !wasDown {
						l.log.Warn("the trainer is not running", zap.Int("step", step), zap.Error(err))
					}
					wasDown, down = true, true
				}
			}
			if time.Since(lastLog) >= l.opts.WaitLogEvery {
				lastLog = time.Now()
				fields := []zap.Field{zap.Int("step", step), zap.Duration("waited", time.Since(start).Round(time.Second))}
				if down {
					l.log.Warn("waiting for the trainer, which is not running", fields...)
				} else {
					l.log.Info("waiting for the trainer", fields...)
				}
			}
		}
	}
}

// addRoleMetrics adds reward_mean/<role> for every trained role when the
// roles' rewards differ (a zero-sum game's sides, five parties); roles that
// share one reward (the deliberation game) add nothing beyond reward_mean.
func addRoleMetrics(m map[string]any, roles map[string]grpo.RoleStats) {
	differ := false
	first := true
	var mean float64
	for _, r := range roles {
		if first {
			mean, first = r.RewardMean, false
		} else if r.RewardMean != mean {
			differ = true
		}
	}
	if !differ {
		return
	}
	for role, r := range roles {
		m["reward_mean/"+role] = r.RewardMean
	}
}

// firstError is the first failure message among rs (sampling, then judging).
func firstError(rs []dataset.Rollout) string {
	for _, r := range rs {
		if r.Failed {
			return r.Error
		}
	}
	for _, r := range rs {
		if r.JudgeError != "" {
			return r.JudgeError
		}
	}
	return "none recorded"
}

// recordedSteps reads the steps whose line metrics.jsonl already holds,
// and those whose evaluation line it holds ("kind": "eval"), dropping a
// torn last line left by a crash.
func recordedSteps(path string) (steps, evals map[int]bool, err error) {
	steps, evals = map[int]bool{}, map[int]bool{}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return steps, evals, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("train: read %s: %w", path, err)
	}
	if n := len(b); n > 0 && b[n-1] != '\n' {
		cut := bytes.LastIndexByte(b, '\n') + 1
		if err := os.Truncate(path, int64(cut)); err != nil {
			return nil, nil, fmt.Errorf("train: drop torn line of %s: %w", path, err)
		}
		b = b[:cut]
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		var m struct {
			Step *int   `json:"step"`
			Kind string `json:"kind"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil || m.Step == nil {
			continue
		}
		if m.Kind == EvalKind {
			evals[*m.Step] = true
		} else {
			steps[*m.Step] = true
		}
	}
	return steps, evals, nil
}
