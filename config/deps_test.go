package config

import (
	"os/exec"
	"strings"
	"testing"
)

// plotting reports whether pkg draws: this module's figure package or
// gonum's plot.
func plotting(pkg string) bool {
	return pkg == "github.com/parleyhq/parley/figure" ||
		pkg == "gonum.org/v1/plot" || strings.HasPrefix(pkg, "gonum.org/v1/plot/")
}

// TestNoPlottingDeps: config stays below the packages that draw. It once
// imported eval/tournament (for the schedules' names) and league (for the
// draw rules'), and through them figure and gonum's plot: 439 packages for
// a YAML loader. The names now live in the leaf packages
// eval/tournament/schedule and league/draw.
func TestNoPlottingDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	var bad []string
	for _, p := range deps {
		if plotting(p) {
			bad = append(bad, p)
		}
	}
	if len(bad) > 0 {
		t.Errorf("config's dependencies include plotting packages:\n\t%s", strings.Join(bad, "\n\t"))
	}
	t.Logf("config depends on %d packages", len(deps))
}

func TestPlotting(t *testing.T) {
	for _, tc := range []struct {
		pkg  string
		want bool
	}{
		{"github.com/parleyhq/parley/figure", true},
		{"gonum.org/v1/plot", true},
		{"gonum.org/v1/plot/vg/draw", true},
		{"gonum.org/v1/plotter", false},
		{"gonum.org/v1/gonum/stat", false},
		{"github.com/parleyhq/parley/stats", false},
		{"github.com/parleyhq/parley/figures", false},
	} {
		if got := plotting(tc.pkg); got != tc.want {
			t.Errorf("plotting(%q) = %v, want %v", tc.pkg, got, tc.want)
		}
	}
}
