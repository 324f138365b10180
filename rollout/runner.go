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
	Players map[string]Player
	// Pools maps roles to frozen opponents drawn per group: every rollout
	// of a group faces the same one (seeded by the run's seed and the
	// group id), so a group holds one opponent and its advantages compare
	// like with like. A role in Pools is not looked up in Players.
	Pools map[string][]Player
	// Drawn maps a group's id (GroupID) to the players some of its roles
	// were drawn (a league's members, drawn by the training loop before
	// the step): they replace Players' and Pools' for that group.
	Drawn              map[string]map[string]Player
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
	// WeightVersion, if set, reports the policy version the endpoints
	// serve as each turn is sampled (a dialogue may span an update); nil:
	// PolicyVersion throughout.
	WeightVersion func() int
	Logger        *zap.Logger
	// History is how agents' conversations carry from turn to turn:
	// HistoryTokens ("" too) or HistoryRerender.
	History HistoryMode
	// OnActive, if set, is told when a rollout starts (+1) and ends (-1),
	// for a gauge of rollouts in flight.
	OnActive func(delta int)
	// OnGames, if set, is told of series games as RunSeries records them,
	// n at a time: the games a resumed series had recorded, then each
	// game played (a progress bar's ticks). It may be called concurrently.
	OnGames func(n int)
	// Resume holds rollouts already played by an interrupted run of the
	// same job (Run only): they are not played again, and the Summary
	// counts them (Resumed) as written.
	Resume []dataset.Rollout
}

// Runner samples G rollouts of every prompt row with a bounded worker pool.
type Runner struct {
	opts   RunnerOptions
	bridge *Bridge // shared by the recorders (HistoryTokens)
}

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
	h, err := ParseHistoryMode(string(opts.History))
	if err != nil {
		return nil, fmt.Errorf("rollout.NewRunner: %w", err)
	}
	opts.History = h
	r := &Runner{opts: opts}
	if h == HistoryTokens {
		r.bridge = NewBridge(opts.Policy)
		// Players and pool members share one Bridge per client.
		all := map[string]Player{}
		for role, pl := range opts.Players {
			all[role] = pl
		}
		for role, pool := range opts.Pools {
			for i, pl := range pool {
				all[fmt.Sprintf("%s\x00%d", role, i)] = pl
			}
		}
		for gid, roles := range opts.Drawn {
			for role, pl := range roles {
				all["drawn\x00"+gid+"\x00"+role] = pl
			}
		}
		all = sharedBridges(all, opts.Policy)
		if opts.Players != nil {
			r.opts.Players = map[string]Player{}
			for role := range opts.Players {
				r.opts.Players[role] = all[role]
			}
		}
		if opts.Drawn != nil {
			r.opts.Drawn = map[string]map[string]Player{}
			for gid, roles := range opts.Drawn {
				r.opts.Drawn[gid] = map[string]Player{}
				for role := range roles {
					r.opts.Drawn[gid][role] = all["drawn\x00"+gid+"\x00"+role]
				}
			}
		}
		if opts.Pools != nil {
			r.opts.Pools = map[string][]Player{}
			for role, pool := range opts.Pools {
				for i := range pool {
					r.opts.Pools[role] = append(r.opts.Pools[role], all[fmt.Sprintf("%s\x00%d", role, i)])
				}
			}
		}
	}
	return r, nil
}

// sharedBridges returns players with one Bridge for each token-level client
// other than the trained policy's, shared by every recorder of a run.
func sharedBridges(players map[string]Player, policy Policy) map[string]Player {
	if len(players) == 0 {
		return players
	}
	out := make(map[string]Player, len(players))
	made := map[Policy]*Bridge{}
	for role, pl := range players {
		if pl.Tokens != nil && pl.Tokens != policy && pl.Bridge == nil {
			if made[pl.Tokens] == nil {
				made[pl.Tokens] = NewBridge(pl.Tokens)
			}
			pl.Bridge = made[pl.Tokens]
		}
		out[role] = pl
	}
	return out
}

