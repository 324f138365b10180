// Package report turns a run's metrics and its evaluation results into a
// markdown report with PNG charts: the training dynamics of seed 000
// figure 2 (judge score min/mean/max, labelled by the reward in use;
// agreement rate; rounds to agreement; as running averages) for the
// training set and, where the run logged them, the evaluation set; pairwise win-rate tables in the form of tables 2–3;
// the benchmark table of table 4; and judge agreement as in table 7.
//
// The report reads only files: runs/<name>/metrics.jsonl and evaluation
// result files (PairwiseResult, BenchResult, AgreementResult as JSON).
package report

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/internal/fsutil"
	"github.com/parleyhq/parley/internal/textfile"
	"github.com/parleyhq/parley/metrics"
	"github.com/parleyhq/parley/rollout"
	"go.uber.org/zap"
	"gopkg.in/yaml.v3"
)

// DefaultWindow is the running-average window, in steps, of the paper's
// figures.
const DefaultWindow = 50

// ReportFile is the name of the markdown file written in the output folder.
const ReportFile = "report.md"

// Options configures Generate.
type Options struct {
	RunDir    string   // the run directory holding metrics.jsonl; "" for none
	OutDir    string   // where report.md and the PNGs go (created if missing)
	EvalFiles []string // evaluation result files (see ReadEvalFiles)
	Window    int      // running-average window in steps; 0: DefaultWindow, capped at the run's step count
	WidthPx   int      // chart width; 0: figure.DefaultWidthPx
	HeightPx  int      // chart height; 0: figure.DefaultHeightPx
	Title     string   // report title; "": "Run report: <base name of RunDir>"
	// Scale labels the run's scores (the caller reads it from the run's
	// frozen config.yaml); zero: the scale its first rollouts file records.
	Scale  dataset.ScoreScale
	Logger *zap.Logger // nil: no logging
}

// Generate writes OutDir/report.md and the PNG charts it links. A missing
// metrics.jsonl or metric key is not an error: the chart or table is left
// out and the report says so in its notes. An unreadable evaluation file,
// or two results for the same cell of a table, is an error.
func Generate(opts Options) error {
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	if opts.OutDir == "" {
		return fmt.Errorf("report.Generate: no output directory")
	}
	if err := os.MkdirAll(opts.OutDir, 0o755); err != nil {
		return fmt.Errorf("report.Generate: %w", err)
	}
	g := &generator{opts: opts, log: log}
	if err := g.run(); err != nil {
		return fmt.Errorf("report.Generate: %w", err)
	}
	return nil
}

type generator struct {
	opts  Options
	scale dataset.ScoreScale // what scored the run's rollouts (zero: not known)
	log   *zap.Logger
	md    strings.Builder
	notes []string
}

func (g *generator) note(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	g.notes = append(g.notes, s)
	g.log.Info("report note", zap.String("note", s))
}

func (g *generator) printf(format string, args ...any) { fmt.Fprintf(&g.md, format, args...) }

func (g *generator) run() error {
	title := g.opts.Title
	if title == "" {
		name := "(no run)"
		if g.opts.RunDir != "" {
			name = filepath.Base(filepath.Clean(g.opts.RunDir))
		}
		title = "Run report: " + name
	}
	g.printf("# %s\n\n", title)

	var metrics *Metrics
	if g.opts.RunDir != "" {
		g.scale = g.opts.Scale
		if g.scale.IsZero() {
			g.scale = recordedScale(g.opts.RunDir)
		}
		path := filepath.Join(g.opts.RunDir, "metrics.jsonl")
		m, err := ReadMetrics(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			g.note("%s not found: no training dynamics", "metrics.jsonl")
		case err != nil:
			return err
		default:
			metrics = m
			g.notes = append(g.notes, m.Notes...)
			for _, n := range m.Notes { // a damaged file: say so, not only in the report
				g.log.Warn("metrics.jsonl line skipped", zap.String("path", path), zap.String("note", n))
			}
		}
	}
	evals, err := ReadEvalFiles(g.opts.EvalFiles)
	if err != nil {
		return err
	}

	spec, files, err := g.runGame()
	if err != nil {
		return err
	}
	g.sources(metrics, spec, files)
	if metrics != nil && len(metrics.Steps) > 0 {
		if err := g.dynamics(metrics); err != nil {
			return err
		}
		if err := g.judgeSection(metrics); err != nil {
			return err
		}
	} else if metrics != nil {
		g.note("metrics.jsonl has no steps: no training dynamics")
	}
	if err := g.games(spec, files); err != nil {
		return err
	}
	if err := g.pairwise(evals.Pairwise); err != nil {
		return err
	}
	if err := g.bench(evals.Bench); err != nil {
		return err
	}
	g.agreement(evals.Agreement)

	if len(g.notes) > 0 {
		g.printf("## Notes\n\n")
		for _, n := range g.notes {
			g.printf("- %s\n", n)
		}
		g.printf("\n")
	}
	out := filepath.Join(g.opts.OutDir, ReportFile)
	if err := fsutil.WriteFileAtomic(out, []byte(g.md.String()), 0o644); err != nil {
		return err
	}
	g.log.Info("report written", zap.String("path", out))
	return nil
}

