// Package viewtest writes synthetic training runs for parley view's tests
// and benchmarks: a run directory of S steps × R rollouts in the formats a
// real run has, written with the project's own writers (config.yaml from
// config.Config.YAML, state.json by train.SaveState, each step's
// rollouts/step-N.parquet, its sidecar, batches/step-N.parquet and its
// .ready marker by train.WriteStep from rollouts whose advantages
// grpo.ComputeAdvantages computed and whose batch grpo.BuildBatch built,
// and metrics.jsonl by train.AppendMetrics with the keys of package
// metrics).
//
// The rollouts are seed 000's deliberation game: a persona pair, four
// turns of 100–200 tokens (A, B, A, B), a final completion, a CA judge's
// score (1–5) and rationale, a reward and advantage per role, groups of 8.
// Their words, and so their tokens, are drawn from a short corpus, so that
// a 1,900 × 256 run fits in a few GB (zstd finds the repeats); the sizes of
// every list and string are a real run's. Everything is seeded: the same
// Spec writes the same files.
//
// Cached keeps one generated run per Spec under PARLEY_VIEW_BENCH_DIR
// (default: os.TempDir()/parley-view-bench) for the benchmarks, reused
// when its completion marker is there.
package viewtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/parleyhq/parley/config"
	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/grpo"
	"github.com/parleyhq/parley/metrics"
	"github.com/parleyhq/parley/train"
)

// Spec is the shape of a synthetic run.
type Spec struct {
	// Steps is S, the steps written (1…S).
	Steps int
	// Rollouts is R, the rollouts per step: R/GroupSize groups.
	Rollouts int
	// GroupSize is the rollouts per group; 0 means 8.
	GroupSize int
	// Seed seeds every draw; the same Spec writes the same files.
	Seed int64
	// EvalEvery writes an evaluation line to metrics.jsonl every that many
	// steps; 0 means 50.
	EvalEvery int
}

// Large is the run: 1,900 steps × 256 rollouts (32 groups of 8).
var Large = Spec{Steps: 1900, Rollouts: 256, Seed: 1}

// Shape of a rollout: four turns (two rounds) of 100–200 tokens, a final
// completion of 150–250.
const (
	turnsPerRollout = 4
	minTurnTokens   = 100
	maxTurnTokens   = 200
	minFinalTokens  = 150
	maxFinalTokens  = 250
	// corpusTokens is the length of the word stream every text is cut
	// from: short, so that a parquet page (256 KiB) repeats it.
	corpusTokens = 8192
	// generatorVersion names the cache folder; bump it when the output
	// changes, so that an old cache is not reused.
	generatorVersion = 1
	runID            = "view-bench"
	env              = "deliberation"
	policyModel      = "Qwen/Qwen3-14B"
	judgeModel       = "gpt-4o-mini"
)

// Special token ids, as Qwen3's tokenizer numbers them.
const (
	tokIMStart  = 151644
	tokIMEnd    = 151645
	tokNewline  = 198
	tokSystem   = 8948
	tokUser     = 872
	tokAssist   = 77091
	tokWordBase = 1000 // word w of the vocabulary is token tokWordBase+w
)

func (s Spec) withDefaults() (Spec, error) {
	if s.GroupSize == 0 {
		s.GroupSize = 8
	}
	if s.EvalEvery == 0 {
		s.EvalEvery = 50
	}
	if s.Steps < 1 || s.Rollouts < 1 || s.GroupSize < 1 || s.Rollouts%s.GroupSize != 0 {
		return s, fmt.Errorf("viewtest: spec %d steps × %d rollouts in groups of %d: want steps ≥ 1 and rollouts a positive multiple of the group size", s.Steps, s.Rollouts, s.GroupSize)
	}
	return s, nil
}

// Name is the spec as a folder name: run-S1900-R256-G8-seed1-v1.
func (s Spec) Name() string {
	s, _ = s.withDefaults()
	return fmt.Sprintf("run-S%d-R%d-G%d-seed%d-v%d", s.Steps, s.Rollouts, s.GroupSize, s.Seed, generatorVersion)
}

