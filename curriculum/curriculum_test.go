package curriculum

import (
	"fmt"
	"math"
	"testing"

	"github.com/parleyhq/parley/dataset"
)

func rows() []dataset.Prompt {
	var out []dataset.Prompt
	for i := 0; i < 4; i++ {
		out = append(out, dataset.Prompt{ID: fmt.Sprintf("a%d", i), Category: "a"})
	}
	for i := 0; i < 4; i++ {
		out = append(out, dataset.Prompt{ID: fmt.Sprintf("b%d", i), Category: "b"})
	}
	return out
}

// TestObserveRetires: groups of equal rewards in a row retire a row for the
// cool-down, as solved or hopeless against the run's mean; a spread resets
// the count; the window keeps the latest groups.
func TestObserveRetires(t *testing.T) {
	opts := Options{Window: 2, RetireAfter: 2, Cooldown: 5}
	s := New()
	s.Observe(1, "x", []float64{0, 1}, opts)
	s.Observe(1, "y", []float64{1, 1}, opts)
	s.Observe(2, "y", []float64{1, 1}, opts)
	s.Observe(2, "z", []float64{0, 0}, opts)
	s.Observe(3, "z", []float64{0, 0}, opts)
	s.Observe(3, "x", []float64{0, 0}, opts)
	s.Observe(4, "x", []float64{0, 1}, opts)
	s.Observe(5, "x", []float64{1, 1}, opts)
	if p := s.Prompts["y"]; p.RetiredUntil != 8 || p.Retired != "solved" {
		t.Errorf("y: retired until %d as %q, want 8 solved", p.RetiredUntil, p.Retired)
	}
	if p := s.Prompts["z"]; p.RetiredUntil != 9 || p.Retired != "hopeless" {
		t.Errorf("z: retired until %d as %q, want 9 hopeless", p.RetiredUntil, p.Retired)
	}
	if p := s.Prompts["x"]; p.RetiredUntil != 0 || len(p.Means) != 2 || p.Groups != 4 || p.Flat != 1 {
		t.Errorf("x: %+v; want not retired (its flat groups not in a row), 2 groups kept of 4, 1 flat", *p)
	}
	if got := s.Retired(7); got["solved"] != 1 || got["hopeless"] != 1 {
		t.Errorf("Retired(7) = %v, want one solved, one hopeless", got)
	}
	if got := s.Retired(9); len(got) != 0 {
		t.Errorf("Retired(9) = %v, want none", got)
	}
}

// TestDraw: rows with signal are drawn more than flat ones, never seen rows
// most, retired rows not at all; the categories keep their mix; the draw
// depends on seed and step alone; a category all at rest is drawn again,
// its rest ended and named.
func TestDraw(t *testing.T) {
	opts := Options{Floor: 0.1, RetireAfter: 10}
	s := New()
	for _, id := range []string{"a0", "a1", "a2", "a3", "b0", "b1", "b2", "b3"} {
		r := []float64{0, 0}
		if id == "a0" || id == "b0" {
			r = []float64{0, 1}
		}
		s.Observe(1, id, r, opts)
	}
	s.Prompts["a3"].RetiredUntil, s.Prompts["a3"].Retired = 1000, "solved"
	count := map[string]int{}
	cats := map[string]int{}
	for step := 0; step < 400; step++ {
		got, ended := s.Draw(rows(), map[string]float64{"a": 3, "b": 1}, 1, 7, step, opts)
		if len(ended) > 0 {
			t.Fatalf("step %d: rests ended in %v, want none", step, ended)
		}
		count[got[0].ID]++
		cats[got[0].Category]++
	}
	if count["a3"] != 0 {
		t.Errorf("a retired row was drawn %d times", count["a3"])
	}
	if !(count["a0"] > 3*count["a1"] && count["b0"] > 3*count["b1"]) {
		t.Errorf("draws %v: want the rows with a spread (a0, b0) drawn far more than the flat ones", count)
	}
	if share := float64(cats["a"]) / 400; math.Abs(share-0.75) > 0.07 {
		t.Errorf("category a drawn %.2f of the time, want its mix 0.75", share)
	}
	a, _ := s.Draw(rows(), nil, 4, 9, 3, opts)
	b, _ := s.Draw(rows(), nil, 4, 9, 3, opts)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("two draws of one seed and step differ")
	}
	for _, id := range []string{"b0", "b1", "b2", "b3"} {
		s.Prompts[id].RetiredUntil, s.Prompts[id].Retired = 100, "hopeless"
	}
	got, ended := s.Draw(rows(), map[string]float64{"b": 1}, 2, 1, 5, opts)
	if len(got) != 2 || fmt.Sprint(ended) != "[b]" || s.Prompts["b1"].RetiredUntil != 5 {
		t.Errorf("every b row resting: drew %d, ended %v, b1 until %d; want 2 drawn, [b] ended at step 5", len(got), ended, s.Prompts["b1"].RetiredUntil)
	}
	if un := New().weight("new", 1, 0.1, 1); un != 1.1 {
		t.Errorf("a row never seen weighs %v, want 1.1", un)
	}
}
