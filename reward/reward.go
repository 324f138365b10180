// Package reward holds parley's judges: the Collective Agency rubric judge and
// the pairwise preference judge over any OpenAI-compatible chat API
// (llm/chat), deterministic rule scorers for tests and the toy
// quickstart, and a user's Python function in a worker process
// (PythonJudge). A judge scores one rollout, as a whole and, when the game's
// roles earn differently, per role; ScoreAll scores a batch of rollouts
// concurrently and records the outcome on each rollout and each of its
// roles; a GroupJudge (the CA judge in judge.mode group) is asked once per
// group of rollouts. A rollout whose judging finally fails is marked with
// JudgeError and left unjudged: it is never scored 0.
package reward

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/llm/chat"
)

// Result is a judge's verdict on one rollout.
type Result struct {
	// Score is the judge's score of the rollout as a whole: 1 to 5 for the
	// Collective Agency rubric, the configured range for a rule scorer.
	Score float64 `json:"score"`
	// Roles, when not nil, holds each role's own score (a zero-sum game's
	// sides, a party's utility); a role it does not name is not scored.
	// When nil, every role earns Score: the common case of a single-score
	// judge.
	Roles map[string]float64 `json:"roles,omitempty"`
	// Rationale is the judge's explanation of the score.
	Rationale string `json:"rationale"`
	// Model is the judge model or rule name that produced the score.
	Model string `json:"model"`
	// Cached reports that the verdict came from the judge cache (or from a
	// concurrent identical request) and cost nothing this time.
	Cached bool `json:"cached,omitempty"`
	// PromptTokens and CompletionTokens are the token usage the judge API
	// reported for the request that produced this verdict.
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	// Group, when the verdict came from a group request (judge.mode
	// group), records where the rollout was shown in it; its rationale
	// then starts with the same record (GroupOrder.String).
	Group *GroupOrder `json:"group,omitempty"`
	// ReportedModel and SystemFingerprint are what the judge API said
	// answered (the reply's model, which may name a dated snapshot, and
	// its system_fingerprint); empty for a rule scorer or an API that
	// sends none. Cached verdicts keep those of the reply that was paid
	// for.
	ReportedModel     string `json:"reported_model,omitempty"`
	SystemFingerprint string `json:"system_fingerprint,omitempty"`
}

// Metered is a judge that asks an LLM through a chat client; a run reads
// that client's counters (chat.Client.Stats and Since: calls, tokens,
// latency, 429s, retries, the backends that answered) once per step.
type Metered interface {
	ChatClient() *chat.Client
}

// Judge scores rollouts.
type Judge interface {
	// Judge scores one rollout. An error means no score: the caller must
	// not substitute a default.
	Judge(ctx context.Context, r *dataset.Rollout) (Result, error)
	// Name is the judge model or rule name, used in cache keys and records.
	Name() string
}

// ScoreStats counts the outcomes of ScoreAll.
type ScoreStats struct {
	Judged  int // rollouts that received a score
	Failed  int // rollouts whose judging failed (JudgeError set)
	Cached  int // scored rollouts whose verdict came from the cache
	Skipped int // rollouts not judged because the rollout itself failed

	// PromptTokens and CompletionTokens sum the usage of verdicts that were
	// paid for in this call (cached verdicts excluded).
	PromptTokens     int
	CompletionTokens int

	// Calls counts the judge requests whose verdict was paid for (cached
	// ones excluded): one per scored rollout in pointwise mode, one per
	// group (two when position-checked) in group mode.
	Calls int
	// PositionGroups counts the groups re-scored in reversed order
	// (judge.position_check), PositionMembers their members compared,
	// PositionMoved those whose score differed between the two orders,
	// and PositionFailed the re-scores that failed (the first order's
	// scores then stand).
	PositionGroups  int
	PositionMembers int
	PositionMoved   int
	PositionFailed  int
}

// Add adds the counts of o to st.
func (st *ScoreStats) Add(o ScoreStats) {
	st.Judged += o.Judged
	st.Failed += o.Failed
	st.Cached += o.Cached
	st.Skipped += o.Skipped
	st.PromptTokens += o.PromptTokens
	st.CompletionTokens += o.CompletionTokens
	st.Calls += o.Calls
	st.PositionGroups += o.PositionGroups
	st.PositionMembers += o.PositionMembers
	st.PositionMoved += o.PositionMoved
	st.PositionFailed += o.PositionFailed
}

// PositionMovedShare is the share of position-checked members whose score
// moved when their group was re-scored in reversed order (0 when none
// was checked).
func (st ScoreStats) PositionMovedShare() float64 {
	if st.PositionMembers == 0 {
		return 0
	}
	return float64(st.PositionMoved) / float64(st.PositionMembers)
}

// ScoreAll judges every rollout in rs with at most concurrency judge calls
// at once (1 when concurrency < 1) and records the outcome on the rollout
// (Judged, Score, JudgeModel, JudgeRationale, JudgeError and JudgeMS) and
// on each of its roles (Scored and Score; see Result.Roles). A rollout with
// Failed set is skipped. A judge failure sets JudgeError and leaves Judged
// false, Score 0 and every role unscored. When ctx is cancelled, the
// rollouts not yet judged fail with the context's error.
func ScoreAll(ctx context.Context, j Judge, rs []dataset.Rollout, concurrency int) ScoreStats {
	return ScoreAllFunc(ctx, j, rs, concurrency, nil)
}

