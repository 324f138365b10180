package main

import (
	"github.com/parleyhq/parley/app"
	"github.com/parleyhq/parley/internal/command"
	"github.com/parleyhq/parley/sim"
	"github.com/spf13/cobra"
	"strings"
)

func newServeSimCmd(a *cli) *cobra.Command {
	var o sim.Options
	var addr, apiKeyEnv string
	var gameOptions []string
	gameFlags := command.SimFlags() // the games' own flags (seed 001's --ledger-mode)
	gameFlagValues := make([]string, len(gameFlags))
	cmd := &cobra.Command{
		Use:   "serve-sim",
		Short: "Serve a SIMULATED vLLM policy server and judge (scripted persona agents, deterministic tokenizer, fault injection) for tests and dry runs",
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := a.logger(nil)
			if err != nil {
				return err
			}
			var given []string // before --game-option, which wins
			for i, gf := range gameFlags {
				if cmd.Flags().Changed(gf.Name) {
					given = append(given, gf.GameOption(gameFlagValues[i]))
				}
			}
			gameOptions = append(given, gameOptions...)
			return app.ServeSim(cmd.Context(), a.env(cmd, log), o, app.ServeSimOptions{Addr: addr, APIKeyEnv: apiKeyEnv, GameOptions: gameOptions})
		},
	}
	f := cmd.Flags()
	f.StringVar(&addr, "addr", "127.0.0.1:8000", "listen address")
	f.StringVar(&apiKeyEnv, "api-key-env", "", "environment variable holding a bearer key to require (like vLLM --api-key)")
	f.StringVar(&o.Model, "model", sim.DefaultModel, "served model name")
	f.StringVar(&o.JudgeModel, "judge-model", sim.DefaultJudgeModel, "judge model name")
	f.IntVar(&o.MaxModelLen, "max-model-len", sim.DefaultMaxModelLen, "context length reported by /tokenize")
	f.Float64Var(&o.AgreeProb, "agree-prob", sim.DefaultAgreeProb, "probability a scripted agent agrees on a turn (negative: never)")
	f.StringVar(&o.Tokenizer, "tokenizer", "", "a served model's tokenizer.json or model folder (byte-level BPE): answer in that model's token ids, so a trainer on it can train on them (default: the built-in vocabulary, Qwen's special ids)")
	f.StringVar(&o.Template, "template", sim.TemplateChatML, "chat template: chatml, or qwen3 (exactly Qwen3's: enable_thinking, history think stripped, reasoning_content; re-renders break the prefix)")
	f.IntVar(&o.EngineDiesAfter, "engine-dies-after", 0, "kill the simulated engine after N completions, as vLLM's dead engine (500 EngineCore, /health 503; 0: never)")
	f.BoolVar(&o.LegacyErrors, "legacy-errors", false, "use the flat {\"object\":\"error\"} error shape")
	f.BoolVar(&o.NoTokenIDs, "no-token-ids", false, "emulate vLLM < 0.10.2: ignore return_token_ids")
	f.IntVar(&o.MaxConcurrent, "max-concurrent", 0, "requests served at once; more wait (0: unlimited)")
	f.IntVar(&o.PrefixCacheBlocks, "prefix-cache-blocks", sim.DefaultPrefixCacheBlocks, "capacity of the prefix-cache model in 16-token blocks, per server, LRU (negative: no prefix cache)")
	f.DurationVar(&o.PrefillTokenLatency, "prefill-token-latency", 0, "extra latency per prompt token not served from the prefix cache")
	f.DurationVar(&o.LatencyMedian, "latency-median", 0, "median request latency (lognormal)")
	f.Float64Var(&o.LatencySigma, "latency-sigma", 0, "lognormal sigma of latency")
	f.Float64Var(&o.TailProb, "latency-tail-prob", 0, "probability of a heavy-tail latency")
	f.Float64Var(&o.TailMult, "latency-tail-mult", sim.DefaultTailMult, "latency multiplier in the tail")
	f.Float64Var(&o.ParetoAlpha, "latency-pareto-alpha", 0, "when positive, multiply each completion's latency by a Pareto draw of this shape (heavy-tailed turn lengths)")
	f.DurationVar(&o.PerTokenLatency, "per-token-latency", 0, "extra latency per generated token")
	f.DurationVar(&o.TokenizeLatency, "tokenize-latency", 0, "latency of /tokenize")
	f.Float64Var(&o.ErrorRate, "error-rate", 0, "fraction of requests answered 500/502/503")
	f.Float64Var(&o.RateLimitRate, "rate-limit-rate", 0, "fraction of requests answered 429 with Retry-After")
	f.DurationVar(&o.RetryAfter, "retry-after", sim.DefaultRetryAfter, "Retry-After of 429s")
	f.Float64Var(&o.HangRate, "hang-rate", 0, "fraction of requests that hang until the client gives up")
	f.DurationVar(&o.HangMax, "hang-max", sim.DefaultHangMax, "longest hang")
	f.Float64Var(&o.DropRate, "drop-rate", 0, "fraction of connections dropped without a response")
	f.Int64Var(&o.FaultSeed, "fault-seed", 0, "seed of the fault draws")
	f.Float64Var(&o.JudgeMalformedRate, "judge-malformed-rate", 0, "fraction of judge replies that are not JSON")
	f.Float64Var(&o.JudgeOutOfRangeRate, "judge-out-of-range-rate", 0, "fraction of judge scores out of range")
	f.Float64Var(&o.JudgeRefusalRate, "judge-refusal-rate", 0, "fraction of judge replies that refuse")
	f.StringVar(&o.JudgeGroupFault, "judge-group-fault", "", "make the group judge answer every group badly: "+strings.Join(sim.GroupFaults, ", "))
	f.BoolVar(&o.JudgeDiverge, "judge-diverge", false, "the judge scores 6 minus its Collective Agency score: an audit judge (judge.audit) that disagrees with a training judge served elsewhere")
	f.Float64Var(&o.AdapterCAGain, "adapter-ca-gain", 0, "each LoRA adapter loaded after the first writes more Collective-Agency sentences by this much (a learner whose reward keeps rising; 0: every adapter alike)")
	f.StringArrayVar(&gameOptions, "game-option", nil, "a game's serve-sim setting, GAME.KEY=VALUE (repeatable), e.g. endowment.ledger_mode=any-number")
	for i, gf := range gameFlags {
		f.StringVar(&gameFlagValues[i], gf.Name, gf.Default, gf.Usage)
	}
	return cmd
}
