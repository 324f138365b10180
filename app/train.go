package app

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/parleyhq/parley/config"
	"github.com/parleyhq/parley/curriculum"
	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/eval/harness"
	"github.com/parleyhq/parley/eval/report"
	"github.com/parleyhq/parley/grpo"
	"github.com/parleyhq/parley/internal/progress"
	"github.com/parleyhq/parley/internal/summary"
	"github.com/parleyhq/parley/internal/telemetry"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/llm/chat"
	"github.com/parleyhq/parley/llm/weightsync"
	"github.com/parleyhq/parley/metrics"
	"github.com/parleyhq/parley/reward"
	"github.com/parleyhq/parley/rollout"
	"github.com/parleyhq/parley/train"
	"github.com/spf13/pflag"
	"go.uber.org/zap"
)

// secretVars are the environment variables holding secrets that the
// processes parley starts must not see: the judge's, the generator's and
// other roles' API keys, and W&B's (trainerEnv lets the trainer have it).
func secretVars(cfg config.Config) []string {
	out := []string{cfg.Judge.APIKeyEnv, cfg.Generator.APIKeyEnv, wandbKeyEnv}
	for _, r := range cfg.Roles {
		out = append(out, r.APIKeyEnv)
	}
	return out
}

// resumeConfig decides the config of a run that may already exist: a new
// run takes cfg; a run directory holding any run file needs --resume, its
// frozen config.yaml, and a cfg that changes no key that is frozen with the
// run (config.Changes): the changes allowed (endpoints, timeouts, steps,
// logging) are logged and applied, and one line names the frozen config
// and the --config file checked against it.
func resumeConfig(cfg config.Config, runDir dataset.RunDir, o TrainOptions, log *zap.Logger) (config.Config, error) {
	path, resume := o.ConfigPath, o.Resume
	files, err := runDir.Files()
	if err != nil {
		return cfg, fmt.Errorf("train: %w", err)
	}
	if len(files) == 0 {
		return cfg, nil
	}
	if !resume {
		return cfg, fmt.Errorf("train: run directory %s holds a run (%s): pass --resume to continue it, or choose another run.name", runDir, strings.Join(files, ", "))
	}
	if !slices.Contains(files, dataset.ConfigFile) {
		return cfg, fmt.Errorf("train: run directory %s holds %s but no %s (a crash while the run was created, or a deleted file): restore %s, or move %s away to start the run anew",
			runDir, strings.Join(files, ", "), dataset.ConfigFile, runDir.ConfigPath(), runDir)
	}
	b, err := os.ReadFile(runDir.ConfigPath())
	if err != nil {
		return cfg, fmt.Errorf("train: %w", err)
	}
	frozen, err := config.Parse(b) // as written: no environment, no flags
	if err != nil {
		return cfg, fmt.Errorf("train: the run's frozen %s: %w", runDir.ConfigPath(), err)
	}
	if path == "" {
		// No --config: the frozen config, with the environment and flags.
		if cfg, err = config.Load(runDir.ConfigPath(), o.Flags); err != nil {
			return cfg, err
		}
	}
	ops, refused := config.Changes(frozen, cfg)
	if len(refused) > 0 {
		var msgs []string
		for _, c := range refused {
			msgs = append(msgs, fmt.Sprintf("key %s: the run was started with %s, now %s", c.Key, c.Old, c.New))
		}
		return cfg, fmt.Errorf("train: --resume of %s would change what the run samples or trains (%s): the frozen config rules; drop these overrides, or start a new run with another run.name",
			runDir, strings.Join(msgs, "; "))
	}
	applied := make([]string, 0, len(ops))
	for _, c := range ops {
		log.Info("config change on resume", zap.String("key", c.Key), zap.String("was", c.Old), zap.String("now", c.New))
		applied = append(applied, c.Key)
	}
	if path == "" {
		log.Info("resuming with the run's frozen config (no --config)", zap.String("frozen", runDir.ConfigPath()), zap.Strings("changed", applied))
	} else {
		log.Info("resuming with the run's frozen config: the --config file changes none of its frozen keys; only its operational keys apply",
			zap.String("frozen", runDir.ConfigPath()), zap.String("config", path), zap.Strings("changed", applied))
	}
	return cfg, nil
}