// GroupID is the ID of group g (from 0) of step, as the training loop
// names it.
func GroupID(step, g int) string { return fmt.Sprintf("s%06d-g%05d", step, g) }

// RolloutID is the ID of rollout i (from 0) of group g of step.
func RolloutID(step, g, i int) string { return fmt.Sprintf("%s-%03d", GroupID(step, g), i) }

// Write writes the run of spec into dir (created; it must not hold a run
// already). Steps are written by runtime.GOMAXPROCS(0) workers.
func Write(dir string, spec Spec) error {
	spec, err := spec.withDefaults()
	if err != nil {
		return err
	}
	d := dataset.RunDir(dir)
	if files, err := d.Files(); err != nil {
		return fmt.Errorf("viewtest.Write: %w", err)
	} else if len(files) > 0 {
		return fmt.Errorf("viewtest.Write: %s already holds a run (%s)", dir, strings.Join(files, ", "))
	}
	if err := d.Create(); err != nil {
		return fmt.Errorf("viewtest.Write: %w", err)
	}
	cfg := config.Default()
	cfg.Run.Name, cfg.Run.Dir, cfg.Run.Seed = runID, filepath.Dir(dir), spec.Seed
	cfg.Policy.Model = policyModel
	cfg.Rollout.GroupSize, cfg.Rollout.PromptsPerStep = spec.GroupSize, spec.Rollouts/spec.GroupSize
	cfg.Train.Steps, cfg.Train.EvalEvery = spec.Steps, spec.EvalEvery
	cfg.GRPO.Mask = string(grpo.MaskDialogueFinal)
	cfg.Sampling.MaxTokens, cfg.Sampling.FinalMaxTokens = maxTurnTokens, maxFinalTokens
	frozen, err := cfg.YAML()
	if err != nil {
		return fmt.Errorf("viewtest.Write: %w", err)
	}
	if err := os.WriteFile(d.ConfigPath(), frozen, 0o644); err != nil {
		return fmt.Errorf("viewtest.Write: %w", err)
	}
	g := newGen(spec, cfg.ScoreScale())
	lines := make([]metrics.Line, spec.Steps+1)
	steps := make(chan int)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for step := range steps {
				line, err := g.writeStep(d, step)
				if err != nil {
					select {
					case errs <- err:
					default:
					}
					continue
				}
				lines[step] = line
			}
		})
	}
	for step := 1; step <= spec.Steps; step++ {
		steps <- step
	}
	close(steps)
	wg.Wait()
	select {
	case err := <-errs:
		return fmt.Errorf("viewtest.Write: %w", err)
	default:
	}
	if err := writeMetrics(d, spec, lines[1:]); err != nil {
		return fmt.Errorf("viewtest.Write: %w", err)
	}
	st := train.State{RunID: runID, Step: spec.Steps, PolicyVersion: spec.Steps, Seed: spec.Seed,
		Adapter: fmt.Sprintf("parley-5eed5eed-%06d", spec.Steps), Nonce: "5eed5eed", UpdatedUnixMS: startMS + int64(spec.Steps)*stepMS}
	if err := train.SaveState(d.StatePath(), st); err != nil {
		return fmt.Errorf("viewtest.Write: %w", err)
	}
	return nil
}

// The run's clock: it starts at startMS and a step takes stepMS.
const (
	startMS = 1_796_000_000_000
	stepMS  = 95_000
)

// writeMetrics writes metrics.jsonl: the step lines in order, and an
// evaluation line after every EvalEvery-th step, as the loop appends them.
// One file write (AppendMetrics's encoding, without its fsync per line).
func writeMetrics(d dataset.RunDir, spec Spec, lines []metrics.Line) error {
	var b strings.Builder
	for i, l := range lines {
		enc, err := json.Marshal(l)
		if err != nil {
			return err
		}
		b.Write(enc)
		b.WriteByte('\n')
		if step := i + 1; step%spec.EvalEvery == 0 {
			enc, err := json.Marshal(evalLine(spec, step))
			if err != nil {
				return err
			}
			b.Write(enc)
			b.WriteByte('\n')
		}
	}
	return os.WriteFile(d.MetricsPath(), []byte(b.String()), 0o644)
}