// runGame returns the registered game the run directory's frozen config
// names when it draws a report section (rollout.Spec.Report), and the
// run's rollouts files that section reads; a zero Spec when there is none.
func (g *generator) runGame() (rollout.Spec, []dataset.StepFile, error) {
	if g.opts.RunDir == "" {
		return rollout.Spec{}, nil, nil
	}
	env, err := runGame(g.opts.RunDir)
	if err != nil || env == "" {
		return rollout.Spec{}, nil, err
	}
	spec, ok := rollout.Lookup(env)
	if !ok || spec.Report == nil {
		return rollout.Spec{}, nil, nil
	}
	files, err := dataset.RolloutFiles(dataset.RunDir(g.opts.RunDir).RolloutsDir(), 0, 0)
	if err != nil {
		files = nil // no rollouts yet: the game's section says so
	}
	return spec, files, nil
}

// games adds the section of the run's game, drawn by the game itself
// (spec.Report) from the rollouts files, when runGame found one.
func (g *generator) games(spec rollout.Spec, files []dataset.StepFile) error {
	if spec.Report == nil {
		return nil
	}
	in := rollout.ReportInput{RunDir: g.opts.RunDir, Dir: g.opts.OutDir}
	if len(files) > 0 {
		in.Rollouts = func(fn func(dataset.Rollout) error) error {
			for _, f := range files {
				if err := dataset.ReadRollouts(f.Path, fn); err != nil {
					return err
				}
			}
			return nil
		}
	}
	md, err := spec.Report(in)
	if err != nil {
		return fmt.Errorf("the %s game's report: %w", spec.Name, err)
	}
	g.printf("%s\n", md)
	return nil
}

// recordedScale is the score scale recorded in a run's first rollouts
// file, else zero.
func recordedScale(runDir string) dataset.ScoreScale {
	rd := dataset.RunDir(runDir)
	if files, err := dataset.RolloutFiles(rd.RolloutsDir(), 0, 0); err == nil && len(files) > 0 {
		if s, ok, err := dataset.ReadScoreScale(files[0].Path); err == nil && ok {
			return s
		}
	}
	return dataset.ScoreScale{}
}

// runGame reads game.env from a run directory's frozen config.yaml ("" when
// there is none).
func runGame(runDir string) (string, error) {
	b, err := textfile.ReadFile(dataset.RunDir(runDir).ConfigPath())
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var c struct {
		Game struct {
			Env string `yaml:"env"`
		} `yaml:"game"`
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		return "", fmt.Errorf("%s: %w", dataset.RunDir(runDir).ConfigPath(), err)
	}
	return c.Game.Env, nil
}