// wandbKeyEnv holds the W&B API key; wandb reads it in the trainer.
const wandbKeyEnv = "WANDB_API_KEY"

// trainerEnv names the secret-looking variables the trainer parley starts
// may see: the W&B key when trainer.report_to has wandb (the inference
// server never sees it: secretVars).
func trainerEnv(cfg config.Config) []string {
	if cfg.Trainer.Reports(config.ReportWandb) {
		return []string{wandbKeyEnv}
	}
	return nil
}

// runTrain wires the config into train.Run.
func runTrain(ctx context.Context, env Env, cfg config.Config, runDir dataset.RunDir, log *zap.Logger) error {
	prompts, err := trainPrompts(cfg)
	if err != nil {
		return err
	}
	var gold []train.GoldItem
	if cfg.Judge.Gold.Every > 0 { // read before any step: a bad line stops the run here
		if gold, err = train.ReadGold(cfg.Judge.Gold.Path); err != nil {
			return fmt.Errorf("judge.gold.path: %w", err)
		}
	}
	if len(cfg.Train.TrainerCommand) > 0 {
		if err := checkModelDir(cfg.Trainer.Model); err != nil {
			return fmt.Errorf("train: config key trainer.model (the base model the trainer parley starts loads): %w", err)
		}
	}
	if err := preflightJudge(ctx, cfg, log); err != nil {
		return fmt.Errorf("train: %w", err)
	}
	frozen, err := cfg.YAML()
	if err != nil {
		return err
	}
	policy, err := newPolicy(cfg, log)
	if err != nil {
		return err
	}
	defer policy.Close()
	ro, closePlayers, err := runnerOptions(cfg, policy, log)
	if err != nil {
		return err
	}
	defer closePlayers()
	tm, err := serveMetrics(ctx, cfg, policy, log)
	if err != nil {
		return err
	}
	ro.OnActive = tm.Active
	judge, closeJudge, err := newJudge(cfg, runDir.Root(), tm.ObserveJudge, log)
	if err != nil {
		return err
	}
	defer closeJudge()
	audit, closeAudit, err := newAuditJudge(cfg, log)
	if err != nil {
		return err
	}
	defer closeAudit()
	every, evalOpts, closeEval, err := evalOptions(cfg, judge, runDir.Root(), log)
	if err != nil {
		return err
	}
	defer closeEval()
	bars := env.bars()
	defer bars.Wait()
	evals, err := loopEval(every, evalOpts, ro, bars.Start, log)
	if err != nil {
		return err
	}
	rep := &stepReporter{bar: bars.Add("steps", int64(cfg.Train.Steps)), tm: tm, log: log, start: time.Now()}
	opts := supervision(cfg, runDir, frozen, policy, log)
	opts.Loop = train.LoopOptions{
		Dir: runDir, RunID: cfg.Run.Name, Seed: cfg.Run.Seed, Steps: cfg.Train.Steps, MaxStaleness: cfg.Train.MaxStaleness,
		MaxOffPolicySteps: cfg.Train.MaxOffPolicySteps,
		Prompts:           prompts, Mix: cfg.Curriculum.Mix, PromptsPerStep: cfg.Rollout.PromptsPerStep,
		Series:  seriesOptions(cfg, prompts),
		Rollout: ro, Judge: judge, JudgeConcurrency: cfg.Judge.Concurrency,
		Advantage: advantageOptions(cfg.GRPO), Mask: cfg.GRPO.Mask, AdapterPrefix: cfg.Train.AdapterPrefix,
		TrainerTimeout: cfg.Train.TrainerTimeout, MaxFailedFraction: cfg.Train.MaxFailedFraction, Logger: log,
		Eval: evals, OnStart: rep.onStart, Progress: bars.Start, OnStep: rep.onStep,
		League: leagueRoles(cfg, ro), CrossPlay: crossPlayOptions(cfg, runDir, log),
	}
	opts.Loop.JudgeCost = judgeCost(cfg)
	opts.Loop.Gold, opts.Loop.GoldEvery = gold, cfg.Judge.Gold.Every
	opts.Loop.Audit = train.AuditOptions{Judge: audit, Share: cfg.Judge.Audit.Share, Seed: cfg.Run.Seed,
		Concurrency: cfg.Judge.Audit.Concurrency, Window: cfg.Judge.Audit.AlarmWindow, Threshold: cfg.Judge.Audit.AlarmThreshold}
	opts.Loop.Stream = streaming(cfg, log)
	opts.Loop.DynamicSampling = dynamicSampling(cfg, opts.Loop.League, opts.Loop.Series, opts.Loop.Stream, log)
	if cfg.Curriculum.Sampler == config.SamplerAdaptive && opts.Loop.Series == nil {
		a := cfg.Curriculum.Adaptive
		opts.Loop.Curriculum = &curriculum.Options{Floor: a.Floor, Window: a.Window, RetireAfter: a.RetireAfter, Cooldown: a.Cooldown}
	}
	if opts.Loop.ServingSampleEvery = cfg.Train.ServingSampleEvery; opts.Loop.ServingSampleEvery == 0 {
		opts.Loop.ServingSampleEvery = -1 // none
	}
	if opts.Loop.Stream {
		opts.Loop.Rollout.Concurrency = streamConcurrency(cfg, log)
	}
	opts.Loop.OversampleMax = cfg.Train.OversampleMax
	if cfg.Trainer.FullFinetune {
		if opts.Loop.Weights, opts.Loop.BaseWeights, err = weightSync(cfg, policy, runDir, log); err != nil {
			return err
		}
	}
	st, err := train.Run(ctx, opts)
	if err != nil {
		return err
	}
	bars.Wait()
	env.summarize(trainSummary(st.Step, runDir.MetricsPath(), time.Since(rep.start), log).
		Add("run", runDir.Root()).Add("adapter", st.Adapter))
	return nil
}

