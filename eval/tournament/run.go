package tournament

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/internal/fsutil"
	"github.com/parleyhq/parley/internal/retry"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/llm/chat"
	"github.com/parleyhq/parley/reward"
	"github.com/parleyhq/parley/rollout"
	"github.com/parleyhq/parley/rollout/endowment"
	"go.uber.org/zap"
)

// Options configure Run.
type Options struct {
	// Dir is the tournament directory (created if missing).
	Dir string
	// Spec is the tournament; on a resume it must equal the frozen one.
	Spec Spec
	// RetryFailed plays again the games recorded as failed.
	RetryFailed bool
	// Progress, if set, is called after every game recorded (and once at
	// the start) with the games done and failed out of total.
	Progress func(done, failed, total int)
	// Logger logs progress with an ETA every LogEvery games (default 25);
	// nil means none.
	Logger   *zap.Logger
	LogEvery int
}

// Summary is what Run did.
type Summary struct {
	Total   int           `json:"total"`   // scheduled games
	Resumed int           `json:"resumed"` // found recorded and not played again
	Played  int           `json:"played"`  // recorded by this run
	Failed  int           `json:"failed"`  // recorded as failed, in all
	Retries int           `json:"retries"` // attempts beyond the first, this run
	Elapsed time.Duration `json:"elapsed_ns"`
	// Complete reports that every scheduled game is recorded (the
	// rollouts parquet was written).
	Complete bool `json:"complete"`
}

// Run plays the tournament's games that are not recorded yet, many at
// once (Spec.Concurrency, within each agent's max_concurrent), each game
// seeded by the spec's seed and its id: a run killed at any point and
// started again plays the remaining games only, and ends with the records
// an uninterrupted run would have written. A game whose attempts all fail
// is recorded as failed. When every game is recorded, the rollouts are
// also written to rollouts/step-000000.parquet for `parley export`.
func Run(ctx context.Context, opts Options) (Summary, error) {
	sum, err := run(ctx, opts)
	if err != nil {
		return sum, fmt.Errorf("tournament.Run: %w", err)
	}
	return sum, nil
}

func run(ctx context.Context, opts Options) (Summary, error) {
	start := time.Now()
	var sum Summary
	s := opts.Spec
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	if err := s.Validate(); err != nil {
		return sum, err
	}
	prompts, err := endowment.LoadPrompts(s.Game.PromptsDir)
	if err != nil {
		return sum, err
	}
	spec, _ := rollout.Lookup(endowment.Name)
	scen, err := dataset.LoadPrompts(s.Scenarios, spec.LoadOptions())
	if err != nil {
		return sum, fmt.Errorf("key scenarios: %w", err)
	}
	for _, p := range scen {
		if _, err := endowment.ParseScenario(p.Scenario); err != nil {
			return sum, fmt.Errorf("key scenarios: %s: row %s: %w", s.Scenarios, p.ID, err)
		}
	}
	matches, err := Schedule(s, scen)
	if err != nil {
		return sum, err
	}
	sum.Total = len(matches)
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return sum, err
	}
	if err := freeze(opts.Dir, s, prompts); err != nil {
		return sum, err
	}
	if b, err := json.MarshalIndent(matches, "", " "); err == nil {
		if err := fsutil.WriteFileAtomic(filepath.Join(opts.Dir, ScheduleFile), b, 0o644); err != nil {
			return sum, err
		}
	}
	if _, err := fsutil.RemoveTemps(filepath.Join(opts.Dir, GamesDir)); err != nil {
		return sum, err
	}
	recs, err := ReadRecords(opts.Dir)
	if err != nil {
		return sum, err
	}
	byID := map[string]Match{}
	for _, m := range matches {
		byID[m.ID] = m
	}
	done := map[string]bool{}
	for _, r := range recs {
		if _, ok := byID[r.Match.ID]; !ok {
			return sum, fmt.Errorf("%s: game %s is not in this tournament's schedule", gamePath(opts.Dir, r.Match.ID), r.Match.ID)
		}
		if r.Failed && opts.RetryFailed {
			continue
		}
		done[r.Match.ID] = true
		if r.Failed {
			sum.Failed++
		}
	}
	sum.Resumed = len(done)
	var pending []Match
	for _, m := range matches {
		if !done[m.ID] {
			pending = append(pending, m)
		}
	}
	if opts.Progress != nil {
		opts.Progress(len(done), sum.Failed, sum.Total)
	}
	if len(pending) > 0 {
		if err := playAll(ctx, opts, prompts, pending, &sum, len(done), log); err != nil {
			sum.Elapsed = time.Since(start)
			return sum, err
		}
	}
	sum.Elapsed = time.Since(start)
	recs, err = ReadRecords(opts.Dir)
	if err != nil {
		return sum, err
	}
	if len(recs) == sum.Total {
		sum.Complete = true
		if err := writeRollouts(opts.Dir, recs); err != nil {
			return sum, err
		}
	}
	return sum, nil
}

