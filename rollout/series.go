package rollout

import (
	"context"
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
	"github.com/parleyhq/parley/internal/fsutil"
)

// Series is an ordered sequence of games among the same players whose state
// (seed 002's trust vectors) flows from one game to the next: game i is
// played from the state game i−1 left.
type Series struct {
	// ID names the series; it is a directory name under the series store.
	ID string
	// Games holds the prompt row of each game, in order.
	Games []dataset.Prompt
	// Init is the state before the first game (nil: the game's own
	// default), e.g. a series' trust settings.
	Init json.RawMessage `json:"init,omitempty"`
	// SeedKey names the seeds of the series' games ("": its ID). Series
	// that play the same games under different conditions share one, so
	// that their games are seeded alike and compare pairwise.
	SeedKey string `json:"seed_key,omitempty"`
}

// GameRecord is what a series keeps of one finished game: its rollout and
// the state after it. It is written atomically as
// <dir>/<series>/game-NNNNNN.json once the game ends, so a crash resumes at
// the next game.
type GameRecord struct {
	Series string          `json:"series"`
	Index  int             `json:"index"`
	State  json.RawMessage `json:"state"`
	// Rollout is the game's record; a failed game keeps its error and
	// carries the state before it unchanged.
	Rollout dataset.Rollout `json:"rollout"`
}

// SeriesSummary counts what RunSeries did.
type SeriesSummary struct {
	Series  int `json:"series"`
	Played  int `json:"played"`
	Resumed int `json:"resumed"` // games found recorded and not played again
	// Retried counts the recorded games played again: each failed game
	// and the games of its series after it (played from the state before
	// it, which the game played again changes). Played includes them.
	Retried int `json:"retried"`
	Failed  int `json:"failed"`
	// FirstErr is the first failed game's error; nil when none failed.
	FirstErr error `json:"-"`
}

// RunSeries plays every series to its end: many series at once (up to
// opts.Concurrency), each one in order. The game must be a SeriesGame.
// After each game its record is written under dir; a series already
// partly recorded goes on from its next game with the recorded state, so a
// run killed at any point and started again ends in the same records as an
// uninterrupted one (games are seeded by series and index, not by timing).
// A game whose play fails is recorded as failed and carries the state
// before it; a later run plays it again, with the games after it (see
// SeriesSummary.Retried). GroupSize is ignored: a series game is one rollout.
func RunSeries(ctx context.Context, opts RunnerOptions, dir string, series []Series) (SeriesSummary, error) {
	var sum SeriesSummary
	sg, ok := opts.Game.(SeriesGame)
	if !ok {
		return sum, fmt.Errorf("rollout.RunSeries: game %s carries no state between games (not a SeriesGame)", opts.Game.Name())
	}
	if opts.Policy == nil {
		return sum, errors.New("rollout.RunSeries: a policy is required")
	}
	seen := map[string]bool{}
	for _, s := range series {
		if !validSeriesID(s.ID) || seen[s.ID] {
			return sum, fmt.Errorf("rollout.RunSeries: series id %q is empty, not a plain name, or repeated", s.ID)
		}
		seen[s.ID] = true
		for _, p := range s.Games {
			if err := sg.Validate(p); err != nil {
				return sum, fmt.Errorf("rollout.RunSeries: series %s: %w", s.ID, err)
			}
		}
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 1
	}
	h, err := ParseHistoryMode(string(opts.History))
	if err != nil {
		return sum, fmt.Errorf("rollout.RunSeries: %w", err)
	}
	var bridge *Bridge
	if opts.History = h; h == HistoryTokens {
		bridge = NewBridge(opts.Policy)
		opts.Players = sharedBridges(opts.Players, opts.Policy)
	}
	sum.Series = len(series)
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
		sem      = make(chan struct{}, opts.Concurrency)
	)
	for _, s := range series {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-sem }()
			st, err := runOneSeries(ctx, sg, opts, bridge, dir, s)
			mu.Lock()
			defer mu.Unlock()
			sum.Played += st.Played
			sum.Resumed += st.Resumed
			sum.Retried += st.Retried
			sum.Failed += st.Failed
			if sum.FirstErr == nil {
				sum.FirstErr = st.FirstErr
			}
			if err != nil && firstErr == nil {
				firstErr = err
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return sum, firstErr
	}
	return sum, ctx.Err()
}