// progress is how far through the run step is, 0 to 1: the scores, the
// agreement and the win rate rise with it.
func progress(spec Spec, step int) float64 {
	if spec.Steps == 1 {
		return 1
	}
	return float64(step-1) / float64(spec.Steps-1)
}

// evalLine is the held-out evaluation of step's adapter.
func evalLine(spec Spec, step int) metrics.Line {
	p := progress(spec, step)
	rng := rand.New(rand.NewPCG(uint64(spec.Seed), uint64(step)<<1|1))
	const prompts = 40
	wins := int(math.Round(float64(prompts*2) * (0.45 + 0.3*p + 0.05*rng.NormFloat64())))
	wins = max(0, min(prompts*2, wins))
	ties := min(prompts*2-wins, rng.IntN(6))
	losses := prompts*2 - wins - ties
	return metrics.Line{
		metrics.KeyStep: step, metrics.KeyKind: metrics.EvalKind,
		metrics.KeyEvalWinRate:           100 * (float64(wins) + 0.5*float64(ties)) / float64(prompts*2),
		metrics.KeyEvalWins:              wins,
		metrics.KeyEvalTies:              ties,
		metrics.KeyEvalLosses:            losses,
		metrics.KeyEvalScoreMean:         2.6 + 1.4*p + 0.1*rng.NormFloat64(),
		metrics.KeyEvalBaseScoreMean:     2.6 + 0.1*rng.NormFloat64(),
		metrics.KeyEvalAgreementRate:     0.3 + 0.5*p,
		metrics.KeyEvalBaseAgreementRate: 0.3,
		metrics.KeyEvalRoundsToAgreement: 2 - 0.5*p, metrics.KeyEvalBaseRoundsToAgreement: 2.0,
		metrics.KeyEvalExcluded: 0, metrics.KeyEvalPrompts: prompts, metrics.KeyEvalSeconds: 40 + 5*rng.Float64(),
	}
}

// gen holds what every step draws from: the vocabulary, the corpus, the
// prompts and the persona pairs.
type gen struct {
	spec      Spec
	scale     dataset.ScoreScale
	words     []string
	corpus    []int32   // word indices
	logprobs  []float32 // the sampling logprob of each corpus position
	tasks     [][]int32 // a prompt's task, as word indices
	pairs     []dataset.PersonaPair
	pairWords [][2][]int32 // a pair's personas A and B, as word indices
	sysFinal  []int32
}

func newGen(spec Spec, scale dataset.ScoreScale) *gen {
	rng := rand.New(rand.NewPCG(uint64(spec.Seed), 0x5eed))
	g := &gen{spec: spec, scale: scale}
	syll := []string{"ka", "lo", "mi", "ne", "ra", "to", "su", "vi", "de", "ba", "po", "li", "an", "or", "el", "un"}
	for i := range 1024 {
		n := 1 + i%3
		var w strings.Builder
		for k := range n {
			w.WriteString(syll[(i*7+k*5+i/16)%len(syll)])
		}
		g.words = append(g.words, w.String()+strconv.Itoa(i%10))
	}
	// A Zipf-like draw: a few words are common, most are rare.
	zipf := rand.NewZipf(rng, 1.2, 4, uint64(len(g.words)-1))
	g.corpus = make([]int32, corpusTokens)
	g.logprobs = make([]float32, corpusTokens)
	for i := range g.corpus {
		g.corpus[i] = int32(zipf.Uint64())
		g.logprobs[i] = -float32(math.Round(rng.ExpFloat64()*1.5*64) / 64)
	}
	for range 64 {
		g.tasks = append(g.tasks, g.cut(rng, 24+rng.IntN(24)))
	}
	for i := range 25 {
		a, b := g.cut(rng, 20), g.cut(rng, 20)
		g.pairWords = append(g.pairWords, [2][]int32{a, b})
		g.pairs = append(g.pairs, dataset.PersonaPair{
			ID: fmt.Sprintf("p%02d", i), A: g.text(a), B: g.text(b),
			NameA: g.words[rng.IntN(len(g.words))], NameB: g.words[rng.IntN(len(g.words))],
		})
	}
	g.sysFinal = g.cut(rng, 60)
	return g
}

