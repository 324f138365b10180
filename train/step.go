package train

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"sort"
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

// ensureBatch makes step's batch final. A batch already final is kept
// (resumeBatch); otherwise the step is sampled, judged and written. The
// phases before writeBatch leave nothing in the run directory, and
// writeBatch writes the .ready last, so a crash before it samples the step
// again from scratch and a crash after it never samples it again: no batch
// is lost, none is repeated.
func (l *Loop) ensureBatch(ctx context.Context, step int) error {
	if final, err := l.resumeBatch(step); final || err != nil {
		if err == nil {
			err = l.resumeLeague(step)
		}
		return err
	}
	s, err := l.sample(ctx, step)
	if err != nil {
		return err
	}
	dropped := l.dropOffPolicy(step, &s)
	j, err := l.judge(ctx, step, s)
	if err != nil {
		return err
	}
	j.cur = l.observeCurriculum(step, s.rs)
	m := l.stepMetrics(step, s, j)
	if err := l.gold.add(ctx, step, l.opts.Judge, m); err != nil {
		return err
	}
	l.jm.add(step, m)
	l.curriculumMetrics(step, s.rs, j.cur, m)
	if l.opts.MaxOffPolicySteps > 0 {
		m[metrics.KeyRolloutsDroppedOffPolicy] = dropped
	}
	if err := l.rateLeague(step, s, j, m); err != nil {
		return err
	}
	if err := l.writeBatch(step, s, j, m); err != nil {
		return err
	}
	if l.stream != nil {
		crashpoint.Hit("before-batch-journal") // the batch written, the journal not told
		if err := l.journalBatch(step, groupIDs(s.rs)); err != nil {
			return err
		}
	}
	// Queued, not run: the audit judge scores the step's sample beside
	// the next steps.
	l.au.queue(step)
	if s.league != nil {
		l.league = s.league
		if l.stream != nil {
			l.stream.setLeague(s.league.Clone())
		}
	}
	return nil
}

// resumeBatch reports whether step's batch is final, and then restores the
// role baseline after it from its sidecar. A batch that verifies against
// its .ready is final: the trainer may have taken it. Any batch of a step
// the trainer finished (DONE) is final too, even one that no longer
// verifies: its adapter exists. A final batch is never sampled again; a
// pending batch that does not verify is sampled again, and the log says
// why.
func (l *Loop) resumeBatch(step int) (bool, error) {
	_, verr := dataset.VerifyBatch(l.opts.Dir.BatchPath(step), step)
	_, trained, derr := handshake.ReadDone(l.opts.Dir.CheckpointDir(step))
	if derr != nil {
		return false, fmt.Errorf("train.Loop step %d: %w", step, derr)
	}
	if verr != nil && !trained {
		if _, err := os.Stat(l.opts.Dir.ReadyPath(step)); err == nil {
			l.log.Warn("the step's written batch does not verify against its .ready; sampling it again",
				zap.Int("step", step), zap.String("batch", l.opts.Dir.BatchPath(step)), zap.Error(verr))
			// No trainer may take the old batch while the step is sampled
			// again: parley_trainer refuses a batch its marker does not
			// match, and exits for good.
			if err := dataset.RemoveReady(l.opts.Dir.BatchPath(step)); err != nil {
				return false, fmt.Errorf("train.Loop step %d: %w", step, err)
			}
		}
		return false, nil
	}
	if verr != nil {
		l.log.Warn("step was trained (DONE), but its batch no longer verifies; going on with its adapter and never sampling it again",
			zap.Int("step", step), zap.Error(verr))
	}
	sc, err := l.readSidecar(step)
	switch {
	case err == nil:
		l.baseline = sc.RoleBaseline
		if l.opts.Curriculum != nil && sc.Curriculum != nil {
			l.cur = sc.Curriculum
		}
	case trained:
		l.log.Warn("step was trained, but the metrics of its sampling are lost; its metrics line will hold the trainer's",
			zap.Int("step", step), zap.Error(err))
	default:
		return false, fmt.Errorf("train.Loop: step %d's batch is written but its metrics are not: %w", step, err)
	}
	l.log.Info("batch already written", zap.Int("step", step))
	return true, nil
}

// sampled is a step's sampling: the policy version that sampled it, its
// rollouts in RolloutID order, their summary, the series cursors after the
// step (series training) and its time.
type sampled struct {
	pv      int
	rs      []dataset.Rollout
	sum     rollout.Summary
	cursors []SeriesCursor
	seconds float64
	// league is the league of the step (nil without one): its members
	// drawn, rated once the step is judged.
	league *league.State
	// pre is set when the rollouts were judged as they were sampled
	// (dynamic sampling).
	pre *preJudged
}

