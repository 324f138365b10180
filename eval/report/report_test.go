package report

import (
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/figure"
	"github.com/parleyhq/parley/internal/golden"
)

var fixtureEvals = []string{"testdata/eval/pairwise.json", "testdata/eval/bench.jsonl", "testdata/eval/agreement.json"}

func TestWriteReportGolden(t *testing.T) {
	out := t.TempDir()
	ca := dataset.ScoreScale{Name: "CA", Min: 1, Max: 5} // as the run's judge.kind: ca gives
	if err := Generate(Options{RunDir: "testdata/run/quickstart", OutDir: out, EvalFiles: fixtureEvals, Scale: ca}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(out, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "testdata/report.golden.md", got)

	// Every PNG the report links exists, decodes, and has the default size.
	linked := 0
	for _, line := range strings.Split(string(got), "\n") {
		if !strings.HasPrefix(line, "![") {
			continue
		}
		name := line[strings.Index(line, "](")+2 : len(line)-1]
		linked++
		checkPNG(t, filepath.Join(out, name), figure.DefaultWidthPx, figure.DefaultHeightPx)
	}
	// Training set: 3 charts; evaluations: win rate, score, agreement
	// and rounds; trainer: loss, KL, entropy, grad norm (its clip fraction
	// is 0 at every step: omitted with a note).
	if linked != 11 {
		t.Errorf("report links %d charts, want 11", linked)
	}
	if !strings.Contains(string(got), "`trainer/clip_frac` is 0 at all 120 points") {
		t.Errorf("report.md does not say why the clip fraction chart is omitted")
	}
}

func checkPNG(t *testing.T, path string, w, h int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Errorf("chart: %v", err)
		return
	}
	defer f.Close()
	st, _ := f.Stat()
	if st.Size() < 1000 {
		t.Errorf("%s: %d bytes, want a drawn chart", path, st.Size())
	}
	img, err := png.Decode(f)
	if err != nil {
		t.Errorf("png.Decode(%s): %v", path, err)
		return
	}
	if b := img.Bounds(); b.Dx() != w || b.Dy() != h {
		t.Errorf("%s: %d×%d, want %d×%d", path, b.Dx(), b.Dy(), w, h)
	}
	// Not blank: more than one colour.
	first := img.At(0, 0)
	for y := 0; y < img.Bounds().Dy(); y += 7 {
		for x := 0; x < img.Bounds().Dx(); x += 7 {
			if img.At(x, y) != first {
				return
			}
		}
	}
	t.Errorf("%s is a blank image", path)
}