// checkModelDir checks that dir is a Hugging Face model folder (it holds
// config.json), before a trainer is started that would fail to load it
// after its imports, with a traceback, and be restarted.
func checkModelDir(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a folder (want a Hugging Face model folder)", dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "config.json")); err != nil {
		return fmt.Errorf("%s is not a Hugging Face model folder: %w", dir, err)
	}
	return nil
}

// weightSync is the full-weights update of every endpoint
// (trainer.full_finetune) and the base model's folder.
func weightSync(cfg config.Config, policy *llm.Client, runDir dataset.RunDir, log *zap.Logger) (train.WeightSync, string, error) {
	base, err := filepath.Abs(cfg.Trainer.Model)
	if err != nil {
		return nil, "", fmt.Errorf("train: config key trainer.model: %w", err)
	}
	w := cfg.Train.WeightSync
	var tr weightsync.Transfer = weightsync.Disk{Reloader: policy, Timeout: w.ReloadTimeout}
	if w.Transfer == config.TransferNCCL {
		tr = weightsync.NewNCCL(runDir.Root(), cfg.Policy.Endpoints, w.ReloadTimeout)
	}
	ws, err := weightsync.New(weightsync.Options{Server: policy, Transfer: tr, PauseMode: w.PauseMode, Base: base,
		Model: cfg.Policy.Model, ProbeTolerance: w.ProbeTolerance, Logger: log})
	if err != nil {
		return nil, "", fmt.Errorf("train: config key trainer.model (full fine-tuning needs the local folder of the model the server serves): %w", err)
	}
	return ws, base, nil
}

