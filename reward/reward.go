// Package reward holds parley's judges: the Collective Agency rubric judge and
// the pairwise preference judge over any OpenAI-compatible chat API
// (llm/chat), and deterministic rule scorers for tests and the toy
// quickstart. A judge scores one rollout, as a whole and, when the game's
// roles earn differently, per role; ScoreAll scores a batch of rollouts
// concurrently and records the outcome on each rollout and each of its
// roles. A rollout whose judging finally fails is marked with JudgeError and
// left unjudged: it is never scored 0.
package reward

import (
	"context"
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
// concurrently.
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
			switch {
			case err != nil:
				stats.Failed++
			case res.Cached:
				stats.Judged++
				stats.Cached++
			default:
				stats.Judged++
				stats.PromptTokens += res.PromptTokens
				stats.CompletionTokens += res.CompletionTokens
			}
		}()
	}
	wg.Wait()
	return stats
}

// scoreOne judges r and records the outcome on it.
func scoreOne(ctx context.Context, j Judge, r *dataset.Rollout) (Result, error) {
	r.Judged, r.Score, r.JudgeRationale, r.JudgeError = false, 0, "", ""
	for k := range r.Roles {
		r.Roles[k].Scored, r.Roles[k].Score = false, 0
	}
	r.JudgeModel = j.Name()
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
	return res, nil
}