// sources writes the report's head line: every file it reads (the
// metrics, the rollouts the game's section reads, the evaluation files).
func (g *generator) sources(m *Metrics, spec rollout.Spec, files []dataset.StepFile) {
	var parts []string
	if m != nil && len(m.Steps) > 0 {
		parts = append(parts, fmt.Sprintf("`metrics.jsonl` (%d steps, %d–%d)", len(m.Steps), m.Steps[0], m.Steps[len(m.Steps)-1]))
	}
	if spec.Report != nil && len(files) > 0 {
		n := "1 file"
		if len(files) > 1 {
			n = fmt.Sprintf("%d files", len(files))
		}
		steps := fmt.Sprintf("step %d", files[0].Step)
		if last := files[len(files)-1].Step; last != files[0].Step {
			steps = fmt.Sprintf("steps %d–%d", files[0].Step, last)
		}
		parts = append(parts, fmt.Sprintf("`rollouts/` (%s, %s; the %s game's section)", n, steps, spec.Name))
	}
	for _, f := range g.opts.EvalFiles {
		parts = append(parts, "`"+filepath.Base(f)+"`")
	}
	if len(parts) == 0 {
		parts = append(parts, "nothing")
	}
	g.printf("Sources: %s.\n\n", strings.Join(parts, ", "))
}

// window returns the running-average window for a run of n steps: the
// paper's 50 steps, or a tenth of a shorter run (the paper's window is under
// 3% of its 1,900 steps; a window as long as the run would flatten it).
func (g *generator) window(n int) int {
	w := g.opts.Window
	if w <= 0 {
		w = min(DefaultWindow, max(n/10, 1))
	}
	return max(w, 1)
}

// dynamics writes the training dynamics: the training set's panels, the
// evaluations during training (when the run has them) and the trainer's.
func (g *generator) dynamics(m *Metrics) error {
	w := g.window(len(m.Steps))
	g.printf("## Training dynamics\n\n")
	g.printf("Running averages over a trailing window of %d steps. "+
		"Scores (%s) are the min, mean and max within each group, averaged over the step's groups; "+
		"the band spans the group min to the group max.\n\n", w, g.scoreLabel())
	g.printf("### Training set\n\n")
	g.summaryTable(m, []metrics.Key{metrics.KeyScoreMin, metrics.KeyScoreMean, metrics.KeyScoreMax, metrics.KeyAgreementRate, metrics.KeyRoundsToAgreement, metrics.KeyRewardMean}, w)
	for _, c := range trainingPanels(g.scoreLabel(), scoreLimits(g.scale)) {
		if err := g.chart(m, c, w); err != nil {
			return err
		}
	}
	g.servingSection(m, w)
	if err := g.samplingSection(m, w); err != nil {
		return err
	}
	if err := g.evalSection(m); err != nil {
		return err
	}
	if err := g.trainerSection(m, w); err != nil {
		return err
	}
	g.updateSection(m)
	return nil
}

// servingKeys are the step line's keys about the policy's endpoints.
var servingKeys = []metrics.Key{metrics.KeyPrefixCacheHitRate, metrics.KeyEndpointLoadMax, metrics.KeyEndpointLoadMean, metrics.KeySessionMoves,
	metrics.KeyEndpointInFlightMean, metrics.KeyEndpointAtTargetShare, metrics.KeyServerRunningMean, metrics.KeyServerRunningMin}

