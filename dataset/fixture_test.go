package dataset

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
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
// Without the variable it does nothing.
func TestWriteFixtures(t *testing.T) {
	dir := os.Getenv("PARLEY_PARQUET_FIXTURE_DIR")
	if dir == "" {
		t.Skip("PARLEY_PARQUET_FIXTURE_DIR not set")
	}
	rows := testBatchRows(1, 40)
	ready, err := WriteBatch(RunDir(dir).BatchPath(1), 1, 0, rows)
	mustNoErr(t, err)
	var rollouts int
	for step := 1; step <= 2; step++ {
		w, err := NewRolloutWriter(RunDir(dir).RolloutsPath(step), RolloutWriterOptions{RowGroupRows: 4})
		mustNoErr(t, err)
		for i := 0; i < 10; i++ {
			mustNoErr(t, w.Write(testRollout(step, i)))
			rollouts++
		}
		mustNoErr(t, w.Close())
	}
	dilemmas, err := sampleDilemmas()
	mustNoErr(t, err)
	mustNoErr(t, WritePromptsParquet(filepath.Join(dir, "curriculum.parquet"), dilemmas))
	mustNoErr(t, WritePersonaPairsParquet(filepath.Join(dir, "personas.parquet"), PersonaLibrary()))
	js, err := Export(context.Background(), ExportOptions{From: dir, Format: FormatJSONL, Out: filepath.Join(dir, "export-jsonl")})
	mustNoErr(t, err)
	hf, err := Export(context.Background(), ExportOptions{From: dir, Format: FormatHF, Out: filepath.Join(dir, "export-hf"), ShardRows: 8})
	mustNoErr(t, err)

	expected := map[string]any{
		"batch": map[string]any{
			"path": RunDir("").BatchPath(1), "ready": ready,
			"first_row": rows[0], "last_row": rows[len(rows)-1],
		},
		"rollouts":            map[string]any{"files": []string{RunDir("").RolloutsPath(1), RunDir("").RolloutsPath(2)}, "rows": rollouts, "first_row": testRollout(1, 0)},
		"curriculum_rows":     len(dilemmas),
		"personas_rows":       len(PersonaLibrary()),
		"export_jsonl_rows":   js.Written,
		"export_hf_rows":      hf.Written,
		"export_hf_shards":    len(hf.Outputs) - 1,
		"export_first_record": NewExportRecord(testRollout(1, 0), ScoreScale{}),
	}
	b, err := json.MarshalIndent(expected, "", "  ")
	mustNoErr(t, err)
	mustNoErr(t, os.WriteFile(filepath.Join(dir, "expected.json"), b, 0o644))
	t.Logf("fixtures written to %s", dir)
}