// Summary describes a finished (or interrupted) set of rollouts.
type Summary struct {
	Rollouts int `json:"rollouts"`
	// Resumed counts the rollouts of Rollouts that an interrupted run had
	// played (RunnerOptions.Resume).
	Resumed       int     `json:"resumed,omitempty"`
	Failed        int     `json:"failed"`
	Interrupted   int     `json:"interrupted"`
	Agreed        int     `json:"agreed"`
	AgreementRate float64 `json:"agreement_rate"`
	MeanRounds    float64 `json:"mean_rounds"`
	// RoundsToAgree is the mean rounds of the rollouts that reached
	// agreement; nil (absent from the JSON) when none did: without an
	// agreement there are no rounds to agreement.
	RoundsToAgree *float64 `json:"rounds_to_agreement,omitempty"`
	// agreedRounds sums the rounds of the rollouts that agreed.
	agreedRounds  float64
	PromptTokens  int64 `json:"prompt_tokens"`
	SampledTokens int64 `json:"sampled_tokens"`
	Requests      int64 `json:"requests"`
	PrefixBreaks  int64 `json:"prefix_breaks"`
	// Sequences and TrainerTokens total the training sequences of the
	// rollouts and their tokens: what the trainer processes.
	Sequences     int64 `json:"sequences"`
	TrainerTokens int64 `json:"trainer_tokens"`
	// SequencesPerRollout is Sequences per rollout (rollout.history: tokens
	// gives one per agent plus the final completion's);
	// TrainerTokensPerSampled is TrainerTokens per sampled token.
	SequencesPerRollout     float64 `json:"sequences_per_rollout"`
	TrainerTokensPerSampled float64 `json:"trainer_tokens_per_sampled_token"`
	// PromptTokensSent totals the prompt tokens of the completion requests.
	PromptTokensSent int64 `json:"prompt_tokens_sent"`
	// ClosedTurns counts turns cut before their end-of-turn token
	// (max_tokens, a stop string) that rollout.history: tokens closed by
	// appending it under mask 0.
	ClosedTurns int64 `json:"closed_turns"`
	// PrefixCacheHitRate is the share of the run's prompt tokens the
	// endpoints' prefix caches served (vllm:prefix_cache_hits_total over
	// vllm:prefix_cache_queries_total, read at the run's start and end);
	// 0 when no endpoint reports them.
	PrefixCacheHitRate float64 `json:"prefix_cache_hit_rate"`
	// PrefixCacheQueries and PrefixCacheHits are the counters' growth
	// over the run, in prompt tokens: their difference is the prefill the
	// endpoints computed.
	PrefixCacheQueries int64 `json:"prefix_cache_queries"`
	PrefixCacheHits    int64 `json:"prefix_cache_hits"`
	// EndpointLoadMax and EndpointLoadMean are the most and the mean
	// completions an endpoint was sent during the run; SessionMoves the
	// sessions moved off their endpoint (see llm.Session).
	EndpointLoadMax  float64 `json:"endpoint_load_max"`
	EndpointLoadMean float64 `json:"endpoint_load_mean"`
	SessionMoves     int64   `json:"session_moves"`
	// EndpointInFlightMean is the mean over endpoints of the requests in
	// flight on each, averaged over the run's time; EndpointAtTargetShare
	// the mean over endpoints of the share of the run's time during which
	// every one of the endpoint's slots (policy.max_concurrent_per_endpoint,
	// its in-flight target) was held. Read from the client's counters.
	EndpointInFlightMean  float64 `json:"endpoint_inflight_mean"`
	EndpointAtTargetShare float64 `json:"endpoint_at_target_share"`
	// Occupancy is each endpoint's, in the client's order.
	Occupancy []Occupancy   `json:"occupancy,omitempty"`
	Elapsed   time.Duration `json:"elapsed_ns"`
	PerSecond float64       `json:"rollouts_per_second"`
	FailedIDs []string      `json:"failed_ids,omitempty"`
	// Errors counts the failed rollouts by cause (the innermost error's
	// message), so one line per kind of failure can be reported.
	Errors map[string]int `json:"errors,omitempty"`
	// EndpointsLost counts the endpoints lost at the end of the run
	// (llm.Client.Lost): out of rotation until they answer again.
	EndpointsLost int `json:"endpoints_lost"`
	// FirstErr is the first failure, with its error chain (errors.Is works
	// on it: llm.ErrEngineDead, llm.ErrNotRunning, …); nil when none failed.
	FirstErr error `json:"-"`
}

// Occupancy is one policy endpoint's occupancy over a run: the requests
// in flight on it averaged over the run's time, and the share of that
// time every one of its slots was held.
type Occupancy struct {
	Endpoint      string  `json:"endpoint"`
	InFlightMean  float64 `json:"inflight_mean"`
	AtTargetShare float64 `json:"at_target_share"`
}

