package dataset_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/dataset/export"
)

// TestWriteFixtures writes parquet fixtures for the Python side (pyarrow,
// datasets, the trainer's loader) when PARLEY_PARQUET_FIXTURE_DIR is set:
//
//	DIR/batches/step-000001.parquet, step-000001.ready   a batch (40 rows)
//	DIR/rollouts/step-00000{1,2}.parquet                 rollouts (10 a step)
//	DIR/curriculum.parquet, DIR/personas.parquet         the bundled samples
//	DIR/export-jsonl/rollouts.jsonl                      export --format jsonl
//	DIR/export-hf/{README.md,data/train-*.parquet}       export --format hf
//	DIR/expected.json                                    what a reader should find
//
// Without the variable it does nothing. It is an external test (package
// dataset_test) because it exports through dataset/export, which imports
// dataset.
func TestWriteFixtures(t *testing.T) {
	dir := os.Getenv("PARLEY_PARQUET_FIXTURE_DIR")
	if dir == "" {
		t.Skip("PARLEY_PARQUET_FIXTURE_DIR not set")
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	rows := dataset.TestBatchRows(1, 40)
	ready, err := dataset.WriteBatch(dataset.RunDir(dir).BatchPath(1), 1, 0, rows)
	must(err)
	var rollouts int
	for step := 1; step <= 2; step++ {
		w, err := dataset.NewRolloutWriter(dataset.RunDir(dir).RolloutsPath(step), dataset.RolloutWriterOptions{RowGroupRows: 4})
		must(err)
		for i := 0; i < 10; i++ {
			must(w.Write(dataset.TestRollout(step, i)))
			rollouts++
		}
		must(w.Close())
	}
	dilemmas, err := dataset.SampleDilemmas()
	must(err)
	must(dataset.WritePromptsParquet(filepath.Join(dir, "curriculum.parquet"), dilemmas))
	must(dataset.WritePersonaPairsParquet(filepath.Join(dir, "personas.parquet"), dataset.PersonaLibrary()))
	js, err := export.Rollouts(context.Background(), export.Options{From: dir, Format: export.FormatJSONL, Out: filepath.Join(dir, "export-jsonl")})
	must(err)
	hf, err := export.Rollouts(context.Background(), export.Options{From: dir, Format: export.FormatHF, Out: filepath.Join(dir, "export-hf"), ShardRows: 8})
	must(err)

	expected := map[string]any{
		"batch": map[string]any{
			"path": dataset.RunDir("").BatchPath(1), "ready": ready,
			"first_row": rows[0], "last_row": rows[len(rows)-1],
		},
		"rollouts":            map[string]any{"files": []string{dataset.RunDir("").RolloutsPath(1), dataset.RunDir("").RolloutsPath(2)}, "rows": rollouts, "first_row": dataset.TestRollout(1, 0)},
		"curriculum_rows":     len(dilemmas),
		"personas_rows":       len(dataset.PersonaLibrary()),
		"export_jsonl_rows":   js.Written,
		"export_hf_rows":      hf.Written,
		"export_hf_shards":    len(hf.Outputs) - 1,
		"export_first_record": export.NewRecord(dataset.TestRollout(1, 0), dataset.ScoreScale{}),
	}
	b, err := json.MarshalIndent(expected, "", "  ")
	must(err)
	must(os.WriteFile(filepath.Join(dir, "expected.json"), b, 0o644))
	t.Logf("fixtures written to %s", dir)
}
