package reward

import (
	"math"
	"testing"

	"github.com/parleyhq/parley/dataset"
)

func TestPearson(t *testing.T) {
	for _, tc := range []struct {
		name   string
		xs, ys []float64
		want   float64 // NaN: nil
	}{
		{"perfect", []float64{1, 2, 3}, []float64{2, 4, 6}, 1},
		{"inverse", []float64{1, 2, 3}, []float64{3, 2, 1}, -1},
		// mx=2.5 my=2.5; dx=-1.5,-.5,.5,1.5 dy=-1.5,.5,-.5,1.5: sxy=2.25-.25-.25+2.25=4, sxx=syy=5 → 0.8
		{"hand", []float64{1, 2, 3, 4}, []float64{1, 3, 2, 4}, 0.8},
		{"two", []float64{1, 2}, []float64{1, 2}, math.NaN()},
		{"flat", []float64{1, 1, 1}, []float64{1, 2, 3}, math.NaN()},
	} {
		got := Pearson(tc.xs, tc.ys)
		if math.IsNaN(tc.want) {
			if got != nil {
				t.Errorf("%s: Pearson = %v, want nil", tc.name, *got)
			}
			continue
		}
		if got == nil || math.Abs(*got-tc.want) > 1e-9 {
			t.Errorf("%s: Pearson = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestPersonaEchoAndAgreement(t *testing.T) {
	ps := []dataset.Persona{{Role: "A", Text: "Be loyal to your friends always."}}
	for _, tc := range []struct {
		final string
		echo  float64
		agree int
	}{
		// 3-grams: "be loyal to", "loyal to your", "to your friends", "your friends now": 3 of 4 in the persona
		{"Be LOYAL to your friends now", 0.75, 0},
		{"I agree, deal. Agreed.", 0, 3},
		{"too short", 0, 0},
		// Whole words only: no "deal" in "ideal", no "agreed" in "disagreed".
		{"An ideal plan, but we disagreed", 0, 0},
	} {
		if got := PersonaEcho(tc.final, ps); math.Abs(got-tc.echo) > 1e-9 {
			t.Errorf("PersonaEcho(%q) = %v, want %v", tc.final, got, tc.echo)
		}
		if got := AgreementCount(tc.final); got != tc.agree {
			t.Errorf("AgreementCount(%q) = %d, want %d", tc.final, got, tc.agree)
		}
	}
}

func TestComputeMonitors(t *testing.T) {
	tr := []dataset.RoleOutcome{{Role: "A", Trained: true}}
	r := func(score float32, final string) dataset.Rollout {
		return dataset.Rollout{Judged: true, Score: score, Final: final, Roles: tr}
	}
	// lengths 1,2,3 against scores 1,2,3: corr 1; agreement counts 0,0,0: nil.
	rs := []dataset.Rollout{r(1, "a"), r(2, "a b"), r(3, "a b c"),
		{Judged: false, Score: 9, Final: "x", Roles: tr}, {Judged: true, Score: 9, Final: "x"}}
	m := ComputeMonitors(rs)
	if m.Length == nil || math.Abs(*m.Length-1) > 1e-9 {
		t.Errorf("Length = %v, want 1", m.Length)
	}
	if m.Agreement != nil || m.PersonaEcho != nil {
		t.Errorf("Agreement, PersonaEcho = %v, %v, want nil (no spread)", m.Agreement, m.PersonaEcho)
	}
}
