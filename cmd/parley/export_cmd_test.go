package main

import (
	"strings"
	"testing"

	"github.com/parleyhq/parley/dataset/export"
)

// TestExportHelpFromFormats: parley export's usage line, help and --format
// usage are built from the export's format table: a format added there
// appears in each.
func TestExportHelpFromFormats(t *testing.T) {
	use, short, long, usage := exportHelp(export.Formats())
	if want := "export --from RUN|DIR|FILE [--in FILE]... --format jsonl|hf --out DIR"; use != want {
		t.Errorf("use = %q, want %q", use, want)
	}
	if want := "Export rollouts (a run's, parley rollout's, or files) as JSONL chat messages or a Hugging Face dataset folder"; short != want {
		t.Errorf("short = %q, want %q", short, want)
	}
	if usage != "jsonl or hf" {
		t.Errorf("--format usage = %q, want %q", usage, "jsonl or hf")
	}
	for _, want := range []string{"JSONL (one rollout a line, its dialogue as chat messages)", "or as a Hugging Face dataset folder (parquet shards and a README.md card)", "--from takes a run directory"} {
		if !strings.Contains(strings.Join(strings.Fields(long), " "), want) {
			t.Errorf("long help lacks %q:\n%s", want, long)
		}
	}
	for _, line := range strings.Split(long, "\n") {
		if n := len([]rune(line)); n > 78 {
			t.Errorf("long help line of %d columns: %q", n, line)
		}
	}

	more := append(export.Formats(), export.Format{Name: "csv", Short: "a CSV table", Long: "CSV (one rollout a row)"})
	use, short, long, usage = exportHelp(more)
	for what, got := range map[string]string{"use": use, "short": short, "long": strings.Join(strings.Fields(long), " "), "usage": usage} {
		for _, want := range map[string][]string{"use": {"jsonl|hf|csv"}, "short": {"or a CSV table"}, "long": {"or as CSV (one rollout a row)"}, "usage": {"jsonl or hf or csv"}}[what] {
			if !strings.Contains(got, want) {
				t.Errorf("with a csv format, %s = %q, want it to hold %q", what, got, want)
			}
		}
	}
}