// playAll plays the pending games with a worker pool.
func playAll(ctx context.Context, opts Options, prompts *endowment.Prompts, pending []Match, sum *Summary, already int, log *zap.Logger) error {
	s := opts.Spec
	pl, err := newPool(ctx, s, log)
	if err != nil {
		return err
	}
	defer pl.close()
	if err := pl.prepare(ctx, s); err != nil {
		return fmt.Errorf("agents not ready (set preflight: false to play anyway and record their games as failed): %w", err)
	}
	judgeKey, err := secret(s.Judge.APIKeyEnv, "judge.api_key_env")
	if err != nil {
		return err
	}
	judge, err := chat.New(chat.Options{Name: "ledger-judge", BaseURL: s.Judge.BaseURL, Model: s.Judge.Model, APIKey: judgeKey,
		Concurrency: s.Judge.Concurrency, Timeout: s.Judge.Timeout, DisableStructuredOutput: !s.Judge.StructuredOutput,
		Retry: retryPolicy(retry.Default, s.Judge.MaxRetries, s), Logger: log.Named("judge")})
	if err != nil {
		return fmt.Errorf("key judge: %w", err)
	}
	defer judge.Close()
	game, err := endowment.New(s.Game, rollout.Shared{TurnTokens: s.Sampling.MaxTokens, Judge: judge})
	if err != nil {
		return err
	}
	_ = prompts // the game loaded the same files; freeze checked their hash
	topK := s.Sampling.TopK
	if topK == 0 {
		topK = -1
	}
	sampling := llm.Sampling{MaxTokens: s.Sampling.MaxTokens, Temperature: s.Sampling.Temperature, TopP: s.Sampling.TopP, TopK: topK}
	kwargs := map[string]any{"enable_thinking": s.Sampling.EnableThinking}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan Match)
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
		t0       = time.Now()
	)
	every := opts.LogEvery
	if every <= 0 {
		every = 25
	}
	for w := 0; w < min(s.Concurrency, len(pending)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for m := range jobs {
				rec, retries := playMatch(ctx, s, game, pl, sampling, kwargs, m)
				if rec == nil { // cancelled: not recorded
					continue
				}
				err := writeRecord(opts.Dir, rec)
				mu.Lock()
				if err != nil {
					if firstErr == nil {
						firstErr = err
						cancel()
					}
					mu.Unlock()
					continue
				}
				sum.Played++
				sum.Retries += retries
				if rec.Failed {
					sum.Failed++
					log.Warn("game failed", zap.String("game", m.ID), zap.Int("attempts", rec.Attempts), zap.Strings("errors", rec.Errors))
				}
				doneN := already + sum.Played
				if opts.Progress != nil {
					opts.Progress(doneN, sum.Failed, sum.Total)
				}
				if sum.Played%every == 0 || doneN == sum.Total {
					rate := float64(sum.Played) / time.Since(t0).Seconds()
					eta := time.Duration(float64(sum.Total-doneN) / rate * float64(time.Second))
					log.Info("tournament progress", zap.Int("done", doneN), zap.Int("total", sum.Total), zap.Int("failed", sum.Failed),
						zap.Float64("games_per_second", rate), zap.Duration("eta", eta.Round(time.Second)))
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for _, m := range pending {
		select {
		case jobs <- m:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

// playMatch plays one game, again after a failure, up to MaxAttempts; it
// returns the record to write (nil when ctx was cancelled) and the
// retries made.
func playMatch(ctx context.Context, s Spec, game *endowment.Game, pl *pool, sp llm.Sampling, kwargs map[string]any, m Match) (*Record, int) {
	seed := rollout.DeriveSeed(s.Seed, m.ID, 0)
	rec := &Record{Match: m}
	for attempt := 1; attempt <= s.MaxAttempts; attempt++ {
		if attempt > 1 {
			select {
			case <-time.After(time.Duration(attempt-1) * s.RetryWait):
			case <-ctx.Done():
				return nil, attempt - 1
			}
		}
		r := playOnce(ctx, game, pl, sp, kwargs, m, seed)
		if ctx.Err() != nil {
			return nil, attempt - 1
		}
		rec.Attempts, rec.Rollout = attempt, *r
		if !r.Failed {
			rec.Failed = false
			return rec, attempt - 1
		}
		rec.Errors = append(rec.Errors, r.Error)
		rec.Failed = true
	}
	return rec, s.MaxAttempts - 1
}

func playOnce(ctx context.Context, game *endowment.Game, pl *pool, sp llm.Sampling, kwargs map[string]any, m Match, seed int64) *dataset.Rollout {
	p := m.Prompt
	rec := &dataset.Rollout{
		RunID: "tournament", Env: endowment.Name, PromptID: p.ID, GroupID: m.ID, RolloutID: m.ID,
		Category: p.Category, Task: p.Task, Scenario: p.Scenario, Seed: seed, Temperature: float32(sp.Temperature),
		Series: fmt.Sprintf("%s-r%02d", m.Framing, m.Round), StartedUnixMS: time.Now().UnixMilli(),
	}
	players := map[string]rollout.Player{endowment.RoleRequester: pl.players[m.Requester], endowment.RoleHolder: pl.players[m.Holder]}
	agents := rollout.NewRecorder(rollout.RecorderOptions{Policy: players[endowment.RoleHolder].Tokens, Players: players,
		Sampling: sp, ChatTemplateKwargs: kwargs, Seed: seed})
	rec.Roles = rollout.RoleOutcomes(game.Roles(p), agents)
	for i := range rec.Roles {
		name := m.Holder
		if rec.Roles[i].Role == endowment.RoleRequester {
			name = m.Requester
		}
		rec.Roles[i].Model = name
		rec.Roles[i].Trained = false
	}
	t0 := time.Now()
	err := game.Play(ctx, p, agents, rec)
	rec.RolloutMS = time.Since(t0).Milliseconds()
	rec.PromptTokens, rec.SampledTokens, rec.Requests = int32(agents.PromptTokens), int32(agents.SampledTokens), int32(agents.Requests)
	if err != nil {
		rec.Failed, rec.Error = true, err.Error()
		return rec
	}
	rs := []dataset.Rollout{*rec}
	if st := reward.ScoreAll(ctx, endowment.Scorer{}, rs, 1); st.Judged != 1 {
		rec.Failed, rec.Error = true, "scoring the outcome failed: "+rs[0].JudgeError
		return rec
	}
	*rec = rs[0]
	return rec
}