// runOneSeries plays the games of s not yet recorded, in order, from its
// first failed game if one is recorded.
func runOneSeries(ctx context.Context, g SeriesGame, opts RunnerOptions, bridge *Bridge, dir string, s Series) (SeriesSummary, error) {
	var sum SeriesSummary
	recs, err := ReadSeries(dir, s.ID)
	if err != nil {
		return sum, err
	}
	if len(recs) > len(s.Games) {
		return sum, fmt.Errorf("rollout.RunSeries: series %s has %d games recorded in %s, more than its %d", s.ID, len(recs), dir, len(s.Games))
	}
	for i, r := range recs {
		if r.Rollout.Failed {
			// Removed last first: a kill leaves no gap, and the next run
			// starts again here.
			for j := len(recs) - 1; j >= i; j-- {
				if err := os.Remove(gamePath(dir, s.ID, j)); err != nil {
					return sum, fmt.Errorf("rollout.RunSeries: series %s: replaying failed game %d: %w", s.ID, i, err)
				}
			}
			if err := fsutil.SyncDir(filepath.Join(dir, s.ID)); err != nil {
				return sum, fmt.Errorf("rollout.RunSeries: %w", err)
			}
			sum.Retried, recs = len(recs)-i, recs[:i]
			break
		}
	}
	sum.Resumed = len(recs)
	if opts.OnGames != nil && len(recs) > 0 {
		opts.OnGames(len(recs))
	}
	state := []byte(s.Init)
	if n := len(recs); n > 0 {
		state = recs[n-1].State
	}
	for i := len(recs); i < len(s.Games); i++ {
		if err := ctx.Err(); err != nil {
			return sum, err
		}
		rec, next, err := playSeriesGame(ctx, g, opts, bridge, s, i, state)
		if err != nil {
			return sum, err // cancelled: the game is not recorded
		}
		if rec.Failed {
			sum.Failed++
			if sum.FirstErr == nil {
				sum.FirstErr = fmt.Errorf("series %s game %d: %s", s.ID, i, rec.Error)
			}
			next = state
		}
		b, err := json.Marshal(GameRecord{Series: s.ID, Index: i, State: next, Rollout: *rec})
		if err != nil {
			return sum, fmt.Errorf("rollout.RunSeries: series %s game %d: %w", s.ID, i, err)
		}
		if err := os.MkdirAll(filepath.Join(dir, s.ID), 0o755); err != nil {
			return sum, fmt.Errorf("rollout.RunSeries: %w", err)
		}
		if err := fsutil.WriteFileAtomic(gamePath(dir, s.ID, i), b, 0o644); err != nil {
			return sum, err
		}
		sum.Played++
		if opts.OnGames != nil {
			opts.OnGames(1)
		}
		state = next
	}
	return sum, nil
}

// playSeriesGame plays game i of s from state; it returns the rollout (a
// failed one included) and the state after it, or an error only when ctx
// was cancelled.
func playSeriesGame(ctx context.Context, g SeriesGame, opts RunnerOptions, bridge *Bridge, s Series, i int, state []byte) (*dataset.Rollout, []byte, error) {
	p := s.Games[i]
	key := s.SeedKey
	if key == "" {
		key = s.ID
	}
	seed := DeriveSeed(opts.Seed, "series/"+key, int64(i))
	rec := &dataset.Rollout{
		RunID: opts.RunID, Step: int32(opts.Step), PolicyVersion: int32(opts.PolicyVersion), Env: g.Name(),
		PromptID: p.ID, GroupID: s.ID, RolloutID: fmt.Sprintf("%s-%06d", s.ID, i), Index: int32(i),
		Category: p.Category, Split: p.Split, Task: p.Task, PersonaPairID: p.PersonaPairID, Personas: p.Personas,
		Scenario: p.Scenario, Seed: seed, Temperature: float32(opts.Sampling.Temperature),
		Series: s.ID, GameIndex: int32(i), StartedUnixMS: time.Now().UnixMilli(),
	}
	agents := NewRecorder(RecorderOptions{
		Policy: opts.Policy, Model: opts.Model, Players: opts.Players, Sampling: opts.Sampling,
		ChatTemplateKwargs: opts.ChatTemplateKwargs, Seed: seed, History: opts.History, Bridge: bridge,
		Session: rec.RolloutID, Group: s.ID,
		WeightVersion: opts.weightVersion(),
	})
	defer agents.EndSessions()
	rec.Roles = RoleOutcomes(g.Roles(p), agents)
	t0 := time.Now()
	next, err := g.PlayState(ctx, p, agents, rec, state)
	rec.RolloutMS = time.Since(t0).Milliseconds()
	agents.Fill(rec)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		rec.Failed, rec.Error = true, err.Error()
	}
	return rec, next, nil
}