// sample plays step's groups with the policy now served: the next game of
// each series (series training) or GroupSize rollouts of each of the
// step's prompt rows.
func (l *Loop) sample(ctx context.Context, step int) (sampled, error) {
	if l.stream != nil {
		return l.stream.take(ctx, step)
	}
	s := sampled{pv: l.state.PolicyVersion}
	groups := l.opts.PromptsPerStep
	if l.opts.Series != nil {
		groups = l.opts.Series.Slots
	}
	next, drawn, err := l.leagueDraw(ctx, step, s.pv, groups)
	if err != nil {
		return s, err
	}
	s.league = next
	runner, err := l.stepRunner(ctx, step, drawn)
	if err != nil {
		return s, err
	}
	t0 := time.Now()
	if l.opts.Series != nil {
		tick, end := l.progress(fmt.Sprintf("step %d rollouts", step), l.opts.Series.Slots*l.opts.Rollout.GroupSize)
		s.rs, s.sum, s.cursors, err = l.sampleSeries(ctx, runner, step, tick)
		end(err != nil || ctx.Err() != nil)
	} else if l.opts.DynamicSampling {
		s.rs, s.sum, s.pre, err = l.sampleDynamic(ctx, runner, step)
	} else {
		s.rs, s.sum, err = l.samplePrompts(ctx, runner, step)
	}
	if err != nil {
		return s, fmt.Errorf("train.Loop step %d: %w", step, err)
	}
	if err := ctx.Err(); err != nil {
		return s, fmt.Errorf("train.Loop step %d: %w", step, err)
	}
	// Completion order varies with timing; the step's files do not.
	sort.Slice(s.rs, func(i, j int) bool { return s.rs[i].RolloutID < s.rs[j].RolloutID })
	s.seconds = time.Since(t0).Seconds()
	return s, nil
}

// stepRunner returns step's runner, sampling with the adapter now served
// (or the base model before the first). It loads that adapter again first:
// an inference server restarted since, or the one of a resumed run, no
// longer holds it. With full weights it brings the endpoints to the
// policy's weights (a no-op when they hold them, verified).
func (l *Loop) stepRunner(ctx context.Context, step int, drawn map[string]map[string]rollout.Player) (*rollout.Runner, error) {
	model := l.opts.Rollout.Model
	if l.opts.Weights != nil {
		dir, err := l.policyWeights(l.state.PolicyVersion)
		if err != nil {
			return nil, err
		}
		if _, err := l.opts.Weights.Sync(ctx, l.state.PolicyVersion, dir); err != nil {
			return nil, fmt.Errorf("train.Loop step %d: before sampling with policy version %d: %w", step, l.state.PolicyVersion, err)
		}
	} else if name := l.state.Adapter; name != "" {
		dir, err := l.trainedAdapter(l.state.PolicyVersion)
		if err != nil {
			return nil, err
		}
		if err := l.opts.Adapters.LoadLoRA(ctx, name, dir); err != nil {
			return nil, fmt.Errorf("train.Loop step %d: load adapter %s: %w", step, name, err)
		}
		model = name
	}
	ro := l.opts.Rollout
	ro.Model, ro.Step, ro.PolicyVersion, ro.RunID, ro.Seed = model, step, l.state.PolicyVersion, l.opts.RunID, l.opts.Seed
	ro.Drawn = drawn
	return rollout.NewRunner(ro)
}

// samplePrompts plays GroupSize rollouts of each of step's prompt rows
// (rollout.SelectPrompts), in completion order.
func (l *Loop) samplePrompts(ctx context.Context, runner *rollout.Runner, step int) ([]dataset.Rollout, rollout.Summary, error) {
	prompts := l.drawRows(l.cur, l.opts.PromptsPerStep, l.opts.Seed, step)
	tick, end := l.progress(fmt.Sprintf("step %d rollouts", step), len(prompts)*l.opts.Rollout.GroupSize)
	var rs []dataset.Rollout
	sum, err := runner.Run(ctx, prompts, func(r *dataset.Rollout) error {
		rs = append(rs, *r)
		tick()
		return nil
	})
	end(err != nil || ctx.Err() != nil)
	return rs, sum, err
}

// judged is a step's judging: the scored batch, the role baseline after
// it (a copy: the loop's moves on only once the batch is written) and its
// time.
type judged struct {
	res      ScoreResult
	baseline *grpo.RoleBaseline
	// cur is the adaptive sampler's statistics after the step (nil
	// without one).
	cur     *curriculum.State
	seconds float64
}

