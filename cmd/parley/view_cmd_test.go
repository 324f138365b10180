package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestViewCmd: parley view's flags reach the export (steps, a filter), and
// a folder that is not a parley output is refused by name.
func TestViewCmd(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "metrics.jsonl"), []byte(`{"step":1,"score_mean":0.5}`+"\n"), 0o644)
	out := filepath.Join(t.TempDir(), "v.html")
	stdout, err := run(t, newViewCmd(quietApp()), dir, "--export", out, "--steps", "1-1", "--persona", "p02", "--agreed", "yes")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out)
	if strings.TrimSpace(stdout) != out || !strings.Contains(string(b), `"filter":"persona=p02\u0026agreed=yes"`) || !strings.Contains(string(b), `"from":1,"to":1`) {
		t.Errorf("parley view --export printed %q and wrote an export without its steps and filter", stdout)
	}
	empty := t.TempDir()
	if _, err := run(t, newViewCmd(quietApp()), empty); err == nil || !strings.Contains(err.Error(), empty+" is not a parley output") {
		t.Errorf("parley view %s: %v, want it refused as not a parley output", empty, err)
	}
	if _, err := run(t, newViewCmd(quietApp()), dir, "--reward-min", "lots", "--export", out); err == nil || !strings.Contains(err.Error(), "--reward-min") {
		t.Errorf("--reward-min lots: %v, want an error naming the filter", err)
	}
}