// cut is n words of the corpus from a random offset, wrapping around.
func (g *gen) cut(rng *rand.Rand, n int) []int32 {
	off := rng.IntN(len(g.corpus))
	out := make([]int32, n)
	for i := range out {
		out[i] = g.corpus[(off+i)%len(g.corpus)]
	}
	return out
}

// text renders word indices as words.
func (g *gen) text(ws []int32) string {
	var b strings.Builder
	for i, w := range ws {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(g.words[w])
	}
	return b.String()
}

// seq builds one training sequence a piece at a time.
type seq struct {
	s       dataset.Sequence
	version int32
}

// prompt appends tokens the model did not sample (mask 0, logprob 0).
func (q *seq) prompt(ids ...int32) {
	for _, id := range ids {
		q.s.InputIDs = append(q.s.InputIDs, id)
		q.s.LossMask = append(q.s.LossMask, 0)
		q.s.Logprobs = append(q.s.Logprobs, 0)
		q.s.Versions = append(q.s.Versions, q.version)
	}
}

// sampled appends tokens the model sampled, with their logprobs.
func (q *seq) sampled(ids []int32, lps []float32) {
	q.s.InputIDs = append(q.s.InputIDs, ids...)
	for i := range ids {
		q.s.LossMask = append(q.s.LossMask, 1)
		q.s.Logprobs = append(q.s.Logprobs, lps[i])
		q.s.Versions = append(q.s.Versions, q.version)
	}
}

// message appends a rendered message: <|im_start|>role\n text <|im_end|>\n.
func (q *seq) message(role int32, text []int32) {
	q.prompt(tokIMStart, role, tokNewline)
	q.prompt(text...)
	q.prompt(tokIMEnd, tokNewline)
}

// sampledTurn is one turn's words and their logprobs, the stop token
// last.
type sampledTurn struct {
	words []int32
	ids   []int32
	lps   []float32
}

func (g *gen) turn(rng *rand.Rand, n int) sampledTurn {
	off := rng.IntN(len(g.corpus))
	t := sampledTurn{words: make([]int32, n), ids: make([]int32, n+1), lps: make([]float32, n+1)}
	for i := range n {
		t.words[i] = g.corpus[(off+i)%len(g.corpus)]
		t.ids[i] = tokWordBase + t.words[i]
		t.lps[i] = g.logprobs[(off+i)%len(g.logprobs)]
	}
	t.ids[n], t.lps[n] = tokIMEnd, -0.015625
	return t
}