// countError adds a failed rollout's error to the counts.
func (s *Summary) countError(err error) {
	if err == nil {
		return
	}
	if s.FirstErr == nil {
		s.FirstErr = err
	}
	root := err
	for {
		next := errors.Unwrap(root)
		if next == nil {
			break
		}
		root = next
	}
	if s.Errors == nil {
		s.Errors = map[string]int{}
	}
	s.Errors[root.Error()]++
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
		s.agreedRounds += float64(r.Rounds)
	}
	s.MeanRounds += float64(r.Rounds)
	s.PromptTokens += int64(r.PromptTokens)
	s.SampledTokens += int64(r.SampledTokens)
	s.Requests += int64(r.Requests)
	s.PrefixBreaks += int64(r.PrefixBreaks)
	s.Sequences += int64(len(r.Sequences))
	for _, q := range r.Sequences {
		s.TrainerTokens += int64(len(q.InputIDs))
	}
}

// played is a finished rollout with the recorder counts the rollout record
// does not keep.
type played struct {
	rec                      *dataset.Rollout
	err                      error  // the failure, with its chain
	next                     []byte // the state after a series game
	promptTokensSent, closed int
}

// Finish turns the sums of Count into means, the run having taken elapsed.
func (s *Summary) Finish(elapsed time.Duration) {
	ok := s.Rollouts - s.Failed
	if ok > 0 {
		s.AgreementRate = float64(s.Agreed) / float64(ok)
		s.MeanRounds /= float64(ok)
		s.SequencesPerRollout = float64(s.Sequences) / float64(ok)
	}
	if s.SampledTokens > 0 {
		s.TrainerTokensPerSampled = float64(s.TrainerTokens) / float64(s.SampledTokens)
	}
	if s.Agreed > 0 {
		r := s.agreedRounds / float64(s.Agreed)
		s.RoundsToAgree = &r
	}
	s.Elapsed = elapsed
	if elapsed > 0 {
		s.PerSecond = float64(s.Rollouts-s.Resumed) / elapsed.Seconds()
	}
}

// rolloutID names rollout index of a group.
func rolloutID(groupID string, index int) string { return fmt.Sprintf("%s-%03d", groupID, index) }

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
	next := func(_ context.Context, i int) (groupJob, bool, error) {
		if i >= len(prompts) {
			return groupJob{}, false, nil
		}
		return groupJob{p: prompts[i]}, true, nil
	}
	return r.run(ctx, next, len(prompts), func(p played) error { return sink(p.rec) })
}

// Group is one group a GroupSource yields: a prompt row and, where they
// differ from the runner's, its id, step and trained policy.
type Group struct {
	Prompt dataset.Prompt
	// ID names the group; "" names it GroupID(Step, i).
	ID string
	// Step, when positive, stamps the group's rollouts in place of the
	// runner's RunnerOptions.Step.
	Step int
	// Model, when set, is the trained policy's model or adapter the
	// group plays with throughout, and PolicyVersion its version, in place
	// of the runner's Model and PolicyVersion: a group started before a
	// new adapter is served finishes on the one it started with.
	Model         string
	PolicyVersion int
	// Ctx, if set, is the group's own context, derived from the run's:
	// cancelling it abandons the group's rollouts alone (their requests
	// are aborted), which are then never passed to the sink.
	Ctx context.Context
	// State, if set, makes the group GroupSize continuations of a series
	// game from the state its series carries, as RunFromStates plays them
	// (the game must be a SeriesGame); Played.Next is then the state after
	// each.
	State *StateJob
	// Players, if set, are the roles drawn for the group (league members),
	// in place of RunnerOptions.Drawn's.
	Players map[string]Player
}

// GroupSource yields the groups of a run one after another: group i, or
// false when there are no more. It is called from one goroutine, for
// i = 0, 1, 2, … in order, whenever the worker pool can take a rollout,
// and may block, for example until the groups before it are judged and
// say whether more are wanted; it must return when ctx is done. An error
// stops the run.
type GroupSource func(ctx context.Context, i int) (Group, bool, error)