// ReadSeries returns the recorded games of series id under dir, in order.
// A gap (game k missing while a later one is recorded) or a record that
// does not parse is an error naming the file.
func ReadSeries(dir, id string) ([]GameRecord, error) {
	entries, err := os.ReadDir(filepath.Join(dir, id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("rollout.ReadSeries: %w", err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "game-") && strings.HasSuffix(e.Name(), ".json") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	out := make([]GameRecord, 0, len(names))
	for i, name := range names {
		path := filepath.Join(dir, id, name)
		if name != filepath.Base(gamePath(dir, id, i)) {
			return nil, fmt.Errorf("rollout.ReadSeries: %s: expected game %d here (a record is missing)", path, i)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("rollout.ReadSeries: %w", err)
		}
		var r GameRecord
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("rollout.ReadSeries: %s: %w", path, err)
		}
		if r.Series != id || r.Index != i {
			return nil, fmt.Errorf("rollout.ReadSeries: %s: records series %q game %d, want %q game %d", path, r.Series, r.Index, id, i)
		}
		out = append(out, r)
	}
	return out, nil
}

// gamePath is <dir>/<series>/game-NNNNNN.json.
func gamePath(dir, id string, i int) string {
	return filepath.Join(dir, id, fmt.Sprintf("game-%06d.json", i))
}

// validSeriesID reports whether id is a plain directory name.
func validSeriesID(id string) bool {
	return id != "" && id != "." && id != ".." && !strings.ContainsAny(id, `/\`) && !strings.HasPrefix(id, ".")
}

// SeriesRolloutsPath is where RunSeriesTo writes a series run's rollouts:
// <dir>/rollouts/step-000000.parquet (a run directory's layout, step 0: no
// training), so `parley report <dir>` and `parley export` read them.
func SeriesRolloutsPath(dir string) string { return dataset.RunDir(dir).RolloutsPath(0) }

// RunSeriesTo plays series under <dir>/series (RunSeries: resumable) and
// then writes every game's rollout, series by series in order, to
// SeriesRolloutsPath(dir).
func RunSeriesTo(ctx context.Context, opts RunnerOptions, dir string, series []Series) (SeriesSummary, error) {
	sum, err := RunSeries(ctx, opts, filepath.Join(dir, "series"), series)
	if err != nil {
		return sum, err
	}
	if err := dataset.RunDir(dir).Create(); err != nil {
		return sum, err
	}
	w, err := dataset.NewRolloutWriter(SeriesRolloutsPath(dir), dataset.RolloutWriterOptions{Logger: opts.Logger})
	if err != nil {
		return sum, err
	}
	for _, s := range series {
		recs, err := ReadSeries(filepath.Join(dir, "series"), s.ID)
		if err == nil {
			for _, r := range recs {
				if err = w.Write(r.Rollout); err != nil {
					break
				}
			}
		}
		if err != nil {
			w.Abort()
			return sum, fmt.Errorf("rollout.RunSeriesTo: %w", err)
		}
	}
	if err := w.Close(); err != nil {
		return sum, fmt.Errorf("rollout.RunSeriesTo: %w", err)
	}
	return sum, nil
}