// rollout draws rollout i of group gi of step, unscored.
func (g *gen) rollout(rng *rand.Rand, step, gi, i, prompt, pair int) dataset.Rollout {
	pv := int32(step - 1)
	p := progress(g.spec, step)
	task := g.tasks[prompt]
	r := dataset.Rollout{
		RunID: runID, Step: int32(step), PolicyVersion: pv, Env: env,
		PromptID: fmt.Sprintf("d%03d", prompt), GroupID: GroupID(step, gi), RolloutID: RolloutID(step, gi, i),
		Index: int32(i), Category: dataset.DilemmaCategories[prompt%len(dataset.DilemmaCategories)], Split: dataset.SplitTrain,
		Task: g.text(task), PersonaPairID: g.pairs[pair].ID, Personas: g.pairs[pair].Personas(),
		Seed: int64(rng.Uint32()), Temperature: 1,
	}
	sys := map[string][]int32{}
	for k, role := range []string{"A", "B"} {
		ws := append(append(append([]int32{}, task...), g.pairWords[pair][k]...), g.sysFinal...)
		sys[role] = ws
		r.SystemPrompts = append(r.SystemPrompts, dataset.SystemPrompt{Role: role, Text: g.text(ws)})
	}
	r.SystemPrompts = append(r.SystemPrompts, dataset.SystemPrompt{Role: "final", Text: g.text(g.sysFinal)})

	seqs := map[string]*seq{"A": {version: pv}, "B": {version: pv}}
	for _, role := range []string{"A", "B"} {
		q := seqs[role]
		q.s.Role, q.s.Kind = role, dataset.KindDialogue
		q.message(tokSystem, sys[role])
	}
	seqs["A"].message(tokUser, task)
	seqs["A"].prompt(tokIMStart, tokAssist, tokNewline)
	// Both agents agree in the last round, more often as training goes.
	agreed := rng.Float64() < 0.25+0.6*p
	var turns []sampledTurn
	for k := range turnsPerRollout {
		speaker, other := "A", "B"
		if k%2 == 1 {
			speaker, other = "B", "A"
		}
		t := g.turn(rng, minTurnTokens+rng.IntN(maxTurnTokens-minTurnTokens+1))
		turns = append(turns, t)
		seqs[speaker].sampled(t.ids, t.lps)
		// The bridge to the other agent's next turn: the \n after its
		// stop token, this turn as a user message, the generation prompt.
		if k < turnsPerRollout-1 {
			q := seqs[other]
			if k > 0 {
				q.prompt(tokNewline)
			}
			if k == 0 {
				q.message(tokUser, append(append([]int32{}, task...), t.words...))
			} else {
				q.message(tokUser, t.words)
			}
			q.prompt(tokIMStart, tokAssist, tokNewline)
		}
		r.Turns = append(r.Turns, dataset.Turn{Agent: speaker, Text: g.text(t.words), Tokens: int32(len(t.ids)),
			FinishReason: "stop", Agree: agreed && k >= turnsPerRollout-2, WeightVersion: pv})
		r.SampledTokens += int32(len(t.ids))
	}
	r.Agreed = agreed
	r.Rounds = turnsPerRollout / 2

	fin := &seq{version: pv}
	fin.s.Role, fin.s.Kind = "final", dataset.KindFinal
	fin.message(tokSystem, g.sysFinal)
	var dialogue []int32
	dialogue = append(dialogue, task...)
	for _, t := range turns {
		dialogue = append(dialogue, t.words...)
	}
	fin.message(tokUser, dialogue)
	fin.prompt(tokIMStart, tokAssist, tokNewline)
	ft := g.turn(rng, minFinalTokens+rng.IntN(maxFinalTokens-minFinalTokens+1))
	fin.sampled(ft.ids, ft.lps)
	r.Final = g.text(ft.words)
	r.Turns = append(r.Turns, dataset.Turn{Agent: "final", Text: r.Final, Tokens: int32(len(ft.ids)), FinishReason: "stop", WeightVersion: pv})
	r.SampledTokens += int32(len(ft.ids))
	r.Sequences = []dataset.Sequence{seqs["A"].s, seqs["B"].s, fin.s}
	for _, s := range r.Sequences {
		r.PromptTokens += int32(len(s.InputIDs))
	}
	r.PromptTokens -= r.SampledTokens
	r.Requests = turnsPerRollout + 1

	// The judge: a CA score of 1–5 that rises with training, and a
	// rationale of two or three sentences.
	score := math.Round(2 + 2*p + 0.9*rng.NormFloat64())
	score = max(1, min(5, score))
	r.Judged, r.JudgeModel, r.Score = true, judgeModel, float32(score)
	r.JudgeRationale = fmt.Sprintf("Score %d: %s. %s.", int(score), g.text(g.cut(rng, 25)), g.text(g.cut(rng, 20)))
	for _, role := range []string{"A", "B", "final"} {
		r.Roles = append(r.Roles, dataset.RoleOutcome{Role: role, Policy: dataset.PolicyTrained, Model: policyModel,
			Trained: true, Scored: true, Score: float32(score), Reward: float32(score)})
	}
	r.StartedUnixMS = startMS + int64(step-1)*stepMS + int64(rng.IntN(20_000))
	r.RolloutMS = 20_000 + int64(rng.IntN(40_000))
	r.JudgeMS = 800 + int64(rng.IntN(2_000))
	return r
}