// servingSection tables the policy endpoints' prefix-cache hit rate and
// load, when metrics.jsonl has them (runs before dialogue-affine routing
// have not).
func (g *generator) servingSection(m *Metrics, w int) {
	keys := slices.Clone(servingKeys)
	for _, k := range m.Keys() {
		if strings.HasPrefix(string(k), string(metrics.EndpointInFlightPrefix)) || strings.HasPrefix(string(k), string(metrics.EndpointAtTargetPrefix)) {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		if m.Has(k) {
			g.printf("### Policy serving\n\n")
			g.summaryTable(m, keys, w)
			return
		}
	}
}

// scoreLabel names the run's scores by the reward in use: "CA 1–5",
// "rule keyword_share 0–1", or "judge score" when the run does not say.
func (g *generator) scoreLabel() string {
	if g.scale.IsZero() {
		return "judge score"
	}
	return g.scale.Label()
}

// metricLabel is the table label of a metric key.
func (g *generator) metricLabel(key metrics.Key) string {
	switch key {
	case metrics.KeyScoreMin:
		return "score (" + g.scoreLabel() + "), group min"
	case metrics.KeyScoreMean:
		return "score (" + g.scoreLabel() + "), group mean"
	case metrics.KeyScoreMax:
		return "score (" + g.scoreLabel() + "), group max"
	}
	for prefix, what := range map[metrics.Key]string{metrics.EndpointInFlightPrefix: "requests in flight (time mean)", metrics.EndpointAtTargetPrefix: "share of sampling time at the in-flight target"} {
		if e, ok := strings.CutPrefix(string(key), string(prefix)); ok {
			return "endpoint " + strings.TrimPrefix(e, "e") + ": " + what
		}
	}
	return metricLabels[key]
}

var metricLabels = map[metrics.Key]string{
	metrics.KeyAgreementRate:         "agreement rate",
	metrics.KeyRoundsToAgreement:     "rounds to agreement",
	metrics.KeyRewardMean:            "reward mean",
	metrics.KeyPrefixCacheHitRate:    "prefix-cache hit rate (prompt tokens)",
	metrics.KeyEndpointLoadMax:       "completions on the busiest endpoint",
	metrics.KeyEndpointLoadMean:      "completions per endpoint (mean)",
	metrics.KeySessionMoves:          "sessions moved off their endpoint",
	metrics.KeyEndpointInFlightMean:  "requests in flight per endpoint (time mean)",
	metrics.KeyEndpointAtTargetShare: "share of sampling time at the in-flight target",
	metrics.KeyTrainerLoss:           "trainer loss",
	metrics.KeyTrainerKL:             "approx. KL, updated vs. sampling policy",
	metrics.KeyTrainerKLRef:          "KL to the reference model",
	metrics.KeyTrainerEntropy:        "entropy of trained tokens",
	metrics.KeyTrainerGradNorm:       "gradient norm (mean)",
	metrics.KeyTrainerGradNormMax:    "gradient norm (max)",
	metrics.KeyTrainerClipFrac:       "clip fraction",
}

// updateSection lists, per step, the full-weights update (trainer.full_finetune):
// its time, the time the endpoints were paused, the transfer's, the
// checksums compared and the probe's logprob difference. A LoRA run has
// none and gets no section.
func (g *generator) updateSection(m *Metrics) {
	steps, total := m.Series(metrics.KeyUpdateSeconds)
	if len(steps) == 0 {
		return
	}
	at := func(k metrics.Key) map[float64]float64 {
		x, y := m.Series(k)
		out := map[float64]float64{}
		for i := range x {
			out[x[i]] = y[i]
		}
		return out
	}
	pause, transfer, sums, probe := at(metrics.KeyUpdatePauseSeconds), at(metrics.KeyUpdateTransferSeconds), at(metrics.KeyUpdateChecksums), at(metrics.KeyUpdateProbeMeanAbs)
	cell := func(v map[float64]float64, s float64) string {
		if x, ok := v[s]; ok {
			return f4(x)
		}
		return "–"
	}
	g.printf("### Weight updates\n\n")
	g.printf("Full weights: after each step every endpoint was paused, given the step's weights, versioned, " +
		"verified (checksums against the trainer's files, then the probe's prompt logprobs) and resumed.\n\n")
	var rows [][]string
	for i, s := range steps {
		rows = append(rows, []string{fmt.Sprint(s), f4(total[i]), cell(pause, s), cell(transfer, s), cell(sums, s), cell(probe, s)})
	}
	g.table([]string{"step", "update s", "paused s", "transfer s", "checksums compared", "probe mean abs Δ logprob"}, rows)
}

// summaryTable lists each key's mean over the first window and its
// running average at the last step.
func (g *generator) summaryTable(m *Metrics, keys []metrics.Key, w int) {
	var rows [][]string
	for _, k := range keys {
		x, y := m.Series(k)
		if len(x) == 0 {
			continue
		}
		var sum float64
		var n int
		for i := range x {
			if x[i] < x[0]+float64(w) {
				sum += y[i]
				n++
			}
		}
		_, ra, _ := smoothed(m, k, w)
		rows = append(rows, []string{"`" + string(k) + "`", g.metricLabel(k), fmt.Sprint(len(x)), f4(sum / float64(n)), f4(ra[len(ra)-1])})
	}
	if len(rows) == 0 {
		return
	}
	g.table([]string{"key", "metric", "points", "first window", "last window"}, rows)
}

var aspectTitles = map[string]string{
	AspectCA:                 "CA alignment",
	AspectConflictResolution: "conflict-resolution quality",
}

func (g *generator) pairwise(results []PairwiseResult) error {
	if len(results) == 0 {
		return nil
	}
	g.printf("## Pairwise comparisons\n\n")
	g.printf("Win rate of the left model in percent (a tie counts half), mean ± SD over runs (sample SD); " +
		"bold where the mean is above 50 %%. Rounds are the average rounds of negotiation of each side.\n\n")
	var aspects []string
	for _, r := range results {
		if !slices.Contains(aspects, r.Aspect) {
			aspects = append(aspects, r.Aspect)
		}
	}
	for _, aspect := range aspects {
		title := aspectTitles[aspect]
		if title == "" {
			title = aspect
		}
		g.printf("### Judged for %s\n\n", title)
		type rowKey struct{ left, right, set string }
		var rows []rowKey
		cells := map[rowKey]map[string]PairwiseResult{}
		var decodings []string
		hasRounds := false
		for _, r := range results {
			if r.Aspect != aspect {
				continue
			}
			k := rowKey{r.Left, r.Right, r.Set}
			if cells[k] == nil {
				cells[k] = map[string]PairwiseResult{}
				rows = append(rows, k)
			}
			if _, dup := cells[k][r.Decoding]; dup {
				return fmt.Errorf("two pairwise results for %s vs. %s on %q, %s, %s", r.Left, r.Right, r.Set, aspect, r.Decoding)
			}
			cells[k][r.Decoding] = r
			if !slices.Contains(decodings, r.Decoding) {
				decodings = append(decodings, r.Decoding)
			}
			if l, rr := r.rounds(); l != nil || rr != nil {
				hasRounds = true
			}
		}
		decodings = orderDecodings(decodings)
		header := []string{"comparison", "eval set"}
		for _, d := range decodings {
			header = append(header, "win rate, "+d)
		}
		if hasRounds {
			for _, d := range decodings {
				header = append(header, "rounds, "+d+" (left / right)")
			}
		}
		var body [][]string
		for _, k := range rows {
			row := []string{k.left + " vs. " + k.right, k.set}
			for _, d := range decodings {
				r, ok := cells[k][d]
				if !ok || len(r.Runs) == 0 && r.Mean == 0 && r.SD == 0 {
					row = append(row, "–")
					continue
				}
				cell := meanSD(r.Mean, r.SD)
				if r.Mean > 50 {
					cell = "**" + cell + "**"
				}
				row = append(row, cell+runsNote(len(r.Runs)))
			}
			if hasRounds {
				for _, d := range decodings {
					r, ok := cells[k][d]
					if !ok {
						row = append(row, "–")
						continue
					}
					l, rr := r.rounds()
					row = append(row, optF1(l)+" / "+optF1(rr))
				}
			}
			body = append(body, row)
		}
		g.table(header, body)
	}
	return nil
}

func orderDecodings(ds []string) []string {
	out := make([]string, 0, len(ds))
	for _, d := range []string{DecodingGreedy, DecodingSampling} {
		if slices.Contains(ds, d) {
			out = append(out, d)
		}
	}
	return out
}

var benchTitles = map[string]string{
	"gpqa_diamond": "GPQA Diamond",
	"aime2024":     "AIME 2024",
	"aime2025":     "AIME 2025",
	"ifeval":       "IFEval",
}

func (g *generator) bench(results []BenchResult) error {
	if len(results) == 0 {
		return nil
	}
	g.printf("## Benchmarks\n\n")
	g.printf("Accuracy in percent, mean ± SD over runs (sample SD).\n\n")
	var benches, models []string
	cells := map[[2]string]BenchResult{}
	for _, r := range results {
		model := r.Model
		if model == "" {
			model = "(unnamed)"
		}
		row := benchRow(r)
		k := [2]string{row, model}
		if _, dup := cells[k]; dup {
			return fmt.Errorf("two bench results for %s, model %s", strings.ReplaceAll(row, "\x00", " scored by "), model)
		}
		cells[k] = r
		if !slices.Contains(benches, row) {
			benches = append(benches, row)
		}
		if !slices.Contains(models, model) {
			models = append(models, model)
		}
	}
	if i := slices.Index(models, "base"); i > 0 {
		models = append([]string{"base"}, slices.Delete(models, i, i+1)...)
	}
	header := append([]string{"benchmark (size)"}, models...)
	var body [][]string
	for _, b := range benches {
		bench, scorer, _ := strings.Cut(b, "\x00")
		title := benchTitles[bench]
		if title == "" {
			title = bench
		}
		name := bench
		if scorer != "" {
			title += " [" + scorer + "]"
			name += " [" + scorer + "]"
		}
		var sizes []int
		for _, m := range models {
			if r, ok := cells[[2]string{b, m}]; ok && r.N > 0 && !slices.Contains(sizes, r.N) {
				sizes = append(sizes, r.N)
			}
		}
		if len(sizes) > 0 {
			ss := make([]string, len(sizes))
			for i, s := range sizes {
				ss[i] = fmt.Sprint(s)
			}
			title += " (" + strings.Join(ss, " / ") + ")"
			if len(sizes) > 1 {
				g.note("%s: models were scored on different numbers of items (%s)", name, strings.Join(ss, ", "))
			}
		}
		row := []string{title}
		for _, m := range models {
			r, ok := cells[[2]string{b, m}]
			if !ok {
				row = append(row, "–")
				continue
			}
			row = append(row, meanSD(r.Mean, r.SD)+runsNote(len(r.Runs)))
		}
		body = append(body, row)
	}
	g.table(header, body)
	return nil
}

// benchRow is a bench result's row key: the benchmark, and after a NUL the
// scorer when it is a reference's (parley's own, and results that name
// none, share the benchmark's row).
func benchRow(r BenchResult) string {
	if r.Scorer == "" || r.Scorer == "parley" {
		return r.Benchmark
	}
	return r.Benchmark + "\x00" + r.Scorer
}

func (g *generator) agreement(results []AgreementResult) {
	if len(results) == 0 {
		return
	}
	g.printf("## Judge agreement\n\n")
	header := []string{"metric"}
	for i, r := range results {
		label := r.Label
		if label == "" {
			label = fmt.Sprintf("pair %d", i+1)
		}
		header = append(header, label)
	}
	rows := [][]string{{"items"}, {"exact agreement (%)"}, {"±1 agreement (%)"}, {"Pearson r"}, {"weighted κ (quadratic)"}}
	for _, r := range results {
		rows[0] = append(rows[0], fmt.Sprint(r.N))
		rows[1] = append(rows[1], fmt.Sprintf("%.1f", r.Exact))
		rows[2] = append(rows[2], fmt.Sprintf("%.1f", r.WithinOne))
		rows[3] = append(rows[3], optF2(r.Pearson))
		rows[4] = append(rows[4], optF2(r.Kappa))
	}
	g.table(header, rows)
}

func (g *generator) table(header []string, rows [][]string) {
	g.printf("| %s |\n", strings.Join(escapeCells(header), " | "))
	seps := make([]string, len(header))
	for i := range seps {
		seps[i] = "---"
	}
	g.printf("|%s|\n", strings.Join(seps, "|"))
	for _, r := range rows {
		g.printf("| %s |\n", strings.Join(escapeCells(r), " | "))
	}
	g.printf("\n")
}

func escapeCells(cells []string) []string {
	out := make([]string, len(cells))
	for i, c := range cells {
		out[i] = strings.ReplaceAll(strings.ReplaceAll(c, "|", `\|`), "\n", " ")
	}
	return out
}

func meanSD(mean, sd float64) string { return fmt.Sprintf("%.1f ± %.1f", mean, sd) }

func runsNote(n int) string {
	if n == 1 {
		return " (1 run)"
	}
	return ""
}

func f2(x float64) string {
	if math.IsNaN(x) {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", x)
}

// f4 is f2 for values of 0.1 and above (and 0), two significant digits
// below (a KL of 0.00043).
func f4(x float64) string {
	if math.IsNaN(x) || x == 0 || math.Abs(x) >= 0.1 {
		return f2(x)
	}
	return fmt.Sprintf("%.2g", x)
}

func optF1(p *float64) string {
	if p == nil {
		return "–"
	}
	return fmt.Sprintf("%.1f", *p)
}

func optF2(p *float64) string {
	if p == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", *p)
}
