package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/figure"
)

// TestJudgeSection: the Judge section of a run whose metrics.jsonl came
// from parley train against a serve-sim judge (train's
// TestLoopJudgeMeter, 3 steps of 16 calls, judge.price 0.15/0.6, the
// judge's fingerprint changed before step 3) totals the calls, tokens,
// cached share and cost, charts the latency, lists both backends and
// says the judge changed; a run without judge keys has no section.
func TestJudgeSection(t *testing.T) {
	tests := []struct {
		name, run string
		want      []string
		absent    []string
		charts    int
	}{
		{name: "metered run", run: "testdata/run/judge", want: []string{
			"## Judge\n", "| judge calls | 48 |", "| prompt tokens | 70009 |", "| completion tokens | 1744 |",
			"| cached share of prompt tokens | 87.3 % |", "| cost of the run (judge.price) | 0.0115 |", "| HTTP 429 answers | 0 |",
			"| call latency p95, worst step | 0.061 s |", "| call latency p50, median over steps | 0.006 s |",
			"| `gpt-judge fp_sim0` | 1 | 2 | 2 |", "| `gpt-judge fp_sim1` | 3 | 3 | 1 |",
			"**The judge changed under the run**: from step 3", "![Judge call latency](judge_latency.png)",
			"### Hacking monitors", "| `judge/corr_length` | corr(reward, final length in words) | 3 | 0.50 | 0.90 |",
			"| `judge/corr_persona_echo` | corr(reward, persona 3-gram echo) | 1 | -0.25 | -0.25 |",
		}, absent: []string{"judge/corr_agreement"}, charts: 1},
		{name: "gold set scored again", run: "testdata/run/judge_gold", want: []string{
			"### Gold-set drift", "| step | items scored | moved | mean abs change |", "| 2 | 3 | 0.0 % | 0.000 |", "| 3 | 3 | 33.3 % | 0.333 |",
		}, charts: 1},
		{name: "no gold set", run: "testdata/run/judge", absent: []string{"Gold-set drift", "### Audit judge"}, charts: 1},
		// train's TestLoopAudit: 6 steps, an audit judge that diverges
		// (serve-sim --judge-diverge), the alarm fired at steps 4 and 6.
		{name: "audit judge diverging", run: "testdata/run/judge_audit", want: []string{
			"### Audit judge", "**⚠ Over-optimisation alarm fired** at steps 4, 6", "| steps audited | 6 |", "| finals sampled | 48 |",
			"| scored by the audit judge | 48 |", "| audit judge failures (down, rate-limited, garbage) | 0 |",
			"| `audit/kappa` | quadratic-weighted κ |", "![Training judge against audit judge](judge_audit_reward.png)",
			"![Agreement of the two judges](judge_audit_agreement.png)",
		}, absent: []string{"did not fire"}, charts: 3},
		{name: "audit judge agreeing", run: "testdata/run/judge_audit_agree", want: []string{
			"### Audit judge", "The over-optimisation alarm did not fire.", "| `audit/exact` | exact agreement, % | 6 | 100.00 | 100.00 |",
		}, absent: []string{"alarm fired"}, charts: 3},
		{name: "rule-judged run", run: "testdata/run/quickstart", absent: []string{"## Judge", "judge_latency.png", "Hacking monitors"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := t.TempDir()
			if err := Generate(Options{RunDir: tt.run, OutDir: out}); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(out, ReportFile))
			if err != nil {
				t.Fatal(err)
			}
			got := string(b)
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("report lacks %q", w)
				}
			}
			for _, w := range tt.absent {
				if strings.Contains(got, w) {
					t.Errorf("report has %q", w)
				}
			}
			if tt.charts > 0 {
				checkPNG(t, filepath.Join(out, "judge_latency.png"), figure.DefaultWidthPx, figure.DefaultHeightPx)
			}
			if tt.charts == 3 {
				checkPNG(t, filepath.Join(out, "judge_audit_reward.png"), figure.DefaultWidthPx, figure.DefaultHeightPx)
				checkPNG(t, filepath.Join(out, "judge_audit_agreement.png"), figure.DefaultWidthPx, figure.DefaultHeightPx)
			}
			if t.Failed() {
				i := strings.Index(got, "## Judge")
				t.Logf("report from the Judge section:\n%s", got[max(i, 0):])
			}
		})
	}
}