// trainPrompts loads the curriculum's training rows, refusing a group
// with no group-relative advantage and a selection holding eval rows.
func trainPrompts(cfg config.Config) ([]dataset.Prompt, error) {
	if cfg.Rollout.GroupSize < 2 && cfg.GRPO.Advantage != grpo.ModeRoleBaseline {
		return nil, fmt.Errorf("train: config key rollout.group_size: a group of %d has no group-relative advantage in %s mode: use 2 or more", cfg.Rollout.GroupSize, cfg.GRPO.Advantage)
	}
	prompts, err := LoadCurriculum(cfg)
	if err != nil {
		return nil, err
	}
	if err := dataset.CheckTrainRows(cfg.Curriculum.Path, prompts); err != nil {
		return nil, fmt.Errorf("train: config key curriculum.split is %q: %w; set curriculum.split: train (the default) to train on the train rows only", cfg.Curriculum.Split, err)
	}
	return prompts, nil
}

// supervision is train.Run's options but the loop's: the inference
// server and the trainer it starts or waits for, the handshake, and what
// each child process may see of the environment.
func supervision(cfg config.Config, runDir dataset.RunDir, frozen []byte, policy *llm.Client, log *zap.Logger) train.RunOptions {
	args := cfg.TrainerArgs(runDir.Root())
	var command []string
	if len(cfg.Train.TrainerCommand) > 0 {
		command = append(slices.Clone(cfg.Train.TrainerCommand), args...)
	}
	return train.RunOptions{
		FrozenConfig: frozen, Server: policy, Model: cfg.Policy.Model,
		ServerCommand: cfg.Train.ServerCommand, ServerStartTimeout: cfg.Train.ServerStartTimeout,
		TrainerCommand: command, TrainerHint: append([]string{"python", "-m", "parley_trainer"}, args...),
		Handshake: cfg.Train.Handshake, HTTPAddr: cfg.Train.HTTPAddr, Token: os.Getenv(cfg.Train.TokenEnv), TokenEnv: cfg.Train.TokenEnv,
		OnURL:      func(url string) []string { return []string{"--url", url, "--token-env", cfg.Train.TokenEnv} },
		Secrets:    secretVars(cfg),
		ServerEnv:  []string{cfg.Policy.APIKeyEnv},
		TrainerEnv: trainerEnv(cfg),
		Logger:     log,
	}
}

// stepReporter shows each finished step: the steps bar, the Prometheus
// gauges and a log line.
type stepReporter struct {
	bar   *progress.Bar
	tm    *telemetry.Metrics
	log   *zap.Logger
	start time.Time
}

func (r *stepReporter) onStart(done int) { r.bar.SetCurrent(int64(done)) }

func (r *stepReporter) onStep(m map[string]any) {
	r.bar.Increment()
	r.tm.Step(m)
	get := func(k metrics.Key) any { return m[string(k)] }
	r.log.Info("step done", zap.Any("step", get(metrics.KeyStep)), zap.Any("reward_mean", get(metrics.KeyRewardMean)),
		zap.Any("score_max", get(metrics.KeyScoreMax)), zap.Any("agreement_rate", get(metrics.KeyAgreementRate)),
		zap.Any("loss", get(metrics.KeyTrainerLoss)), zap.Any("sampled_tokens", get(metrics.KeySampledTokens)))
}

