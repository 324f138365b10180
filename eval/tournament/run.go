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
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/reward"
	"github.com/parleyhq/parley/rollout"
	"go.uber.org/zap"
)

// Options configure Run: the tournament's directory, its schedule, and
// everything that plays it, built by the caller.
type Options struct {
	// Dir is the tournament directory (created if missing).
	Dir string
	// Spec is the tournament file as the loader rewrites it (canonical):
	// frozen as tournament.yaml at the first start; on a resume the frozen
	// file and Spec, each rewritten by Canonical, must be equal (Canonical
	// may leave out what does not change the games, such as a judge's
	// timeout).
	Spec      []byte
	Canonical func(frozen []byte) ([]byte, error)
	// Files are the game's files to freeze beside the spec.
	Files Files
	// Plan lays out the schedule over Scenarios, the curriculum's rows.
	Plan      Plan
	Scenarios []dataset.Prompt
	// Seed seeds every game (with its id).
	Seed int64
	// Game plays each match, Seats names its two roles, and Scorer (the
	// game's own, or a run's judge) scores each game played.
	Game   rollout.Game
	Seats  [2]string
	Scorer reward.Judge
	// Players are the agents by name. Prepare, if set, is called once
	// before the first game this run plays (health checks, adapter
	// loads): its error stops the run before anything is played.
	Players map[string]rollout.Player
	Prepare func(ctx context.Context) error
	// Sampling and ChatTemplateKwargs apply to every agent.
	Sampling           llm.Sampling
	ChatTemplateKwargs map[string]any
	// Concurrency bounds the games in flight (each agent's client bounds
	// its own requests); MaxAttempts is how many times a game is played
	// before it is recorded as failed, RetryWait the wait before the next
	// attempt (times the attempt number).
	Concurrency, MaxAttempts int
	RetryWait                time.Duration
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
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	matches, err := Schedule(opts.Plan, opts.Scenarios)
	if err != nil {
		return sum, err
	}
	sum.Total = len(matches)
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return sum, err
	}
	if err := freeze(opts.Dir, opts.Spec, opts.Canonical, opts.Files); err != nil {
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
		if err := playAll(ctx, opts, pending, &sum, len(done), log); err != nil {
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
func playAll(ctx context.Context, opts Options, pending []Match, sum *Summary, already int, log *zap.Logger) error {
	if opts.Prepare != nil {
		if err := opts.Prepare(ctx); err != nil {
			return fmt.Errorf("agents not ready (set preflight: false to play anyway and record their games as failed): %w", err)
		}
	}
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
	for w := 0; w < min(max(opts.Concurrency, 1), len(pending)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for m := range jobs {
				rec, retries := opts.playMatch(ctx, m)
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
func (o *Options) playMatch(ctx context.Context, m Match) (*Record, int) {
	seed := rollout.DeriveSeed(o.Seed, m.ID, 0)
	attempts := max(o.MaxAttempts, 1)
	rec := &Record{Match: m}
	for attempt := 1; attempt <= attempts; attempt++ {
		if attempt > 1 {
			select {
			case <-time.After(time.Duration(attempt-1) * o.RetryWait):
			case <-ctx.Done():
				return nil, attempt - 1
			}
		}
		r := o.playOnce(ctx, m, seed)
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
	return rec, attempts - 1
}

func (o *Options) playOnce(ctx context.Context, m Match, seed int64) *dataset.Rollout {
	p := m.Prompt
	rec := &dataset.Rollout{
		RunID: "tournament", Env: o.Game.Name(), PromptID: p.ID, GroupID: m.ID, RolloutID: m.ID,
		Category: p.Category, Task: p.Task, Scenario: p.Scenario, Seed: seed, Temperature: float32(o.Sampling.Temperature),
		Series: fmt.Sprintf("%s-r%02d", m.Condition, m.Round), StartedUnixMS: time.Now().UnixMilli(),
	}
	// A role outside the seats (seed 000's final completion) is played by
	// the seat-0 agent, as the record says.
	players := map[string]rollout.Player{}
	for _, role := range o.Game.Roles(p) {
		players[role] = o.Players[m.Seats[0]]
	}
	players[o.Seats[1]] = o.Players[m.Seats[1]]
	agents := rollout.NewRecorder(rollout.RecorderOptions{Policy: players[o.Seats[0]].Tokens, Players: players,
		Sampling: o.Sampling, ChatTemplateKwargs: o.ChatTemplateKwargs, Seed: seed, Session: m.ID})
	defer agents.EndSessions()
	rec.Roles = rollout.RoleOutcomes(o.Game.Roles(p), agents)
	for i := range rec.Roles {
		name := m.Seats[0]
		if rec.Roles[i].Role == o.Seats[1] {
			name = m.Seats[1]
		}
		rec.Roles[i].Model = name
		rec.Roles[i].Trained = false
	}
	t0 := time.Now()
	err := o.Game.Play(ctx, p, agents, rec)
	rec.RolloutMS = time.Since(t0).Milliseconds()
	rec.PromptTokens, rec.SampledTokens, rec.Requests = int32(agents.PromptTokens), int32(agents.SampledTokens), int32(agents.Requests)
	if err != nil {
		rec.Failed, rec.Error = true, err.Error()
		return rec
	}
	rs := []dataset.Rollout{*rec}
	if st := reward.ScoreAll(ctx, o.Scorer, rs, 1); st.Judged != 1 {
		rec.Failed, rec.Error = true, "scoring the outcome failed: "+rs[0].JudgeError
		return rec
	}
	*rec = rs[0]
	return rec
}