// ScoreAllFunc is ScoreAll calling onDone (when not nil) after each
// rollout is judged or skipped, for progress; it may be called
// concurrently. A GroupJudge is asked once per group (the rollouts of one
// GroupID, task and persona pair), concurrency groups at once; when its
// verdict fails, every member of the group fails with its error. Each
// member's JudgeMS is then the group's whole judging time.
func ScoreAllFunc(ctx context.Context, j Judge, rs []dataset.Rollout, concurrency int, onDone func()) ScoreStats {
	if onDone == nil {
		onDone = func() {}
	}
	if concurrency < 1 {
		concurrency = 1
	}
	var (
		mu    sync.Mutex
		stats ScoreStats
		wg    sync.WaitGroup
		sem   = make(chan struct{}, concurrency)
	)
	count := func(res Result, err error) {
		switch {
		case err != nil:
			stats.Failed++
		case res.Cached:
			stats.Judged++
			stats.Cached++
		default:
			stats.Judged++
			stats.Calls++
			stats.PromptTokens += res.PromptTokens
			stats.CompletionTokens += res.CompletionTokens
		}
	}
	if gj, ok := j.(GroupJudge); ok {
		for _, g := range groupsOf(rs) {
			if rs[g[0]].Failed {
				stats.Skipped += len(g)
				for range g {
					onDone()
				}
				continue
			}
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() {
					<-sem
					wg.Done()
					for range g {
						onDone()
					}
				}()
				v, err := scoreGroup(ctx, gj, rs, g)
				mu.Lock()
				defer mu.Unlock()
				for k := range g {
					if err != nil {
						stats.Failed++
					} else {
						stats.Judged++
						if v.Results[k].Cached {
							stats.Cached++
						}
					}
				}
				stats.Calls += v.Calls
				stats.PromptTokens += v.PromptTokens
				stats.CompletionTokens += v.CompletionTokens
				if err == nil && v.Checked {
					stats.PositionGroups++
					if v.CheckErr != nil {
						stats.PositionFailed++
					} else {
						stats.PositionMembers += len(g)
						stats.PositionMoved += v.Moved
					}
				}
			}()
		}
		wg.Wait()
		return stats
	}
	for i := range rs {
		r := &rs[i]
		if r.Failed {
			stats.Skipped++
			onDone()
			continue
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done(); onDone() }()
			res, err := scoreOne(ctx, j, r)
			mu.Lock()
			defer mu.Unlock()
			count(res, err)
		}()
	}
	wg.Wait()
	return stats
}

// groupsOf partitions the indices of rs into the groups a GroupJudge
// scores at once: the rollouts of one GroupID, task and persona pair, in
// order of first appearance. A rollout that failed in sampling is a
// group of its own, skipped.
func groupsOf(rs []dataset.Rollout) [][]int {
	type key struct{ group, task, a, b string }
	at := map[key]int{}
	var out [][]int
	for i := range rs {
		r := &rs[i]
		if r.Failed {
			out = append(out, []int{i})
			continue
		}
		k := key{r.GroupID, r.Task, r.Persona("A"), r.Persona("B")}
		g, ok := at[k]
		if !ok {
			g = len(out)
			at[k] = g
			out = append(out, nil)
		}
		out[g] = append(out[g], i)
	}
	return out
}

// scoreGroup judges the rollouts of rs at indices g in one group request
// and records the outcome on each, as scoreOne does: on a failure every
// member gets its error.
func scoreGroup(ctx context.Context, j GroupJudge, rs []dataset.Rollout, g []int) (GroupVerdict, error) {
	members := make([]*dataset.Rollout, len(g))
	for k, i := range g {
		members[k] = &rs[i]
		clearVerdict(members[k], j.Name())
	}
	start := time.Now()
	var (
		v   GroupVerdict
		err = ctx.Err()
	)
	if err == nil {
		v, err = j.JudgeGroup(ctx, members)
		if err == nil && len(v.Results) != len(members) {
			err = fmt.Errorf("reward: group judge %s returned %d results for %d rollouts", j.Name(), len(v.Results), len(members))
		}
	}
	ms := time.Since(start).Milliseconds()
	for k, r := range members {
		r.JudgeMS = ms
		if err != nil {
			r.JudgeError = err.Error()
			continue
		}
		recordVerdict(r, v.Results[k])
	}
	return v, err
}

// clearVerdict clears r's verdict before it is judged by judge.
func clearVerdict(r *dataset.Rollout, judge string) {
	r.Judged, r.Score, r.JudgeRationale, r.JudgeError = false, 0, "", ""
	for k := range r.Roles {
		r.Roles[k].Scored, r.Roles[k].Score = false, 0
	}
	r.JudgeModel = judge
}

// recordVerdict records a successful verdict on r.
func recordVerdict(r *dataset.Rollout, res Result) {
	r.Judged = true
	r.Score = float32(res.Score)
	for k := range r.Roles {
		ro := &r.Roles[k]
		if res.Roles == nil {
			ro.Scored, ro.Score = true, float32(res.Score)
		} else if v, ok := res.Roles[ro.Role]; ok {
			ro.Scored, ro.Score = true, float32(v)
		}
	}
	r.JudgeRationale = res.Rationale
	if res.Model != "" {
		r.JudgeModel = res.Model
	}
}

// scoreOne judges r and records the outcome on it.
func scoreOne(ctx context.Context, j Judge, r *dataset.Rollout) (Result, error) {
	clearVerdict(r, j.Name())
	start := time.Now()
	var (
		res Result
		err = ctx.Err()
	)
	if err == nil {
		res, err = j.Judge(ctx, r)
	}
	r.JudgeMS = time.Since(start).Milliseconds()
	if err != nil {
		r.JudgeError = err.Error()
		return res, err
	}
	recordVerdict(r, res)
	return res, nil
}