// trainSummary is parley train's closing table: steps done and how the
// step metrics moved over the whole run, from the first step that has each
// to the last, as the run's metrics file (path) records them, so a resumed
// run's table starts at step 1, not at the step it resumed from.
func trainSummary(steps int, path string, elapsed time.Duration, log *zap.Logger) *summary.Table {
	t := summary.New("train").Add("steps", steps).Add("elapsed", elapsed)
	m, err := report.ReadMetrics(path)
	if err != nil {
		log.Warn("no metrics for the summary", zap.Error(err))
		return t
	}
	for _, key := range []metrics.Key{metrics.KeyRewardMean, metrics.KeyAgreementRate, metrics.KeyRoundsToAgreement, metrics.KeyTrainerLoss} {
		first, last := -1, -1
		for i, row := range m.Rows {
			// Undefined points (rounds to agreement without agreement) are NaN.
			if v, ok := row[key]; ok && !math.IsNaN(v) {
				if first < 0 {
					first = i
				}
				last = i
			}
		}
		if first < 0 {
			continue
		}
		t.Add(fmt.Sprintf("%s (step %d → %d)", strings.ReplaceAll(string(key), "_", " "), m.Steps[first], m.Steps[last]),
			summary.Format(m.Rows[first][key])+" → "+summary.Format(m.Rows[last][key]))
	}
	return t
}

// serveMetrics serves the run's Prometheus metrics on train.metrics_addr;
// with none set it returns nil metrics, which ignore every call.
func serveMetrics(ctx context.Context, cfg config.Config, policy *llm.Client, log *zap.Logger) (*telemetry.Metrics, error) {
	if cfg.Train.MetricsAddr == "" {
		return nil, nil
	}
	tm := telemetry.New(policy.Stats)
	url, err := tm.Serve(ctx, cfg.Train.MetricsAddr, log)
	if err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	log.Info("serving Prometheus metrics", zap.String("url", url))
	return tm, nil
}

// seriesOptions makes training run over series when the game lays them
// out (rollout.Spec.Series): rollout.prompts_per_step series in flight.
func seriesOptions(cfg config.Config, prompts []dataset.Prompt) *train.SeriesOptions {
	spec, ok := rollout.Lookup(cfg.Game.Env)
	if !ok || spec.Series == nil {
		return nil
	}
	section := cfg.Game.Active()
	return &train.SeriesOptions{Slots: cfg.Rollout.PromptsPerStep, Plan: func(n int, seed int64) ([]rollout.Series, error) {
		return spec.Series(section, prompts, n, seed)
	}}
}

// evalOptions are the evaluations parley train runs every train.eval_every
// steps (its value, returned first): the step's adapter plays the
// curriculum's eval split against the base model, greedy, with the run's
// game; the two final completions are compared by the run's judge (an LLM
// judge pairwise, asked in both orders; a rule's or game's scorer by its
// pointwise scores) and each side's rollouts are scored by the run's
// reward judge. With eval_every 0 it returns the zero options. The
// returned func closes the pairwise judge's client.
func evalOptions(cfg config.Config, judge reward.Judge, cacheDir string, log *zap.Logger) (int, harness.StepEvalOptions, func(), error) {
	every := cfg.Train.EvalEvery
	if every <= 0 {
		return 0, harness.StepEvalOptions{}, func() {}, nil
	}
	if spec, ok := rollout.Lookup(cfg.Game.Env); ok && spec.Series != nil {
		return 0, harness.StepEvalOptions{}, nil, fmt.Errorf("train: config key train.eval_every is %d: the %s game trains over series, which the evaluation does not play: set train.eval_every: 0", every, cfg.Game.Env)
	}
	prompts, err := loadSplit(cfg, dataset.SplitEval)
	if err != nil {
		return 0, harness.StepEvalOptions{}, nil, fmt.Errorf("train: config key train.eval_every is %d: the held-out prompts: %w; give the curriculum rows with split eval, or set train.eval_every: 0", every, err)
	}
	dec, err := harness.NewDecodings([]string{report.DecodingGreedy}, sampling(cfg))
	if err != nil {
		return 0, harness.StepEvalOptions{}, nil, fmt.Errorf("train: evaluation decoding: %w", err)
	}
	aspect, closeAspect, err := evalAspect(cfg, judge, cacheDir, log)
	if err != nil {
		return 0, harness.StepEvalOptions{}, nil, err
	}
	log.Info("evaluating during training", zap.Int("every_steps", every), zap.Int("held_out_prompts", len(prompts)),
		zap.String("decoding", dec[0].Name), zap.String("compared_by", aspect.Name), zap.String("judge", judge.Name()))
	return every, harness.StepEvalOptions{
		Prompts: prompts, Set: "curriculum split " + dataset.SplitEval,
		Aspect: aspect, Scorer: judge, Scale: reward.ScaleOf(judge), Decoding: dec[0],
		Concurrency: cfg.Rollout.Concurrency, JudgeConcurrency: cfg.Judge.Concurrency, Seed: cfg.Run.Seed,
	}, closeAspect, nil
}