// judge scores step's rollouts, computes their advantages and builds the
// batch (ScoreStep; rollouts judged while sampled only get the rest), then
// checks the step's failures (checkFailures).
func (l *Loop) judge(ctx context.Context, step int, s sampled) (judged, error) {
	t0 := time.Now()
	j := judged{baseline: l.baseline.Clone()}
	opts := ScoreOptions{
		RunID: l.opts.RunID, Step: step, PolicyVersion: s.pv,
		Advantage: l.opts.Advantage, Mask: l.opts.Mask, JudgeConcurrency: l.opts.JudgeConcurrency,
	}
	var (
		res ScoreResult
		err error
	)
	if s.pre != nil {
		opts.Untrained, opts.MixedVersions = s.pre.untrained, l.stream != nil
		res, err = BuildJudged(s.rs, j.baseline, opts)
		res.Judge, res.Scale = s.pre.stats, reward.ScaleOf(l.opts.Judge)
	} else {
		tick, end := l.progress(fmt.Sprintf("step %d judging", step), len(s.rs))
		opts.OnJudged = tick
		res, err = ScoreStep(ctx, l.opts.Judge, s.rs, j.baseline, opts)
		end(err != nil)
	}
	if err != nil {
		return j, fmt.Errorf("train.Loop step %d: %w", step, err)
	}
	j.res, j.seconds = res, time.Since(t0).Seconds()
	return j, l.checkFailures(step, s, res)
}

// checkFailures logs step's sampling failures by cause and fails the step
// when more of its rollouts failed, in sampling or judging, than
// train.max_failed_fraction allows, naming the first error; an empty batch
// is only warned of.
func (l *Loop) checkFailures(step int, s sampled, res ScoreResult) error {
	for cause, n := range s.sum.Errors {
		l.log.Warn("rollouts failed", zap.Int("step", step), zap.Int("count", n), zap.String("cause", cause))
	}
	if failed := s.sum.Failed + res.Judge.Failed; float64(failed) > l.opts.MaxFailedFraction*float64(max(len(s.rs), 1)) {
		msg := fmt.Sprintf("train.Loop step %d: %d of %d rollouts failed (%d sampling, %d judging), more than train.max_failed_fraction %g; first error",
			step, failed, len(s.rs), s.sum.Failed, res.Judge.Failed, l.opts.MaxFailedFraction)
		if s.sum.FirstErr != nil {
			return fmt.Errorf("%s: %w", msg, s.sum.FirstErr)
		}
		return fmt.Errorf("%s: %s", msg, firstError(s.rs))
	}
	if len(res.Rows) == 0 {
		l.log.Warn("the step's batch is empty (every group dropped or failed)", zap.Int("step", step),
			zap.Int("groups_zero_variance", res.Advantage.DroppedZeroVariance), zap.Int("rollouts_failed", s.sum.Failed))
	}
	return nil
}

