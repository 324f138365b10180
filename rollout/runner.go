package rollout

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/llm"
	"go.uber.org/zap"
)

// RunnerOptions configure a Runner.
type RunnerOptions struct {
	Game   Game
	Policy Policy
	// Model is the served model or adapter name of the trained policy.
	Model string
	// Players maps roles to what plays them when not the trained policy
	// (RecorderOptions.Players).
	Players            map[string]Player
	Sampling           llm.Sampling
	ChatTemplateKwargs map[string]any
	// GroupSize is G, the rollouts per prompt row.
	GroupSize int
	// Concurrency bounds the rollouts in flight.
	Concurrency int
	// Seed, RunID, Step and PolicyVersion identify and seed the rollouts.
	Seed          int64
	RunID         string
	Step          int
	PolicyVersion int
	Logger        *zap.Logger
}

// Runner samples G rollouts of every prompt row with a bounded worker pool.
type Runner struct{ opts RunnerOptions }

// NewRunner returns a Runner.
func NewRunner(opts RunnerOptions) (*Runner, error) {
	if opts.Game == nil || opts.Policy == nil {
		return nil, errors.New("rollout.NewRunner: a game and a policy are required")
	}
	if opts.GroupSize <= 0 {
		return nil, fmt.Errorf("rollout.NewRunner: group size %d must be positive", opts.GroupSize)
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 1
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	return &Runner{opts: opts}, nil
}

// Summary describes a finished (or interrupted) set of rollouts.
type Summary struct {
	Rollouts      int           `json:"rollouts"`
	Failed        int           `json:"failed"`
	Interrupted   int           `json:"interrupted"`
	Agreed        int           `json:"agreed"`
	AgreementRate float64       `json:"agreement_rate"`
	MeanRounds    float64       `json:"mean_rounds"`
	RoundsToAgree float64       `json:"rounds_to_agreement"`
	PromptTokens  int64         `json:"prompt_tokens"`
	SampledTokens int64         `json:"sampled_tokens"`
	Requests      int64         `json:"requests"`
	PrefixBreaks  int64         `json:"prefix_breaks"`
	Elapsed       time.Duration `json:"elapsed_ns"`
	PerSecond     float64       `json:"rollouts_per_second"`
	FailedIDs     []string      `json:"failed_ids,omitempty"`
}

// Add counts one written rollout.
func (s *Summary) Add(r *dataset.Rollout) {
	s.Rollouts++
	if r.Failed {
		s.Failed++
		s.FailedIDs = append(s.FailedIDs, r.RolloutID)
		return
	}
	if r.Agreed {
		s.Agreed++
		s.RoundsToAgree += float64(r.Rounds) // a sum until finish
	}
	s.MeanRounds += float64(r.Rounds)
	s.PromptTokens += int64(r.PromptTokens)
	s.SampledTokens += int64(r.SampledTokens)
	s.Requests += int64(r.Requests)
	s.PrefixBreaks += int64(r.PrefixBreaks)
}

// finish turns sums into means.
func (s *Summary) finish(elapsed time.Duration) {
	ok := s.Rollouts - s.Failed
	if ok > 0 {
		s.AgreementRate = float64(s.Agreed) / float64(ok)
		s.MeanRounds /= float64(ok)
	}
	if s.Agreed > 0 {
		s.RoundsToAgree /= float64(s.Agreed)
	}
	s.Elapsed = elapsed
	if elapsed > 0 {
		s.PerSecond = float64(s.Rollouts) / elapsed.Seconds()
	}
}

// GroupID names the group of the i-th prompt row of a step. The row's own
// id is recorded beside it, so one row drawn twice in a step makes two
// groups.
func GroupID(step, i int) string { return fmt.Sprintf("s%06d-g%05d", step, i) }

// Run plays GroupSize rollouts of every prompt and passes each finished
// rollout — failed ones included, with their error — to sink, from one
// goroutine, in completion order. When ctx is cancelled the rollouts in
// flight are abandoned and counted as interrupted; everything already
// passed to sink stays valid. A sink error stops the run.
func (r *Runner) Run(ctx context.Context, prompts []dataset.Prompt, sink func(*dataset.Rollout) error) (Summary, error) {
	for _, p := range prompts {
		if err := r.opts.Game.Validate(p); err != nil {
			return Summary{}, fmt.Errorf("rollout.Run: %w", err)
		}
	}
	start := time.Now()
	type job struct {
		p            dataset.Prompt
		group, index int
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan job)
	results := make(chan *dataset.Rollout, r.opts.Concurrency)
	total := len(prompts) * r.opts.GroupSize
	workers := min(r.opts.Concurrency, total)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				if rec := r.playOne(ctx, j.p, j.group, j.index); rec != nil {
					results <- rec
				}
			}
		}()
	}
	go func() {
		defer close(jobs)
		for g, p := range prompts {
			for i := 0; i < r.opts.GroupSize; i++ {
				select {
				case jobs <- job{p, g, i}:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	go func() { wg.Wait(); close(results) }()

	var sum Summary
	var sinkErr error
	for rec := range results {
		if sinkErr != nil {
			continue // drain
		}
		if err := sink(rec); err != nil {
			sinkErr = fmt.Errorf("rollout.Run: %w", err)
			cancel()
			continue
		}
		sum.Add(rec)
	}
	if ctx.Err() != nil {
		sum.Interrupted = total - sum.Rollouts
	}
	sum.finish(time.Since(start))
	if sinkErr != nil {
		return sum, sinkErr
	}
	return sum, nil
}

// RoleOutcomes returns the outcome records of roles, each naming what
// plays it in agents; scores are filled later by scoring.
func RoleOutcomes(roles []string, agents *Recorder) []dataset.RoleOutcome {
	out := make([]dataset.RoleOutcome, len(roles))
	for i, role := range roles {
		pl := agents.Player(role)
		model := pl.Model
		if pl.Chat != nil {
			model = pl.Chat.Model()
		}
		out[i] = dataset.RoleOutcome{Role: role, Policy: pl.Kind, Model: model, Endpoint: pl.Endpoint, Trained: pl.Trained}
	}
	return out
}

// playOne plays one rollout; nil means it was interrupted by cancellation.
func (r *Runner) playOne(ctx context.Context, p dataset.Prompt, group, index int) *dataset.Rollout {
	groupID := GroupID(r.opts.Step, group)
	seed := DeriveSeed(r.opts.Seed, groupID, int64(index))
	rec := &dataset.Rollout{
		RunID:         r.opts.RunID,
		Step:          int32(r.opts.Step),
		PolicyVersion: int32(r.opts.PolicyVersion),
		Env:           r.opts.Game.Name(),
		PromptID:      p.ID,
		GroupID:       groupID,
		RolloutID:     fmt.Sprintf("%s-%03d", groupID, index),
		Index:         int32(index),
		Category:      p.Category,
		Split:         p.Split,
		Task:          p.Task,
		PersonaPairID: p.PersonaPairID,
		Personas:      p.Personas,
		Scenario:      p.Scenario,
		Seed:          seed,
		Temperature:   float32(r.opts.Sampling.Temperature),
		StartedUnixMS: time.Now().UnixMilli(),
	}
	agents := NewRecorder(RecorderOptions{
		Policy: r.opts.Policy, Model: r.opts.Model, Players: r.opts.Players, Sampling: r.opts.Sampling,
		ChatTemplateKwargs: r.opts.ChatTemplateKwargs, Seed: seed,
	})
	rec.Roles = RoleOutcomes(r.opts.Game.Roles(p), agents)
	t0 := time.Now()
	err := r.opts.Game.Play(ctx, p, agents, rec)
	rec.RolloutMS = time.Since(t0).Milliseconds()
	rec.Sequences = agents.Sequences()
	rec.PrefixBreaks = int32(agents.PrefixBreaks)
	rec.PromptTokens = int32(agents.PromptTokens)
	rec.SampledTokens = int32(agents.SampledTokens)
	rec.Requests = int32(agents.Requests)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		rec.Failed = true
		rec.Error = err.Error()
		r.opts.Logger.Warn("rollout failed", zap.String("rollout_id", rec.RolloutID), zap.Error(err))
	}
	return rec
}