// writeStep draws step's rollouts, scores them, and writes the step's
// files; it returns the step's metrics line.
func (g *gen) writeStep(d dataset.RunDir, step int) (metrics.Line, error) {
	spec := g.spec
	rng := rand.New(rand.NewPCG(uint64(spec.Seed), uint64(step)<<1))
	groups := spec.Rollouts / spec.GroupSize
	rs := make([]dataset.Rollout, 0, spec.Rollouts)
	for gi := range groups {
		prompt := rng.IntN(len(g.tasks))
		pair := rng.IntN(len(g.pairs))
		for i := range spec.GroupSize {
			rs = append(rs, g.rollout(rng, step, gi, i, prompt, pair))
		}
	}
	kept, adv, err := grpo.ComputeAdvantages(rs, grpo.AdvantageOptions{Mode: grpo.ModeGroup, KeepZeroVariance: true}, nil)
	if err != nil {
		return nil, err
	}
	rows, bs, err := grpo.BuildBatch(kept, grpo.BatchOptions{RunID: runID, Step: step, PolicyVersion: step - 1, Mask: string(grpo.MaskDialogueFinal)})
	if err != nil {
		return nil, err
	}
	line := g.stepLine(rng, step, rs, adv, bs)
	sidecar, err := json.Marshal(map[string]any{"metrics": line})
	if err != nil {
		return nil, err
	}
	if _, err := train.WriteStep(d, step, step-1, rs, rows, g.scale, sidecar, nil); err != nil {
		return nil, err
	}
	return line, nil
}

