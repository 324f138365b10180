package dataset

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestParquetReadersRefuseNonParquet gives every parquet reader of the
// package files that are not parquet: each names the file and what is
// wrong with it, never a seek offset.
func TestParquetReadersRefuseNonParquet(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.parquet")
	if err := WritePromptsParquet(good, []Prompt{{ID: "a", Category: CategoryOpenEnded, Task: "t"}}); err != nil {
		t.Fatal(err)
	}
	whole, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	files := []struct {
		name    string
		content []byte
		want    string
	}{
		{"empty.parquet", nil, "empty file (0 bytes), not a parquet file"},
		{"tiny.parquet", []byte("PAR1"), "4 bytes, too short to be a parquet file"},
		{"csv.parquet", []byte("id,category,task\na,open_ended,t\n"), `not a parquet file (it starts with "id,c", not "PAR1")`},
		{"cut.parquet", whole[:len(whole)-10], "not a complete parquet file"},
	}
	readers := []struct {
		name string
		read func(path string) error
	}{
		{"LoadPrompts", func(p string) error { _, err := LoadPrompts(p, LoadOptions{}); return err }},
		{"LoadPersonaPairs", func(p string) error { _, err := LoadPersonaPairs(p); return err }},
		{"ReadRollouts", func(p string) error { return ReadRollouts(p, func(Rollout) error { return nil }) }},
		{"ReadBatch", func(p string) error { _, err := ReadBatch(p); return err }},
	}
	for _, f := range files {
		path := filepath.Join(dir, f.name)
		if err := os.WriteFile(path, f.content, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, r := range readers {
			t.Run(f.name+"/"+r.name, func(t *testing.T) {
				err := r.read(path)
				if err == nil {
					t.Fatalf("%s(%s) = nil error", r.name, f.name)
				}
				msg := err.Error()
				if !strings.Contains(msg, path+": "+f.want) || strings.Contains(msg, "Seek") {
					t.Errorf("%s(%s) error = %q, want %q after the path", r.name, f.name, msg, f.want)
				}
			})
		}
	}
}

func TestIsPandasIndex(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"__index_level_0__", true},
		{"__index_level_12__", true},
		{"__index_level___", false},
		{"__index_level_x__", false},
		{"index", false},
		{"__index_level_0", false},
	}
	for _, tt := range tests {
		if got := IsPandasIndex(tt.name); got != tt.want {
			t.Errorf("IsPandasIndex(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestPandasIndexColumnsIgnored loads tables written the way pandas'
// to_parquet writes them, with the index as __index_level_N__ columns.
func TestPandasIndexColumnsIgnored(t *testing.T) {
	dir := t.TempDir()
	type prompt struct {
		ID       string `parquet:"id"`
		Category string `parquet:"category"`
		Task     string `parquet:"task"`
		Index    int64  `parquet:"__index_level_0__"`
	}
	type pair struct {
		ID     string `parquet:"id"`
		A      string `parquet:"a"`
		B      string `parquet:"b"`
		Index0 int64  `parquet:"__index_level_0__"`
		Index1 string `parquet:"__index_level_1__"`
	}
	pp := filepath.Join(dir, "prompts.parquet")
	mustNoErr(t, writeParquetTable(pp, []prompt{{ID: "a", Category: CategoryOpenEnded, Task: "t", Index: 7}}))
	lp := filepath.Join(dir, "pairs.parquet")
	mustNoErr(t, writeParquetTable(lp, []pair{{ID: "x", A: "Be fast.", B: "Be careful.", Index0: 3, Index1: "k"}}))
	tests := []struct {
		name string
		load func() (int, error)
	}{
		{"curriculum", func() (int, error) { ps, err := LoadPrompts(pp, LoadOptions{}); return len(ps), err }},
		{"persona library", func() (int, error) { ps, err := LoadPersonaPairs(lp); return len(ps), err }},
	}
	for _, tt := range tests {
		n, err := tt.load()
		if err != nil || n != 1 {
			t.Errorf("%s with pandas index columns: %d rows, %v; want 1, no error", tt.name, n, err)
		}
	}
}
