package dataset

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// TestReadBeforeVersions (issue 19, item 3): a batch written before rows
// carried token_versions still reads, with none.
func TestReadBeforeVersions(t *testing.T) {
	type oldRow struct { // BatchRow of schema version 2 before token_versions
		RunID             string    `parquet:"run_id"`
		SampleID          string    `parquet:"sample_id"`
		GroupID           string    `parquet:"group_id"`
		RolloutID         string    `parquet:"rollout_id"`
		PromptID          string    `parquet:"prompt_id"`
		Step              int32     `parquet:"step"`
		PolicyVersion     int32     `parquet:"policy_version"`
		Env               string    `parquet:"env"`
		Role              string    `parquet:"role"`
		Kind              string    `parquet:"kind"`
		InputIDs          []int32   `parquet:"input_ids,list"`
		LossMask          []int8    `parquet:"loss_mask,list"`
		InferenceLogprobs []float32 `parquet:"inference_logprobs,list"`
		Advantages        []float32 `parquet:"advantages,list"`
		Reward            float32   `parquet:"reward"`
		Advantage         float32   `parquet:"advantage"`
		Temperature       float32   `parquet:"temperature"`
	}
	path := filepath.Join(t.TempDir(), "old.parquet")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[oldRow](f, parquet.KeyValueMetadata(SchemaVersionKey, "2"))
	if _, err := w.Write([]oldRow{{RunID: "r", Step: 2, PolicyVersion: 1, Kind: KindDialogue, InputIDs: []int32{1, 2}, LossMask: []int8{0, 1},
		InferenceLogprobs: []float32{0, -1}, Advantages: []float32{0, 1}}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	rows, err := ReadBatch(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].PolicyVersion != 1 || len(rows[0].TokenVersions) != 0 || len(rows[0].InputIDs) != 2 {
		t.Errorf("ReadBatch(old file) = %+v, want the row without token versions", rows)
	}
}