// stepMetrics is the metrics of step's sampling and judging: the step
// line's keys (package metrics), the roles' reward means when they differ
// and the game's own metrics.
func (l *Loop) stepMetrics(step int, s sampled, j judged) metrics.Line {
	sum, adv, res := s.sum, j.res.Advantage, j.res
	m := metrics.Line{
		metrics.KeyStep: step, metrics.KeyPolicyVersion: s.pv,
		metrics.KeyScoreMin: adv.ScoreMin, metrics.KeyScoreMean: adv.ScoreMean, metrics.KeyScoreMax: adv.ScoreMax,
		metrics.KeyRewardMean: adv.RewardMean, metrics.KeyRewardStd: adv.RewardStd,
		metrics.KeyAgreementRate: sum.AgreementRate, metrics.KeyMeanRounds: sum.MeanRounds,
		metrics.KeyRollouts: sum.Rollouts, metrics.KeyRolloutsFailed: sum.Failed,
		metrics.KeyJudgeFailed: res.Judge.Failed, metrics.KeyJudgeCached: res.Judge.Cached,
		metrics.KeyGroups: adv.Groups, metrics.KeyGroupsDroppedZeroVariance: adv.DroppedZeroVariance,
		metrics.KeyPromptTokens: sum.PromptTokens, metrics.KeySampledTokens: sum.SampledTokens, metrics.KeyPrefixBreaks: sum.PrefixBreaks,
		metrics.KeySequencesPerRollout: sum.SequencesPerRollout, metrics.KeyTrainerTokensPerSampledToken: sum.TrainerTokensPerSampled,
		metrics.KeyPromptTokensSent: sum.PromptTokensSent, metrics.KeyClosedTurns: sum.ClosedTurns,
		metrics.KeyPrefixCacheHitRate: sum.PrefixCacheHitRate, metrics.KeyEndpointLoadMax: sum.EndpointLoadMax,
		metrics.KeyEndpointLoadMean: sum.EndpointLoadMean, metrics.KeySessionMoves: sum.SessionMoves, metrics.KeyEndpointsLost: sum.EndpointsLost,
		metrics.KeyEndpointInFlightMean: sum.EndpointInFlightMean, metrics.KeyEndpointAtTargetShare: sum.EndpointAtTargetShare,
		metrics.KeyBatchRows: res.Batch.Rows, metrics.KeyBatchTokens: res.Batch.Tokens, metrics.KeyTrainedTokens: res.Batch.TrainedTokens,
		metrics.KeyStalenessMax: res.Batch.StalenessMax, metrics.KeyStalenessMean: ratio(res.Batch.StalenessSum, res.Batch.TrainedTokens),
		metrics.KeyOffPolicyFraction: ratio(res.Batch.OffPolicyTokens, res.Batch.TrainedTokens),
		metrics.KeySampleSeconds:     s.seconds, metrics.KeyJudgeSeconds: j.seconds,
	}
	if res.Judge.PositionMembers > 0 { // group judging re-scored some groups reversed
		m[metrics.KeyJudgePositionChecked] = res.Judge.PositionMembers
		m[metrics.KeyJudgePositionMoved] = res.Judge.PositionMovedShare()
	}
	mon := reward.ComputeMonitors(s.rs)
	for k, v := range map[metrics.Key]*float64{metrics.KeyJudgeCorrLength: mon.Length,
		metrics.KeyJudgeCorrPersonaEcho: mon.PersonaEcho, metrics.KeyJudgeCorrAgreement: mon.Agreement} {
		if v != nil {
			m[k] = *v
		}
	}
	if sum.RoundsToAgree != nil { // without an agreement there are no rounds to agreement
		m[metrics.KeyRoundsToAgreement] = *sum.RoundsToAgree
	}
	addRoleMetrics(m, adv.Roles)
	if len(sum.Occupancy) > 1 {
		for i, o := range sum.Occupancy {
			e := metrics.Key(fmt.Sprintf("e%d", i))
			m[metrics.EndpointInFlightPrefix+e], m[metrics.EndpointAtTargetPrefix+e] = o.InFlightMean, o.AtTargetShare
		}
	}
	l.serving.drain(m)
	if s.pre != nil {
		for k, v := range s.pre.metrics {
			m[k] = v
		}
	}
	if spec, ok := rollout.Lookup(l.opts.Rollout.Game.Name()); ok && spec.Metrics != nil {
		for k, v := range spec.Metrics(s.rs) {
			m[metrics.Key(k)] = v
		}
	}
	return m
}

// writeBatch writes step's files (WriteStep): the rollouts, the sidecar
// (the metrics m, the role baseline and the series cursors after the step,
// for a resumed run that skips the batch), then the batch and last its
// .ready, which makes it final. Only then does the loop's role baseline
// move on.
func (l *Loop) writeBatch(step int, s sampled, j judged, m metrics.Line) error {
	l.metricsMu.Lock()
	evals := l.evalsUnsent
	l.evalsUnsent = nil
	l.metricsMu.Unlock()
	if len(evals) > 0 {
		m = maps.Clone(m)
		m[metrics.KeyEvals] = evals
	}
	b, err := json.Marshal(sidecar{Metrics: m, RoleBaseline: j.baseline, Curriculum: j.cur, Series: s.cursors})
	if err != nil {
		return fmt.Errorf("train.Loop step %d: metrics: %w", step, err)
	}
	ready, err := WriteStep(l.opts.Dir, step, s.pv, s.rs, j.res.Rows, j.res.Scale, b, l.log)
	if err != nil {
		return err
	}
	l.baseline = j.baseline
	if j.cur != nil {
		l.cur = j.cur
		if l.stream != nil {
			l.stream.setCurriculum(j.cur.Clone())
		}
	}
	l.log.Info("batch written", zap.Int("step", step), zap.Int("policy_version", s.pv), zap.Int("rows", ready.Rows), zap.Int64("tokens", ready.Tokens),
		zap.Float64("reward_mean", j.res.Advantage.RewardMean), zap.Float64("agreement_rate", s.sum.AgreementRate), zap.Int("rollouts_failed", s.sum.Failed))
	return nil
}

// addRoleMetrics adds reward_mean/<role> for every trained role when the
// roles' rewards differ (a zero-sum game's sides, five parties); roles that
// share one reward (the deliberation game) add nothing beyond reward_mean.
func addRoleMetrics(m metrics.Line, roles map[string]grpo.RoleStats) {
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
		m[metrics.RoleRewardPrefix+metrics.Key(role)] = r.RewardMean
	}
}

// ratio is a/b, 0 when b is 0.
func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
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

// groupIDs lists the group ids of rs, each once, in order.
func groupIDs(rs []dataset.Rollout) []string {
	var out []string
	for i, r := range rs {
		if i == 0 || r.GroupID != rs[i-1].GroupID {
			out = append(out, r.GroupID)
		}
	}
	return out
}
