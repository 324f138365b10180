package train_test

import (
	"context"
	"math"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/grpo"
	"github.com/parleyhq/parley/internal/retry"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/llm/chat"
	"github.com/parleyhq/parley/metrics"
	"github.com/parleyhq/parley/reward"
	"github.com/parleyhq/parley/sim"
	"github.com/parleyhq/parley/train"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// TestLoopJudgeMeter runs the loop with the CA judge on a serve-sim judge
// over real HTTP: the judge/ keys of its step lines add up to what the
// judge served (its requests, tokens, cached tokens and 429s), the cost
// is the tokens times the price, the backends are the model and
// fingerprint the judge reported, and a fingerprint changed mid-run is
// counted at the step it happened and warned once.
func TestLoopJudgeMeter(t *testing.T) {
	const steps = 3
	tests := []struct {
		name      string
		judge     sim.Options
		price     *[2]float64 // input, output per million; nil: unset
		refingerS int         // before training this step, the judge's fingerprint changes (0: never)
	}{
		{name: "priced", judge: sim.Options{LatencyMedian: 2 * time.Millisecond}, price: &[2]float64{0.15, 0.6}},
		{name: "rate limited", judge: sim.Options{RateLimitRate: 0.3, FaultSeed: 7}},
		{name: "fingerprint changes", judge: sim.Options{}, refingerS: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			policy, _ := sim.New(sim.Options{})
			ps := httptest.NewServer(policy.Handler())
			defer ps.Close()
			js, err := sim.New(tt.judge)
			if err != nil {
				t.Fatal(err)
			}
			jts := httptest.NewServer(js.Handler())
			defer jts.Close()
			c, err := chat.New(chat.Options{BaseURL: jts.URL + "/v1", Model: "gpt-judge",
				Retry: retry.Policy{MaxRetries: 20, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond, AfterMax: time.Millisecond}})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			core, logs := observer.New(zap.WarnLevel)
			dir := dataset.RunDir(t.TempDir())
			ft := &fakeTrainer{dir: dir, consumed: map[int]int{}, versions: map[int]int{}}
			if tt.refingerS > 0 {
				ft.gate = func(step int) {
					if step == tt.refingerS {
						js.SetFingerprint("fp_sim1")
					}
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go ft.run(ctx)
			l := newLoopClient(t, dir, llm.Options{Endpoints: []string{ps.URL}, Retry: retry.Policy{BackoffBase: time.Millisecond}}, steps, 0,
				func(o *train.LoopOptions) {
					o.Judge, o.Logger = reward.NewCAJudge(c), zap.New(core)
					if tt.price != nil {
						o.JudgeCost = func(p, c int64) float64 { return (float64(p)*tt.price[0] + float64(c)*tt.price[1]) / 1e6 }
					}
				})
			if err := l.Run(ctx); err != nil {
				t.Fatal(err)
			}
			ms := readMetrics(t, dir)
			if len(ms) != steps {
				t.Fatalf("%d metrics lines, want %d", len(ms), steps)
			}
			sum := map[metrics.Key]float64{}
			costTotal := 0.0
			for i, m := range ms {
				for _, k := range []metrics.Key{metrics.KeyJudgeCalls, metrics.KeyJudgeAttempts, metrics.KeyJudgeRetries, metrics.KeyJudge429,
					metrics.KeyJudgePromptTokens, metrics.KeyJudgeCompletionTokens, metrics.KeyJudgeCachedTokens, metrics.KeyJudgeCallsFailed} {
					v, ok := m[string(k)].(float64)
					if !ok {
						t.Fatalf("step %d: %s = %v, want a number", i+1, k, m[string(k)])
					}
					sum[k] += v
				}
				t.Logf("step %d: calls %v attempts %v 429s %v retries %v prompt %v completion %v cached share %.3f p50 %.4fs p95 %.4fs cost %v backends %v",
					i+1, m["judge/calls"], m["judge/attempts"], m["judge/http_429"], m["judge/retries"], m["judge/prompt_tokens"],
					m["judge/completion_tokens"], m["judge/cached_share"], m["judge/latency_p50_s"], m["judge/latency_p95_s"],
					m["judge/cost_usd"], m["judge/backends"])
				t.Logf("step %d: monitors corr length %v persona echo %v agreement %v", i+1,
					m[string(metrics.KeyJudgeCorrLength)], m[string(metrics.KeyJudgeCorrPersonaEcho)], m[string(metrics.KeyJudgeCorrAgreement)])
				if r, ok := m[string(metrics.KeyJudgeCorrLength)].(float64); !ok || r < -1 || r > 1 {
					t.Errorf("step %d: %s = %v, want a correlation in [-1, 1]", i+1, metrics.KeyJudgeCorrLength, m[string(metrics.KeyJudgeCorrLength)])
				}
				calls := m[string(metrics.KeyJudgeCalls)].(float64)
				if calls != float64(4*4) { // prompts per step × group size, no cache
					t.Errorf("step %d: %v judge calls, want 16", i+1, calls)
				}
				p50, _ := m[string(metrics.KeyJudgeLatencyP50)].(float64)
				p95, _ := m[string(metrics.KeyJudgeLatencyP95)].(float64)
				if !(p50 > 0 && p95 >= p50) {
					t.Errorf("step %d: latency p50 %v p95 %v, want 0 < p50 <= p95", i+1, p50, p95)
				}
				if tt.judge.LatencyMedian > 0 && p50 < tt.judge.LatencyMedian.Seconds()/2 {
					t.Errorf("step %d: latency p50 %v below the judge's simulated latency %v", i+1, p50, tt.judge.LatencyMedian)
				}
				share, _ := m[string(metrics.KeyJudgeCachedShare)].(float64)
				if want := m[string(metrics.KeyJudgeCachedTokens)].(float64) / m[string(metrics.KeyJudgePromptTokens)].(float64); share != want || share <= 0 || share >= 1 {
					t.Errorf("step %d: cached share %v, want %v in (0, 1): the rubric is a shared prefix", i+1, share, want)
				}
				cost, hasCost := m[string(metrics.KeyJudgeCost)].(float64)
				if tt.price == nil {
					if hasCost || m[string(metrics.KeyJudgeCostTotal)] != nil {
						t.Errorf("step %d: cost keys without a price: %v", i+1, m[string(metrics.KeyJudgeCost)])
					}
				} else {
					want := (m[string(metrics.KeyJudgePromptTokens)].(float64)*tt.price[0] + m[string(metrics.KeyJudgeCompletionTokens)].(float64)*tt.price[1]) / 1e6
					costTotal += want
					if math.Abs(cost-want) > 1e-12 || math.Abs(m[string(metrics.KeyJudgeCostTotal)].(float64)-costTotal) > 1e-12 {
						t.Errorf("step %d: cost %v total %v, want %v and %v", i+1, cost, m[string(metrics.KeyJudgeCostTotal)], want, costTotal)
					}
				}
				fp := sim.DefaultFingerprint
				if tt.refingerS > 0 && i+1 > tt.refingerS {
					fp = "fp_sim1"
				}
				var backends []string
				for _, b := range m[string(metrics.KeyJudgeBackends)].([]any) {
					backends = append(backends, b.(string))
				}
				if want := []string{"gpt-judge " + fp}; !slices.Equal(backends, want) {
					t.Errorf("step %d: backends %v, want %v", i+1, backends, want)
				}
				changes := 0.0
				if tt.refingerS > 0 && i+1 == tt.refingerS+1 {
					changes = 1
				}
				if got := m[string(metrics.KeyJudgeBackendChanges)]; got != changes {
					t.Errorf("step %d: backend changes %v, want %v", i+1, got, changes)
				}
			}
			st := js.Stats()
			for _, c := range []struct {
				key  metrics.Key
				want int64
			}{
				{metrics.KeyJudgeAttempts, st.Requests[sim.PathChat]},
				{metrics.KeyJudge429, st.Faults[sim.FaultRateLimit]},
				{metrics.KeyJudgeRetries, st.Faults[sim.FaultRateLimit]}, // a 429 is the only reason to retry here
				{metrics.KeyJudgePromptTokens, st.ChatPromptTokens},
				{metrics.KeyJudgeCompletionTokens, st.ChatCompletionTokens},
				{metrics.KeyJudgeCachedTokens, st.ChatCachedTokens},
				{metrics.KeyJudgeCalls, st.Requests[sim.PathChat] - st.Faults[sim.FaultRateLimit]},
				{metrics.KeyJudgeCallsFailed, 0},
			} {
				if sum[c.key] != float64(c.want) {
					t.Errorf("%s summed over the steps = %v, the judge served %d", c.key, sum[c.key], c.want)
				}
			}
			if tt.judge.RateLimitRate > 0 && sum[metrics.KeyJudge429] == 0 {
				t.Errorf("no 429 counted at a rate-limit rate of %v", tt.judge.RateLimitRate)
			}
			warned := logs.FilterMessageSnippet("the judge changed under the run").Len()
			if want := min(tt.refingerS, 1); warned != want {
				t.Errorf("%d warnings that the judge changed, want %d", warned, want)
			}
		})
	}
}

// TestRescoreJudgeAPI: parley score's summary (score-summary.json) says
// what a CA judge on serve-sim was asked and paid: one call per rollout,
// the tokens serve-sim served, their cost at the price; a rule judge's
// has none.
func TestRescoreJudgeAPI(t *testing.T) {
	run := dataset.RunDir(t.TempDir())
	if _, err := trained(t, run, simURL(t), 1, 1); err != nil {
		t.Fatal(err)
	}
	rs, err := dataset.ReadAllRollouts(run.RolloutsPath(1))
	if err != nil {
		t.Fatal(err)
	}
	rule, err := reward.NewRuleJudge(reward.RuleOptions{Kind: "agreement"})
	if err != nil {
		t.Fatal(err)
	}
	js, _ := sim.New(sim.Options{})
	jts := httptest.NewServer(js.Handler())
	defer jts.Close()
	c, err := chat.New(chat.Options{BaseURL: jts.URL + "/v1", Model: "gpt-judge", Retry: retry.Policy{BackoffBase: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	price := func(p, c int64) float64 { return (float64(p)*0.15 + float64(c)*0.6) / 1e6 }
	tests := []struct {
		name  string
		judge reward.Judge
		api   bool
	}{
		{"CA judge", reward.NewCAJudge(c), true},
		{"rule judge", rule, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sum, err := train.Rescore(context.Background(), train.RescoreOptions{
				In: run.RolloutsPath(1), Out: dataset.RunDir(t.TempDir()), Step: -1, PolicyVersion: -1, Judge: tt.judge, JudgeCost: price,
				Score: train.ScoreOptions{Advantage: grpo.AdvantageOptions{Mode: "group", KeepZeroVariance: true}, Mask: "dialogue", JudgeConcurrency: 4},
			})
			if err != nil {
				t.Fatal(err)
			}
			if !tt.api {
				if sum.JudgeAPI != nil {
					t.Errorf("JudgeAPI = %v, want none for a rule judge", sum.JudgeAPI)
				}
				return
			}
			st := js.Stats()
			api := sum.JudgeAPI
			cost := price(st.ChatPromptTokens, st.ChatCompletionTokens)
			if api["judge/calls"] != int64(len(rs)) || api["judge/prompt_tokens"] != st.ChatPromptTokens ||
				api["judge/completion_tokens"] != st.ChatCompletionTokens || api["judge/cost_usd"] != cost || st.Requests[sim.PathChat] != int64(len(rs)) {
				t.Errorf("JudgeAPI = %v; want %d calls, %d prompt and %d completion tokens, cost %v (serve-sim served %d requests)",
					api, len(rs), st.ChatPromptTokens, st.ChatCompletionTokens, cost, st.Requests[sim.PathChat])
			}
		})
	}
}