// Played is a finished rollout as RunSource's sink receives it: the
// record, and what the record does not keep.
type Played struct {
	Rollout *dataset.Rollout
	// Err is the failure with its chain (nil when it did not fail).
	Err error
	// PromptTokensSent and ClosedTurns are the recorder's counts
	// (Summary's fields of the same names).
	PromptTokensSent, ClosedTurns int
	// Next is the state the series goes on from after the rollout, for a
	// group played from a state (Group.State); nil when it failed.
	Next []byte
}

// Count adds a played rollout to the summary, as a run does; Finish then
// turns its sums into means.
func (s *Summary) Count(p Played) {
	s.Add(p.Rollout)
	s.countError(p.Err)
	if !p.Rollout.Failed {
		s.PromptTokensSent += int64(p.PromptTokensSent)
		s.ClosedTurns += int64(p.ClosedTurns)
	}
}

// RunSource plays GroupSize rollouts of every group src yields, as Run
// does for a fixed list of prompt rows: the rows are validated as they
// come, and the groups are numbered in the order src yields them.
func (r *Runner) RunSource(ctx context.Context, src GroupSource, sink func(Played) error) (Summary, error) {
	next := func(ctx context.Context, i int) (groupJob, bool, error) {
		g, ok, err := src(ctx, i)
		if err != nil || !ok {
			return groupJob{}, false, err
		}
		if err := r.opts.Game.Validate(g.Prompt); err != nil {
			return groupJob{}, false, err
		}
		if _, ok := r.opts.Game.(SeriesGame); g.State != nil && !ok {
			return groupJob{}, false, fmt.Errorf("game %s carries no state between games (not a SeriesGame)", r.opts.Game.Name())
		}
		return groupJob{p: g.Prompt, st: g.State, id: g.ID, step: g.Step, model: g.Model, pv: g.PolicyVersion, ctx: g.Ctx, drawn: g.Players}, true, nil
	}
	return r.run(ctx, next, -1, func(p played) error {
		return sink(Played{Rollout: p.rec, Err: p.err, PromptTokensSent: p.promptTokensSent, ClosedTurns: p.closed, Next: p.next})
	})
}

// StateJob is one group of a step of series training: GroupSize
// continuations of game Index of series Series, each played from State
// (the state the series carries; nil before its first game).
type StateJob struct {
	Series string
	Index  int
	Prompt dataset.Prompt
	State  []byte
}

// SampleSeed is the sampling seed of continuation index of a series
// training group whose game seed is seed (RunFromStates).
func SampleSeed(seed int64, index int) int64 { return DeriveSeed(seed, "sample", int64(index)) }

// RunFromStates plays GroupSize continuations of every job's game from
// its state (the game must be a SeriesGame): job i is group i. The
// continuations of a group share the record's Seed, which seeds the game's
// own draws (turn order, scripted parties), so they differ only in what the
// policy samples, and the group's advantages measure the policy's choices,
// not the luck of the draw; each samples with its own seed,
// SampleSeed(Seed, Index). sink receives each finished rollout (a
// failed one included) with the state after it (nil when it failed), as
// Run's sink does.
func (r *Runner) RunFromStates(ctx context.Context, jobs []StateJob, sink func(rec *dataset.Rollout, next []byte) error) (Summary, error) {
	if _, ok := r.opts.Game.(SeriesGame); !ok {
		return Summary{}, fmt.Errorf("rollout.RunFromStates: game %s carries no state between games (not a SeriesGame)", r.opts.Game.Name())
	}
	groups := make([]groupJob, len(jobs))
	for i := range jobs {
		if err := r.opts.Game.Validate(jobs[i].Prompt); err != nil {
			return Summary{}, fmt.Errorf("rollout.RunFromStates: series %s: %w", jobs[i].Series, err)
		}
		groups[i] = groupJob{p: jobs[i].Prompt, st: &jobs[i]}
	}
	next := func(_ context.Context, i int) (groupJob, bool, error) {
		if i >= len(groups) {
			return groupJob{}, false, nil
		}
		return groups[i], true, nil
	}
	return r.run(ctx, next, len(groups), func(p played) error { return sink(p.rec, p.next) })
}

// groupJob is one group: a prompt row, for series training the series
// game it continues, and what a Group sets in place of the runner's.
type groupJob struct {
	p     dataset.Prompt
	st    *StateJob
	id    string
	step  int
	model string
	pv    int
	ctx   context.Context
	drawn map[string]Player
}