// stepLine is the step's metrics line: the keys the loop writes for a
// deliberation run judged by an LLM, with a trainer's DONE metrics.
func (g *gen) stepLine(rng *rand.Rand, step int, rs []dataset.Rollout, adv grpo.AdvantageStats, bs grpo.BatchStats) metrics.Line {
	p := progress(g.spec, step)
	var agreed, rounds, prompt, sampled, seqs int
	for _, r := range rs {
		if r.Agreed {
			agreed++
			rounds += int(r.Rounds)
		}
		prompt += int(r.PromptTokens)
		sampled += int(r.SampledTokens)
		seqs += len(r.Sequences)
	}
	n := len(rs)
	groups := n / g.spec.GroupSize
	l := metrics.Line{
		metrics.KeyStep: step, metrics.KeyPolicyVersion: step - 1, metrics.KeyPolicyVersionMax: step - 1,
		metrics.KeyScoreMin: adv.ScoreMin, metrics.KeyScoreMean: adv.ScoreMean, metrics.KeyScoreMax: adv.ScoreMax,
		metrics.KeyRewardMean: adv.RewardMean, metrics.KeyRewardStd: adv.RewardStd,
		metrics.KeyAgreementRate: float64(agreed) / float64(n), metrics.KeyMeanRounds: float64(turnsPerRollout / 2),
		metrics.KeyRollouts: n, metrics.KeyRolloutsFailed: 0, metrics.KeyJudgeFailed: 0, metrics.KeyJudgeCached: 0,
		metrics.KeyGroups: groups, metrics.KeyGroupsDroppedZeroVariance: adv.ZeroVarianceGroups,
		metrics.KeyGroupsSampled: groups, metrics.KeyGroupsInformative: groups - adv.ZeroVarianceGroups,
		metrics.KeyGroupsTrained: groups, metrics.KeyOversampleRatio: 1,
		metrics.KeyGroupsCancelledStale: 0, metrics.KeyGroupsDroppedStale: 0, metrics.KeyGroupsResumed: 0,
		metrics.KeyPromptTokens: prompt, metrics.KeySampledTokens: sampled, metrics.KeyPrefixBreaks: 0,
		metrics.KeySequencesPerRollout: float64(seqs) / float64(n), metrics.KeyPromptTokensSent: prompt * 2,
		metrics.KeyTrainerTokensPerSampledToken: float64(bs.Tokens) / float64(sampled), metrics.KeyClosedTurns: n * turnsPerRollout,
		metrics.KeyBatchRows: bs.Rows, metrics.KeyBatchTokens: bs.Tokens, metrics.KeyTrainedTokens: bs.TrainedTokens,
		metrics.KeySampleSeconds: 60 + 20*rng.Float64(), metrics.KeyJudgeSeconds: 4 + 2*rng.Float64(),
		metrics.KeyWaitTrainerSeconds: 10 + 5*rng.Float64(),
		metrics.KeyPrefixCacheHitRate: 0.75 + 0.1*rng.Float64(), metrics.KeyEndpointLoadMax: n * 5 / 4,
		metrics.KeyEndpointLoadMean: float64(n*5) / 4, metrics.KeySessionMoves: rng.IntN(3),
		metrics.KeyEndpointInFlightMean: 200 + 40*rng.Float64(), metrics.KeyEndpointAtTargetShare: 0.6 + 0.2*rng.Float64(),
		metrics.KeyServerRunningMean: 180 + 40*rng.Float64(), metrics.KeyServerRunningMin: rng.IntN(20),
		metrics.KeyServerRunningSamples: 30 + rng.IntN(10), metrics.KeyEndpointsLost: 0,
		metrics.KeyStalenessMean: 0, metrics.KeyStalenessMax: 0, metrics.KeyOffPolicyFraction: 0,
	}
	if agreed > 0 {
		l[metrics.KeyRoundsToAgreement] = float64(rounds) / float64(agreed)
	}
	// The judge's API.
	calls := n
	l[metrics.KeyJudgeCalls], l[metrics.KeyJudgeCallsFailed], l[metrics.KeyJudgeCacheHits] = calls, 0, 0
	l[metrics.KeyJudgeAttempts], l[metrics.KeyJudgeRetries], l[metrics.KeyJudge429] = calls+rng.IntN(4), rng.IntN(4), rng.IntN(2)
	l[metrics.KeyJudgePromptTokens], l[metrics.KeyJudgeCompletionTokens] = calls*1400, calls*90
	l[metrics.KeyJudgeCachedTokens], l[metrics.KeyJudgeCachedShare] = calls*900, 900.0/1400
	l[metrics.KeyJudgeLatencyP50], l[metrics.KeyJudgeLatencyP95] = 0.9+0.2*rng.Float64(), 2.1+0.6*rng.Float64()
	l[metrics.KeyJudgeBackends], l[metrics.KeyJudgeBackendChanges] = []string{"gpt-4o-mini-2024-07-18 fp_0aa8d3e20b"}, 0
	l[metrics.KeyJudgeCorrLength], l[metrics.KeyJudgeCorrPersonaEcho], l[metrics.KeyJudgeCorrAgreement] =
		0.1*rng.NormFloat64(), 0.05*rng.NormFloat64(), 0.2+0.1*rng.NormFloat64()
	// The trainer's DONE.
	tr := func(name string, v any) { l[metrics.TrainerPrefix+metrics.Key(name)] = v }
	tr("loss", 0.02*rng.NormFloat64())
	tr("approx_kl", 0.001+0.002*p*rng.Float64())
	tr("entropy", 1.2-0.4*p+0.05*rng.NormFloat64())
	tr("grad_norm", 0.3+0.1*rng.Float64())
	tr("grad_norm_max", 0.5+0.2*rng.Float64())
	tr("clip_frac", 0.01*rng.Float64())
	tr("clip_frac_high", 0.005*rng.Float64())
	tr("clip_frac_low", 0.005*rng.Float64())
	tr("advantage_mean", 0.01*rng.NormFloat64())
	tr("logprob_mean", -0.9+0.3*p)
	tr("lr", 1e-5)
	tr("masked_tokens", bs.TrainedTokens)
	tr("mismatch_k3_kl", 1e-4*rng.Float64())
	tr("mismatch_logprob_abs_mean", 0.01*rng.Float64())
	tr("mismatch_logprob_abs_max", 0.5*rng.Float64())
	tr("off_policy_token_frac", 0)
	tr("optimizer_steps", 4)
	tr("ratio_mean", 1+0.001*rng.NormFloat64())
	tr("reward_mean", adv.RewardMean)
	tr("sequences", bs.Rows)
	tr("staleness_max", 0)
	tr("staleness_mean", 0)
	tr("tokens", bs.Tokens)
	tr("tokens_per_second", 9000+1000*rng.Float64())
	tr("train_seconds", 60+10*rng.Float64())
	return l
}