// The pairwise evaluation is the loop's Evaluator.
var _ train.Evaluator = (*harness.StepEvaluator)(nil)

// loopEval is the loop's evaluations: every `every` steps, o's evaluator
// playing the loop's game with its policy against its base model (ro).
// With every 0 the evaluator only reads the files of an earlier run's
// evaluations, to complete their metrics lines.
func loopEval(every int, o harness.StepEvalOptions, ro rollout.RunnerOptions, progress func(string, int) (func(), func(bool)), log *zap.Logger) (train.EvalOptions, error) {
	if every <= 0 {
		return train.EvalOptions{Evaluator: &harness.StepEvaluator{}}, nil
	}
	o.Game, o.Policy, o.Base, o.ChatTemplateKwargs = ro.Game, ro.Policy, ro.Model, ro.ChatTemplateKwargs
	o.Progress, o.Logger = progress, log.Named("eval")
	ev, err := harness.NewStepEvaluator(o)
	if err != nil {
		return train.EvalOptions{}, fmt.Errorf("train: %w", err)
	}
	return train.EvalOptions{Every: every, Evaluator: ev}, nil
}

// evalAspect is what compares the two sides' finals in an evaluation: when
// judge.kind has a pairwise aspect (ca: Collective Agency), a pairwise
// judge of it (both orders, its own client on the judge's API and cache),
// else the run's judge's scores (harness.ScoreComparer).
func evalAspect(cfg config.Config, judge reward.Judge, cacheDir string, log *zap.Logger) (harness.Aspect, func(), error) {
	aspect := cfg.Judge.Kind.PairwiseAspect()
	if aspect == "" {
		return harness.Aspect{Name: "score", Judge: harness.ScoreComparer{Judge: judge}}, func() {}, nil
	}
	c, err := chat.New(judgeClient(cfg, cacheDir, log))
	if err != nil {
		return harness.Aspect{}, nil, fmt.Errorf("train: the evaluation's pairwise judge: config key judge: %w", err)
	}
	pj, err := reward.NewPairwiseJudge(c, aspect)
	if err != nil {
		_ = c.Close()
		return harness.Aspect{}, nil, fmt.Errorf("train: the evaluation's pairwise judge: %w", err)
	}
	return harness.Aspect{Name: aspect, Judge: pj}, func() { _ = c.Close() }, nil
}

// TrainOptions are `parley train`'s settings beside the config.
type TrainOptions struct {
	// ConfigPath is the --config file ("": none: a resumed run's frozen
	// config.yaml with Flags on top); Flags the command line's overrides.
	ConfigPath string
	Flags      *pflag.FlagSet
	// Resume continues the run in run.dir/run.name from its state.
	Resume bool
}

// Train runs the training loop cfg describes: it takes the run
// directory's lock, decides the config of a run that already exists
// (--resume), and runs train.Run with everything built from the config.
func Train(ctx context.Context, cfg config.Config, env Env, o TrainOptions) error {
	runDir := dataset.RunDir(cfg.RunDir())
	unlock, err := runDir.Lock()
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	defer unlock()
	if cfg, err = resumeConfig(cfg, runDir, o, env.log()); err != nil {
		return err
	}
	return runTrain(ctx, env, cfg, runDir, env.log())
}
