package stats

import (
	"errors"
	"math"
	"testing"
)

// TestSequentialR2Numpy: R² after each block, in both of table 8's
// orders, against numpy's least squares on the same columns
// (testdata/r2.json): full dummy sets, a constant and a collinear feature
// dropped, the parameters each block adds counted as numpy's rank.
func TestSequentialR2Numpy(t *testing.T) {
	var f struct {
		Y      []float64
		Blocks map[string][][]float64
		Orders map[string][]string
		Want   map[string][]struct {
			Block  string
			R2     float64
			Params int
		}
	}
	readJSON(t, "r2.json", &f)
	if len(f.Orders) != 2 {
		t.Fatalf("fixture: %d orders", len(f.Orders))
	}
	for name, order := range f.Orders {
		var blocks []Block
		for _, b := range order {
			blocks = append(blocks, Block{Name: b, Columns: f.Blocks[b]})
		}
		got, err := SequentialR2(f.Y, blocks)
		if err != nil {
			t.Fatal(err)
		}
		prev := 0.0
		for i, w := range f.Want[name] {
			g := got[i]
			if g.Name != w.Block || math.Abs(g.R2-w.R2) > 1e-12 || g.Params != w.Params || math.Abs(g.Delta-(w.R2-prev)) > 1e-12 {
				t.Errorf("%s step %d: %+v, numpy %s R² %.15f (+%d parameters)", name, i, g, w.Block, w.R2, w.Params)
			}
			prev = w.R2
		}
	}
}

// TestSequentialR2Small: a case by hand, and the errors.
func TestSequentialR2Small(t *testing.T) {
	// y = x exactly on x = 0, 1, 2, 3: R² 1 after x; a second copy of x
	// and a constant add nothing and no parameter.
	y := []float64{0, 1, 2, 3}
	x := []float64{0, 1, 2, 3}
	got, err := SequentialR2(y, []Block{{"x", [][]float64{x}}, {"copy and constant", [][]float64{{0, 2, 4, 6}, {7, 7, 7, 7}}}})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(got[0].R2-1) > 1e-15 || got[0].Params != 1 || got[1].Params != 0 || math.Abs(got[1].Delta) > 1e-15 {
		t.Errorf("SequentialR2 = %+v, want R² 1 with 1 parameter, then +0 with 0", got)
	}
	// y = 1, 2, 3, 6 on a dummy of the last game: mean 3, TSS 4+1+0+9 =
	// 14; the dummy fits the last game and leaves 1, 2, 3 about their mean
	// 2: RSS 2, R² = 12/14.
	got, _ = SequentialR2([]float64{1, 2, 3, 6}, []Block{{"d", [][]float64{{0, 0, 0, 1}}}})
	if math.Abs(got[0].R2-12.0/14) > 1e-15 {
		t.Errorf("R² %v, want 12/14", got[0].R2)
	}
	for _, tt := range []struct {
		y      []float64
		blocks []Block
		want   error
	}{
		{[]float64{1}, nil, ErrEmpty},
		{[]float64{2, 2, 2}, nil, ErrConstant},
		{[]float64{1, math.NaN()}, nil, ErrNonFinite},
		{[]float64{1, 2}, []Block{{"b", [][]float64{{1}}}}, ErrLength},
		{[]float64{1, 2}, []Block{{"b", [][]float64{{1, math.Inf(1)}}}}, ErrNonFinite},
	} {
		if _, err := SequentialR2(tt.y, tt.blocks); !errors.Is(err, tt.want) {
			t.Errorf("SequentialR2(%v, %v) error %v, want %v", tt.y, tt.blocks, err, tt.want)
		}
	}
}
