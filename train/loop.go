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
	"time"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/grpo"
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
}

// sidecar is what a step's sampling leaves beside its rollouts for the
// step's metrics line and the role baseline, so that a resumed run that
// skips the written batch still has both.
type sidecar struct {
	Metrics      map[string]any     `json:"metrics"`
	RoleBaseline *grpo.RoleBaseline `json:"role_baseline"`
}

func (l *Loop) readSidecar(step int) (sidecar, error) {
	var sc sidecar
	b, err := os.ReadFile(l.sidecarPath(step))
	if err != nil {
		return sc, fmt.Errorf("train.Loop step %d: %w", step, err)
	}
	if err := json.Unmarshal(b, &sc); err != nil {
		return sc, fmt.Errorf("train.Loop step %d: %s: %w", step, l.sidecarPath(step), err)
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
	if opts.MaxStaleness != 0 && opts.MaxStaleness != 1 {
		return nil, fmt.Errorf("train.NewLoop: max staleness %d: want 0 or 1", opts.MaxStaleness)
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
	recorded, err := recordedSteps(opts.Dir.MetricsPath())
	if err != nil {
		return nil, err
	}
	return &Loop{opts: opts, log: opts.Logger, state: st, recorded: recorded, baseline: st.RoleBaseline.Clone()}, nil
}

// State is the loop's current state.
func (l *Loop) State() State { return l.state }

// AdapterName names the adapter trained on step: the prefix, the run's
// nonce and the step.
func (l *Loop) AdapterName(step int) string {
	return fmt.Sprintf("%s-%s-%06d", l.opts.AdapterPrefix, l.state.Nonce, step)
}

// Run trains from the step after the last completed one to Steps.
func (l *Loop) Run(ctx context.Context) error {
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

func (l *Loop) adapterPath(step int) string {
	p, err := filepath.Abs(l.opts.Dir.CheckpointDir(step))
	if err != nil {
		return l.opts.Dir.CheckpointDir(step)
	}
	return p
}

func (l *Loop) sidecarPath(step int) string { return SidecarPath(l.opts.Dir, step) }

// ensureBatch samples, judges and writes step's rollouts and batch unless
// its batch is already written and verified.
func (l *Loop) ensureBatch(ctx context.Context, step int) error {
	if _, err := dataset.VerifyBatch(l.opts.Dir.BatchPath(step), step); err == nil {
		// The trainer may have trained this batch: never sample it again.
		sc, err := l.readSidecar(step)
		if err != nil {
			return fmt.Errorf("train.Loop: step %d's batch is written but its metrics are not: %w", step, err)
		}
		l.baseline = sc.RoleBaseline
		l.log.Info("batch already written", zap.Int("step", step))
		return nil
	}
	// Load the sampling adapter again before every step: an inference
	// server restarted since (or a resumed run) no longer holds it.
	if l.state.Adapter != "" {
		if err := l.opts.Adapters.LoadLoRA(ctx, l.state.Adapter, l.adapterPath(l.state.PolicyVersion)); err != nil {
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
	prompts := rollout.SelectPrompts(l.opts.Prompts, l.opts.Mix, l.opts.PromptsPerStep, l.opts.Seed, step)
	t0 := time.Now()
	var rs []dataset.Rollout
	sum, err := runner.Run(ctx, prompts, func(r *dataset.Rollout) error {
		rs = append(rs, *r)
		return nil
	})
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
	res, err := ScoreStep(ctx, l.opts.Judge, rs, baseline, ScoreOptions{
		RunID: l.opts.RunID, Step: step, PolicyVersion: pv,
		Advantage: l.opts.Advantage, Mask: l.opts.Mask, JudgeConcurrency: l.opts.JudgeConcurrency,
	})
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
	b, err := json.Marshal(sidecar{Metrics: m, RoleBaseline: baseline})
	if err != nil {
		return fmt.Errorf("train.Loop step %d: metrics: %w", step, err)
	}
	ready, err := WriteStep(l.opts.Dir, step, pv, rs, res.Rows, b, l.log)
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
	done, err := l.waitTrainer(ctx, step)
	if err != nil {
		return err
	}
	waitSec := time.Since(t0).Seconds()
	name := l.AdapterName(step)
	if err := l.opts.Adapters.LoadLoRA(ctx, name, l.adapterPath(step)); err != nil {
		return fmt.Errorf("train.Loop step %d: load adapter %s: %w", step, name, err)
	}
	if prev := l.state.Adapter; prev != "" && prev != name {
		if err := l.opts.Adapters.UnloadLoRA(ctx, prev); err != nil {
			l.log.Warn("unload of the previous adapter failed", zap.String("adapter", prev), zap.Error(err))
		}
	}
	sc, err := l.readSidecar(step)
	if err != nil {
		return err
	}
	m := sc.Metrics
	m["step"] = step
	m["wait_trainer_seconds"] = waitSec
	for k, v := range done.Metrics {
		m["trainer/"+k] = v
	}
	if !l.recorded[step] {
		if err := AppendMetrics(l.opts.Dir.MetricsPath(), m); err != nil {
			return err
		}
		l.recorded[step] = true
	}
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
	tick := time.NewTicker(l.opts.WaitLogEvery)
	defer tick.Stop()
	start := time.Now()
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
		case <-tick.C:
			if l.opts.TrainerGone != nil {
				if err := l.opts.TrainerGone(); err != nil {
					return Done{}, fmt.Errorf("train.Loop step %d: %w", step, err)
				}
			}
			fields := []zap.Field{zap.Int("step", step), zap.Duration("waited", time.Since(start).Round(time.Second))}
			if l.opts.TrainerAlive != nil {
				if err := l.opts.TrainerAlive(); err != nil {
					wasDown = true
					l.log.Warn("waiting for the trainer, which is not running", append(fields, zap.Error(err))...)
					continue
				}
			}
			l.log.Info("waiting for the trainer", fields...)
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

// recordedSteps reads the steps metrics.jsonl already holds, dropping a
// torn last line left by a crash.
func recordedSteps(path string) (map[int]bool, error) {
	out := map[int]bool{}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("train: read %s: %w", path, err)
	}
	if n := len(b); n > 0 && b[n-1] != '\n' {
		cut := bytes.LastIndexByte(b, '\n') + 1
		if err := os.Truncate(path, int64(cut)); err != nil {
			return nil, fmt.Errorf("train: drop torn line of %s: %w", path, err)
		}
		b = b[:cut]
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		var m struct {
			Step *int `json:"step"`
		}
		if json.Unmarshal(sc.Bytes(), &m) == nil && m.Step != nil {
			out[*m.Step] = true
		}
	}
	return out, nil
}