func TestGenerateOptions(t *testing.T) {
	out := filepath.Join(t.TempDir(), "nested", "out")
	err := Generate(Options{RunDir: "testdata/run/quickstart", OutDir: out, Window: 10, WidthPx: 400, HeightPx: 300, Title: "Custom"})
	if err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(out, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# Custom\n", "trailing window of 10 steps", "![(a) Reward per group, training set](reward.png)"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
	for _, name := range []string{"reward.png", "agreement_rate.png", "rounds_to_agreement.png", "eval_win_rate.png", "eval_score.png", "trainer_loss.png"} {
		checkPNG(t, filepath.Join(out, name), 400, 300)
	}
	if strings.Contains(string(md), "## Benchmarks") {
		t.Errorf("report.md has a benchmark section without eval files")
	}
}

func TestGenerateWithoutRun(t *testing.T) {
	tests := []struct {
		name, runDir string
		metrics      string // content of metrics.jsonl; "" for no file
		want         []string
	}{
		{"no run dir", "", "", []string{"# Run report: (no run)", "Sources: `bench.jsonl`.", "## Benchmarks"}},
		{"missing metrics", "RUN", "", []string{"metrics.jsonl not found: no training dynamics"}},
		{"keys missing", "RUN", `{"step": 1, "score_mean": 3}` + "\n" + `{"step": 2, "score_mean": 3.5}` + "\n",
			[]string{
				"no data for `score_max`, `score_min` in reward.png",
				"no data for `agreement_rate`, chart agreement_rate.png skipped",
				"trailing window of 1 steps", // min(50, steps/10), at least 1
			}},
		{"no steps", "RUN", `{"loss": 1}` + "\n", []string{"metrics.jsonl line 1: no integer \"step\", skipped", "metrics.jsonl has no steps"}},
		{"flat-zero panels", "RUN", `{"step": 1, "score_mean": 0.2, "agreement_rate": 0, "trainer/clip_frac": 0, "trainer/loss": 0.1}` + "\n" +
			`{"step": 2, "score_mean": 0.4, "agreement_rate": 0, "trainer/clip_frac": 0, "trainer/loss": 0.2}` + "\n",
			[]string{
				"`agreement_rate` is 0 at all 2 points (no rollout reached agreement): chart agreement_rate.png omitted",
				"`trainer/clip_frac` is 0 at all 2 points (no token's probability ratio left the clip range",
				"![(h) Trainer loss](trainer_loss.png)",
			}},
		{"evaluation keys without a win rate", "RUN", `{"step": 1, "score_mean": 0.2, "eval/score_mean": 0.3}` + "\n",
			[]string{"metrics.jsonl has evaluation keys but no `eval/win_rate`: no evaluation section"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runDir := tt.runDir
			if runDir == "RUN" {
				runDir = t.TempDir()
				if tt.metrics != "" {
					if err := os.WriteFile(filepath.Join(runDir, "metrics.jsonl"), []byte(tt.metrics), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			out := t.TempDir()
			if err := Generate(Options{RunDir: runDir, OutDir: out, EvalFiles: []string{"testdata/eval/bench.jsonl"}}); err != nil {
				t.Fatal(err)
			}
			md, _ := os.ReadFile(filepath.Join(out, ReportFile))
			for _, w := range tt.want {
				if !strings.Contains(string(md), w) {
					t.Errorf("report.md lacks %q:\n%s", w, md)
				}
			}
		})
	}
}

func TestGenerateErrors(t *testing.T) {
	dir := t.TempDir()
	dupPairwise := filepath.Join(dir, "dup.jsonl")
	os.WriteFile(dupPairwise, []byte(
		`{"left":"A","right":"B","set":"s","aspect":"ca","decoding":"greedy","runs":[{"win_rate":50}]}`+"\n"+
			`{"left":"A","right":"B","set":"s","aspect":"ca","decoding":"greedy","runs":[{"win_rate":60}]}`+"\n"), 0o644)
	dupBench := filepath.Join(dir, "dupbench.jsonl")
	os.WriteFile(dupBench, []byte(`{"benchmark":"aime2024","model":"base","runs":[1]}`+"\n"+`{"benchmark":"aime2024","model":"base","runs":[2]}`+"\n"), 0o644)
	tests := []struct {
		opts Options
		want string
	}{
		{Options{OutDir: ""}, "no output directory"},
		{Options{OutDir: t.TempDir(), EvalFiles: []string{dupPairwise}}, "two pairwise results for A vs. B"},
		{Options{OutDir: t.TempDir(), EvalFiles: []string{dupBench}}, "two bench results for aime2024, model base"},
		{Options{OutDir: t.TempDir(), EvalFiles: []string{filepath.Join(dir, "missing.json")}}, "missing.json"},
	}
	for _, tt := range tests {
		err := Generate(tt.opts)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Generate(%+v) error = %v, want it to contain %q", tt.opts, err, tt.want)
		}
	}
}

// Results of one benchmark under different scorers are rows of their own,
// named for a reference scorer; parley's shares the benchmark's row.
func TestBenchScorers(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "bench.jsonl")
	lines := `{"benchmark":"gpqa_diamond","model":"base","scorer":"parley","runs":[{"run":0,"accuracy":40}]}` + "\n" +
		`{"benchmark":"gpqa_diamond","model":"base","scorer":"lm-eval-flexible","runs":[{"run":0,"accuracy":30}]}` + "\n" +
		`{"benchmark":"aime2024","model":"base","runs":[{"run":0,"accuracy":20}]}` + "\n"
	if err := os.WriteFile(file, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if err := Generate(Options{OutDir: out, EvalFiles: []string{file}}); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(out, ReportFile))
	for _, w := range []string{"| GPQA Diamond | 40.0", "| GPQA Diamond [lm-eval-flexible] | 30.0", "| AIME 2024 | 20.0"} {
		if !strings.Contains(string(md), w) {
			t.Errorf("report.md lacks %q:\n%s", w, md)
		}
	}
	dup := filepath.Join(dir, "dup.jsonl")
	os.WriteFile(dup, []byte(lines+`{"benchmark":"gpqa_diamond","model":"base","scorer":"lm-eval-flexible","runs":[{"run":1,"accuracy":30}]}`+"\n"), 0o644)
	if err := Generate(Options{OutDir: t.TempDir(), EvalFiles: []string{dup}}); err == nil || !strings.Contains(err.Error(), "gpqa_diamond scored by lm-eval-flexible, model base") {
		t.Errorf("Generate(two results under one scorer) error = %v", err)
	}
}

// TestRunScale: the report labels scores by the scale its caller read
// from the run's frozen config, else by the scale its rollouts record,
// else neutrally.
func TestRunScale(t *testing.T) {
	withRollouts := func(s dataset.ScoreScale) string {
		dir := t.TempDir()
		w, err := dataset.NewRolloutWriter(dataset.RunDir(dir).RolloutsPath(1), dataset.RolloutWriterOptions{Scale: s})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(dataset.Rollout{RolloutID: "r"}); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	ledger := dataset.ScoreScale{Name: "ledger share", Max: 1}
	ca := dataset.ScoreScale{Name: "CA", Min: 1, Max: 5}
	tests := []struct {
		name  string
		dir   string
		given dataset.ScoreScale
		want  string
	}{
		{"given by the config", t.TempDir(), ca, "CA 1–5"},
		{"given wins over the rollouts", withRollouts(ledger), ca, "CA 1–5"},
		{"rollouts record it", withRollouts(ledger), dataset.ScoreScale{}, "ledger share 0–1"},
		{"nothing says", t.TempDir(), dataset.ScoreScale{}, "judge score"},
	}
	for _, tt := range tests {
		g := &generator{scale: tt.given}
		if g.scale.IsZero() {
			g.scale = recordedScale(tt.dir)
		}
		if got := g.scoreLabel(); got != tt.want {
			t.Errorf("%s: score label %q, want %q", tt.name, got, tt.want)
		}
	}
}