// Generated is what Cached found or made.
type Generated struct {
	Spec Spec `json:"spec"`
	// Dir is the run directory.
	Dir string `json:"dir"`
	// Seconds is how long Write took, Bytes what the run takes on disk
	// (the blocks its files hold).
	Seconds float64 `json:"seconds"`
	Bytes   int64   `json:"bytes"`
	Files   int     `json:"files"`
}

// CacheDirEnv names the folder Cached keeps its runs in.
const CacheDirEnv = "PARLEY_VIEW_BENCH_DIR"

// Cached returns the run of spec under $PARLEY_VIEW_BENCH_DIR (default
// os.TempDir()/parley-view-bench), writing it first unless a complete one
// is there: its marker, <name>.complete beside the run, is written last.
// It logs the generation time and the size on disk.
func Cached(tb testing.TB, spec Spec) Generated {
	tb.Helper()
	spec, err := spec.withDefaults()
	if err != nil {
		tb.Fatal(err)
	}
	base := os.Getenv(CacheDirEnv)
	if base == "" {
		base = filepath.Join(os.TempDir(), "parley-view-bench")
	}
	dir := filepath.Join(base, spec.Name())
	marker := dir + ".complete"
	if b, err := os.ReadFile(marker); err == nil {
		var g Generated
		if err := json.Unmarshal(b, &g); err == nil && g.Dir == dir {
			tb.Logf("viewtest: reusing %s (%d steps × %d rollouts, generated in %.1f s, %.2f GB on disk, %d files)",
				dir, spec.Steps, spec.Rollouts, g.Seconds, float64(g.Bytes)/1e9, g.Files)
			return g
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		tb.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		tb.Fatal(err)
	}
	tb.Logf("viewtest: writing %s (%d steps × %d rollouts) …", dir, spec.Steps, spec.Rollouts)
	start := time.Now()
	if err := Write(dir, spec); err != nil {
		tb.Fatal(err)
	}
	g := Generated{Spec: spec, Dir: dir, Seconds: time.Since(start).Seconds()}
	g.Bytes, g.Files, err = DiskUsage(dir)
	if err != nil {
		tb.Fatal(err)
	}
	b, err := json.MarshalIndent(g, "", "  ")
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(marker, append(b, '\n'), 0o644); err != nil {
		tb.Fatal(err)
	}
	tb.Logf("viewtest: wrote %s in %.1f s: %.2f GB on disk, %d files", dir, g.Seconds, float64(g.Bytes)/1e9, g.Files)
	return g
}

// DiskUsage is the bytes the files under dir take on disk (their blocks,
// as du counts them) and how many files there are.
func DiskUsage(dir string) (int64, int, error) {
	var bytes int64
	files := 0
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		files++
		bytes += diskBytes(info)
		return nil
	})
	return bytes, files, err
}

// diskBytes is the bytes a file's blocks take.
func diskBytes(info fs.FileInfo) int64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return info.Size()
}