// run plays GroupSize rollouts of every group next yields (GroupSource's
// contract) with the worker pool and passes them to sink (see Run). groups
// is the number of groups next yields, or -1 when not known beforehand:
// the rollouts a cancelled run did not finish are counted as interrupted,
// those of every group when it is known, else those begun.
func (r *Runner) run(ctx context.Context, next func(context.Context, int) (groupJob, bool, error), groups int, sink func(played) error) (Summary, error) {
	if err := r.Check(ctx); err != nil {
		return Summary{}, err
	}
	start := time.Now()
	before, routed := SnapRouting(ctx, r.opts.Policy, r.opts.Logger)
	type job struct {
		g            groupJob
		group, index int
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan job)
	results := make(chan played, r.opts.Concurrency)
	// Rollouts an interrupted run played (RunnerOptions.Resume) count as
	// written and are not played again.
	var sum Summary
	done := make(map[string]bool, len(r.opts.Resume))
	for i := range r.opts.Resume {
		rec := &r.opts.Resume[i]
		done[rec.RolloutID] = true
		sum.Add(rec)
		sum.Resumed++
	}
	var wg sync.WaitGroup
	for w := 0; w < r.opts.Concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				p := r.active(func() played { return r.playOne(ctx, j.g, j.group, j.index) })
				if p.rec != nil {
					results <- p
				}
			}
		}()
	}
	// total counts the rollouts handed to the workers; the feeder's last
	// write happens before jobs is closed, so before results is.
	var total int
	var feedErr error
	go func() {
		defer close(jobs)
		for g := 0; ; g++ {
			gj, ok, err := next(ctx, g)
			if err != nil {
				if ctx.Err() == nil {
					feedErr = err
					cancel()
				}
				return
			}
			if !ok {
				return
			}
			for i := 0; i < r.opts.GroupSize; i++ {
				if len(done) > 0 && done[rolloutID(GroupID(r.opts.Step, g), i)] {
					continue
				}
				select {
				case jobs <- job{gj, g, i}:
					total++
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	go func() { wg.Wait(); close(results) }()

	var sinkErr error
	for p := range results {
		if sinkErr != nil {
			continue // drain
		}
		if err := sink(p); err != nil {
			sinkErr = fmt.Errorf("rollout.Run: %w", err)
			cancel()
			continue
		}
		sum.Count(Played{Rollout: p.rec, Err: p.err, PromptTokensSent: p.promptTokensSent, ClosedTurns: p.closed})
	}
	if groups >= 0 {
		total = groups * r.opts.GroupSize
	}
	if ctx.Err() != nil {
		sum.Interrupted = total - sum.Rollouts
	}
	sum.Finish(time.Since(start))
	if routed && ctx.Err() == nil {
		after, _ := SnapRouting(ctx, r.opts.Policy, r.opts.Logger)
		sum.AddRouting(before, after, r.opts.Logger)
	}
	if sinkErr != nil {
		return sum, sinkErr
	}
	if feedErr != nil {
		return sum, fmt.Errorf("rollout.Run: %w", feedErr)
	}
	return sum, nil
}

// Check makes the check Run makes before any rollout; a caller that
// creates files for the rollouts calls it first, so that a run that cannot
// start leaves nothing behind. It learns how the trained policy's chat
// template ends a turn (HistoryTokens, once per runner), so that a
// template that cannot render bridges stops the run with one error
// (ErrBridge, naming the fix) instead of failing every rollout with it.
// Any other failure is left to the rollouts, which ask again.
func (r *Runner) Check(ctx context.Context) error {
	if r.bridge == nil || r.opts.Model == "" {
		return nil
	}
	if _, _, err := r.bridge.TemplateEnd(ctx, r.opts.Model, r.opts.ChatTemplateKwargs); errors.Is(err, ErrBridge) {
		return fmt.Errorf("rollout.Run: rollout.history %s: %w", HistoryTokens, err)
	}
	return nil
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
		out[i] = dataset.RoleOutcome{Role: role, Policy: pl.Kind, Model: model, Endpoint: pl.Endpoint, Trained: pl.Trained,
			Member: pl.Member, MemberVersion: int32(pl.MemberVersion)}
	}
	return out
}

// active runs play, telling OnActive of its start and end.
func (r *Runner) active(play func() played) played {
	if r.opts.OnActive == nil {
		return play()
	}
	r.opts.OnActive(1)
	defer r.opts.OnActive(-1)
	return play()
}

// playOne plays one rollout of a group (from the group's series state,
// when it has one); a nil record means it was interrupted by cancellation.
func (r *Runner) playOne(ctx context.Context, g groupJob, group, index int) played {
	p := g.p
	step, model, pv, wv := r.opts.Step, r.opts.Model, r.opts.PolicyVersion, r.opts.weightVersion()
	if g.step > 0 {
		step = g.step
	}
	if g.model != "" {
		model, pv = g.model, g.pv
		if r.opts.WeightVersion == nil {
			wv = func() int { return g.pv }
		}
	}
	if g.ctx != nil {
		ctx = g.ctx
	}
	groupID := GroupID(step, group)
	if g.id != "" {
		groupID = g.id
	}
	seed := DeriveSeed(r.opts.Seed, groupID, int64(index))
	sampleSeed := seed
	if g.st != nil {
		seed = DeriveSeed(r.opts.Seed, groupID, -1)
		sampleSeed = SampleSeed(seed, index)
	}
	rec := &dataset.Rollout{
		RunID:         r.opts.RunID,
		Step:          int32(step),
		PolicyVersion: int32(pv),
		Env:           r.opts.Game.Name(),
		PromptID:      p.ID,
		GroupID:       groupID,
		RolloutID:     rolloutID(groupID, index),
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
		Policy: r.opts.Policy, Model: model, Players: r.groupPlayers(groupID, g.drawn), Sampling: r.opts.Sampling,
		ChatTemplateKwargs: r.opts.ChatTemplateKwargs, Seed: sampleSeed,
		History: r.opts.History, Bridge: r.bridge, Session: rec.RolloutID, Group: groupID,
		WeightVersion: wv,
	})
	defer agents.EndSessions()
	rec.Roles = RoleOutcomes(r.opts.Game.Roles(p), agents)
	t0 := time.Now()
	var (
		next []byte
		err  error
	)
	if g.st != nil {
		rec.Series, rec.GameIndex = g.st.Series, int32(g.st.Index)
		next, err = r.opts.Game.(SeriesGame).PlayState(ctx, p, agents, rec, g.st.State)
	} else {
		err = r.opts.Game.Play(ctx, p, agents, rec)
	}
	rec.RolloutMS = time.Since(t0).Milliseconds()
	agents.Fill(rec)
	if err != nil {
		if ctx.Err() != nil {
			return played{}
		}
		rec.Failed = true
		rec.Error = err.Error()
		next = nil
		r.opts.Logger.Debug("rollout failed", zap.String("rollout_id", rec.RolloutID), zap.Error(err))
	}
	return played{rec: rec, err: err, next: next, promptTokensSent: agents.PromptTokensSent, closed: agents.ClosedTurns}
}

// groupPlayers is the players of group groupID: GroupPlayers, with the
// roles drawn for the group (drawn, or else RunnerOptions.Drawn's) in
// place.
func (r *Runner) groupPlayers(groupID string, drawn map[string]Player) map[string]Player {
	out := GroupPlayers(r.opts.Players, r.opts.Pools, r.opts.Seed, groupID)
	if drawn == nil {
		drawn = r.opts.Drawn[groupID]
	}
	if len(drawn) == 0 {
		return out
	}
	with := make(map[string]Player, len(out)+len(drawn))
	for role, pl := range out {
		with[role] = pl
	}
	for role, pl := range drawn {
		with[role] = pl
	}
	return with
}

// GroupPlayers is the players of the rollouts of group groupID: players,
// with each pooled role given the pool member the group draws.
func GroupPlayers(players map[string]Player, pools map[string][]Player, seed int64, groupID string) map[string]Player {
	if len(pools) == 0 {
		return players
	}
	out := make(map[string]Player, len(players)+len(pools))
	for role, pl := range players {
		out[role] = pl
	}
	for role, pool := range pools {
		if len(pool) > 0 {
			out[role] = pool[DeriveSeed(seed, "pool/"+role+"/"+groupID, 0)%int64(len(pool))]
		}
	}
	return out
}

// weightVersion is WeightVersion, or PolicyVersion throughout.
func (o RunnerOptions) weightVersion() func() int {
	if o.WeightVersion != nil {
		return o.WeightVersion
	}
	pv := o.PolicyVersion
	return func() int { return pv }
}
