package dataset

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"
)

func TestPaths(t *testing.T) {
	d := RunDir("r")
	tests := []struct {
		got, want string
	}{
		{d.BatchPath(42), filepath.Join("r", "batches", "step-000042.parquet")},
		{d.ReadyPath(42), filepath.Join("r", "batches", "step-000042.ready")},
		{ReadyPathOf(d.BatchPath(42)), filepath.Join("r", "batches", "step-000042.ready")},
		{d.RolloutsPath(0), filepath.Join("r", "rollouts", "step-000000.parquet")},
		{d.BatchPath(1234567), filepath.Join("r", "batches", "step-1234567.parquet")},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("path = %q, want %q", tt.got, tt.want)
		}
	}
}

func TestWriteBatchRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 511, 512, 1300} {
		dir := filepath.Join(t.TempDir(), "batches")
		rows := testBatchRows(42, n)
		ready, err := WriteBatch(batchPath(dir, 42), 42, 41, rows)
		mustNoErr(t, err)
		var tokens int64
		for _, r := range rows {
			tokens += int64(len(r.InputIDs))
		}
		data, err := os.ReadFile(batchPath(dir, 42))
		mustNoErr(t, err)
		sum := sha256.Sum256(data)
		want := Ready{SchemaVersion: SchemaVersion, Step: 42, PolicyVersion: 41, Rows: n, Tokens: tokens, SHA256: hex.EncodeToString(sum[:])}
		if ready != want {
			t.Errorf("WriteBatch(%d rows) = %+v, want %+v", n, ready, want)
		}
		onDisk, err := ReadReady(readyPath(dir, 42))
		if err != nil || onDisk != want {
			t.Errorf("ReadReady = %+v, %v; want %+v", onDisk, err, want)
		}
		var raw map[string]any
		mustNoErr(t, json.Unmarshal(mustRead(t, readyPath(dir, 42)), &raw))
		for _, k := range []string{"schema_version", "step", "policy_version", "rows", "tokens", "sha256"} {
			if _, ok := raw[k]; !ok {
				t.Errorf("ready marker lacks %q: %v", k, raw)
			}
		}
		if v, err := VerifyBatch(batchPath(dir, 42), 42); err != nil || v != want {
			t.Errorf("VerifyBatch = %+v, %v; want %+v", v, err, want)
		}
		got, err := ReadBatch(batchPath(dir, 42))
		mustNoErr(t, err)
		if len(got) != n || (n > 0 && !reflect.DeepEqual(got, rows)) {
			t.Errorf("ReadBatch(%d rows) differs from what was written", n)
		}
		_, pf, closeF := openT(t, batchPath(dir, 42))
		if v, _ := pf.Lookup("schema_version"); v != "2" {
			t.Errorf("schema_version metadata = %q, want 2", v)
		}
		wantRGs := (n + DefaultBatchRowGroup - 1) / DefaultBatchRowGroup
		if len(pf.RowGroups()) != wantRGs {
			t.Errorf("%d rows: %d row groups, want %d", n, len(pf.RowGroups()), wantRGs)
		}
		checkZstd(t, pf)
		closeF()
		if left := tempFiles(t, dir); len(left) > 0 {
			t.Errorf("temporary files left: %v", left)
		}
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	mustNoErr(t, err)
	return b
}

func openT(t *testing.T, path string) (*os.File, *parquet.File, func()) {
	t.Helper()
	f, pf, err := OpenParquet(path)
	mustNoErr(t, err)
	return f, pf, func() { f.Close() }
}

func TestWriteBatchRejectsBadRows(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(r []BatchRow)
		want   string
	}{
		{"mask 2", func(r []BatchRow) { r[2].LossMask[1] = 2 }, "row 2: loss_mask[1] = 2, want 0 or 1"},
		{"short mask", func(r []BatchRow) { r[1].LossMask = r[1].LossMask[:2] }, "row 1: loss_mask has 2 tokens"},
		{"short logprobs", func(r []BatchRow) { r[3].InferenceLogprobs = nil }, "row 3: inference_logprobs has 0 tokens"},
		{"short advantages", func(r []BatchRow) { r[0].Advantages = r[0].Advantages[1:] }, "row 0: advantages has"},
		{"empty", func(r []BatchRow) { r[0] = BatchRow{Step: 3} }, "row 0: input_ids is empty"},
		{"wrong step", func(r []BatchRow) { r[1].Step = 4 }, "row 1: step 4, want 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows := testBatchRows(3, 4)
			tt.mutate(rows)
			dir := t.TempDir()
			_, err := WriteBatch(batchPath(dir, 3), 3, 2, rows)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("WriteBatch(%s) = %v, want an error containing %q", tt.name, err, tt.want)
			}
			if left := tempFiles(t, dir); len(left) > 0 {
				t.Errorf("after a rejected batch, temporary files left: %v", left)
			}
			for _, p := range []string{batchPath(dir, 3), readyPath(dir, 3)} {
				if _, err := os.Stat(p); !os.IsNotExist(err) {
					t.Errorf("after a rejected batch, Stat(%q) = %v, want not exist", p, err)
				}
			}
		})
	}
}

func TestBatchWriterStreaming(t *testing.T) {
	dir := t.TempDir()
	w, err := NewBatchWriter(batchPath(dir, 7), 7, 6, BatchWriterOptions{RowGroupRows: 10})
	mustNoErr(t, err)
	rows := testBatchRows(7, 35)
	for i := 0; i < len(rows); i += 4 {
		mustNoErr(t, w.Write(rows[i:min(i+4, len(rows))]...))
	}
	if _, err := os.Stat(readyPath(dir, 7)); !os.IsNotExist(err) {
		t.Errorf("ready marker exists before Close: %v", err)
	}
	ready, err := w.Close()
	mustNoErr(t, err)
	if ready.Rows != 35 {
		t.Errorf("Close() rows = %d, want 35", ready.Rows)
	}
	if _, err := w.Close(); err == nil {
		t.Error("second Close = nil error, want one")
	}
	_, pf, closeF := openT(t, batchPath(dir, 7))
	if len(pf.RowGroups()) != 4 {
		t.Errorf("row groups = %d, want 4", len(pf.RowGroups()))
	}
	closeF()
	seen := 0
	mustNoErr(t, ReadBatchFunc(batchPath(dir, 7), func(r BatchRow) error {
		if !reflect.DeepEqual(r, rows[seen]) {
			t.Errorf("row %d differs", seen)
		}
		seen++
		return nil
	}))
	if seen != 35 {
		t.Errorf("ReadBatchFunc saw %d rows, want 35", seen)
	}
	// Abort leaves nothing.
	w, err = NewBatchWriter(batchPath(dir, 8), 8, 7, BatchWriterOptions{})
	mustNoErr(t, err)
	mustNoErr(t, w.Write(testBatchRows(8, 3)...))
	w.Abort()
	if left := tempFiles(t, dir); len(left) > 0 {
		t.Errorf("after Abort, temporary files left: %v", left)
	}
	for _, p := range []string{batchPath(dir, 8), readyPath(dir, 8)} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("after Abort, Stat(%q) = %v, want not exist", p, err)
		}
	}
}

// writeRaw writes rows of any struct with parquet-go, as another producer
// might, with the given schema_version metadata ("" for none).
func writeRaw[T any](t *testing.T, path string, rows []T, version string) {
	t.Helper()
	f, err := os.Create(path)
	mustNoErr(t, err)
	defer f.Close()
	opts := []parquet.WriterOption{parquet.Compression(&zstd.Codec{})}
	if version != "" {
		opts = append(opts, parquet.KeyValueMetadata("schema_version", version))
	}
	w := parquet.NewGenericWriter[T](f, opts...)
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	mustNoErr(t, w.Close())
}

// Other layouts of a batch, each with one thing wrong but the first.
type (
	batchBoolMask struct {
		RunID             string    `parquet:"run_id"`
		SampleID          string    `parquet:"sample_id"`
		GroupID           string    `parquet:"group_id"`
		RolloutID         string    `parquet:"rollout_id"`
		PromptID          string    `parquet:"prompt_id"`
		Step              int32     `parquet:"step"`
		PolicyVersion     int32     `parquet:"policy_version"`
		Env               string    `parquet:"env"`
		Role              string    `parquet:"role"`
		InputIDs          []int32   `parquet:"input_ids,list"`
		LossMask          []bool    `parquet:"loss_mask,list"`
		InferenceLogprobs []float32 `parquet:"inference_logprobs,list"`
		Advantages        []float32 `parquet:"advantages,list"`
		Reward            float32   `parquet:"reward"`
		Temperature       float32   `parquet:"temperature"`
	}
	batchNoAdvantages struct {
		RunID             string    `parquet:"run_id"`
		SampleID          string    `parquet:"sample_id"`
		GroupID           string    `parquet:"group_id"`
		RolloutID         string    `parquet:"rollout_id"`
		PromptID          string    `parquet:"prompt_id"`
		Step              int32     `parquet:"step"`
		PolicyVersion     int32     `parquet:"policy_version"`
		Env               string    `parquet:"env"`
		Role              string    `parquet:"role"`
		InputIDs          []int32   `parquet:"input_ids,list"`
		LossMask          []int8    `parquet:"loss_mask,list"`
		InferenceLogprobs []float32 `parquet:"inference_logprobs,list"`
		Reward            float32   `parquet:"reward"`
		Temperature       float32   `parquet:"temperature"`
	}
	batchInt64IDs struct {
		RunID             string    `parquet:"run_id"`
		SampleID          string    `parquet:"sample_id"`
		GroupID           string    `parquet:"group_id"`
		RolloutID         string    `parquet:"rollout_id"`
		PromptID          string    `parquet:"prompt_id"`
		Step              int32     `parquet:"step"`
		PolicyVersion     int32     `parquet:"policy_version"`
		Env               string    `parquet:"env"`
		Role              string    `parquet:"role"`
		InputIDs          []int64   `parquet:"input_ids,list"`
		LossMask          []int8    `parquet:"loss_mask,list"`
		InferenceLogprobs []float32 `parquet:"inference_logprobs,list"`
		Advantages        []float32 `parquet:"advantages,list"`
		Reward            float32   `parquet:"reward"`
		Temperature       float32   `parquet:"temperature"`
	}
	batchInt32Mask struct {
		RunID             string    `parquet:"run_id"`
		SampleID          string    `parquet:"sample_id"`
		GroupID           string    `parquet:"group_id"`
		RolloutID         string    `parquet:"rollout_id"`
		PromptID          string    `parquet:"prompt_id"`
		Step              int32     `parquet:"step"`
		PolicyVersion     int32     `parquet:"policy_version"`
		Env               string    `parquet:"env"`
		Role              string    `parquet:"role"`
		InputIDs          []int32   `parquet:"input_ids,list"`
		LossMask          []int32   `parquet:"loss_mask,list"`
		InferenceLogprobs []float32 `parquet:"inference_logprobs,list"`
		Advantages        []float32 `parquet:"advantages,list"`
		Reward            float32   `parquet:"reward"`
		Temperature       float32   `parquet:"temperature"`
	}
	batchFloat64Reward struct {
		RunID             string    `parquet:"run_id"`
		SampleID          string    `parquet:"sample_id"`
		GroupID           string    `parquet:"group_id"`
		RolloutID         string    `parquet:"rollout_id"`
		PromptID          string    `parquet:"prompt_id"`
		Step              int32     `parquet:"step"`
		PolicyVersion     int32     `parquet:"policy_version"`
		Env               string    `parquet:"env"`
		Role              string    `parquet:"role"`
		InputIDs          []int32   `parquet:"input_ids,list"`
		LossMask          []int8    `parquet:"loss_mask,list"`
		InferenceLogprobs []float32 `parquet:"inference_logprobs,list"`
		Advantages        []float32 `parquet:"advantages,list"`
		Reward            float64   `parquet:"reward"`
		Temperature       float32   `parquet:"temperature"`
	}
	batchRepeatedIDs struct {
		RunID             string    `parquet:"run_id"`
		SampleID          string    `parquet:"sample_id"`
		GroupID           string    `parquet:"group_id"`
		RolloutID         string    `parquet:"rollout_id"`
		PromptID          string    `parquet:"prompt_id"`
		Step              int32     `parquet:"step"`
		PolicyVersion     int32     `parquet:"policy_version"`
		Env               string    `parquet:"env"`
		Role              string    `parquet:"role"`
		InputIDs          []int32   `parquet:"input_ids"`
		LossMask          []int8    `parquet:"loss_mask,list"`
		InferenceLogprobs []float32 `parquet:"inference_logprobs,list"`
		Advantages        []float32 `parquet:"advantages,list"`
		Reward            float32   `parquet:"reward"`
		Temperature       float32   `parquet:"temperature"`
	}
)

func TestReadBatchRejects(t *testing.T) {
	dir := t.TempDir()
	rows := testBatchRows(1, 3)
	p := func(name string) string { return filepath.Join(dir, name) }

	writeRaw(t, p("v3.parquet"), rows, "3")
	writeRaw(t, p("v2nokind.parquet"), []batchBoolMask{{Step: 1, InputIDs: []int32{1}, LossMask: []bool{true}, InferenceLogprobs: []float32{0}, Advantages: []float32{0}}}, "2")
	writeRaw(t, p("nometa.parquet"), rows, "")
	writeRaw(t, p("noadv.parquet"), []batchNoAdvantages{{Step: 1, InputIDs: []int32{1}, LossMask: []int8{1}, InferenceLogprobs: []float32{0}}}, "1")
	writeRaw(t, p("int64ids.parquet"), []batchInt64IDs{{Step: 1, InputIDs: []int64{1, 2}}}, "1")
	writeRaw(t, p("int32mask.parquet"), []batchInt32Mask{{Step: 1, LossMask: []int32{0, 1}}}, "1")
	writeRaw(t, p("f64reward.parquet"), []batchFloat64Reward{{Step: 1, Reward: 1}}, "1")
	writeRaw(t, p("repeated.parquet"), []batchRepeatedIDs{{Step: 1, InputIDs: []int32{1}}}, "1")
	bad := testBatchRows(1, 4)
	bad[2].LossMask[0] = 3
	writeRaw(t, p("badmask.parquet"), bad, "1")
	bad = testBatchRows(1, 4)
	bad[1].Advantages = append(bad[1].Advantages, 0)
	writeRaw(t, p("badlen.parquet"), bad, "1")
	mustNoErr(t, os.WriteFile(p("garbage.parquet"), []byte("PAR1 nope"), 0o644))

	tests := []struct {
		file string
		want []string
	}{
		{"v3.parquet", []string{p("v3.parquet"), `schema_version "3", want 1 to 2`}},
		{"v2nokind.parquet", []string{p("v2nokind.parquet"), `missing column "kind" (schema_version 2)`}},
		{"nometa.parquet", []string{p("nometa.parquet"), `no "schema_version" key-value metadata`}},
		{"noadv.parquet", []string{p("noadv.parquet"), `missing column "advantages" (want list<float32>)`}},
		{"int64ids.parquet", []string{p("int64ids.parquet"), `column "input_ids" has type list<int64>, want list<int32>`}},
		{"int32mask.parquet", []string{p("int32mask.parquet"), `column "loss_mask" has type list<int32>, want list<int8> or list<bool>`}},
		{"f64reward.parquet", []string{p("f64reward.parquet"), `column "reward" has type float64, want float32`}},
		{"repeated.parquet", []string{p("repeated.parquet"), `column "input_ids" has type repeated int32, want list<int32>`}},
		{"badmask.parquet", []string{p("badmask.parquet"), "row 2: loss_mask[0] = 3, want 0 or 1"}},
		{"badlen.parquet", []string{p("badlen.parquet"), "row 1: advantages has"}},
		{"garbage.parquet", []string{p("garbage.parquet"), "too short to be a parquet file"}},
		{"missing.parquet", []string{p("missing.parquet"), "no such file"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got, err := ReadBatch(p(tt.file))
			if err == nil {
				t.Fatalf("ReadBatch(%q) = %d rows, nil error; want an error", tt.file, len(got))
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("ReadBatch(%q) error = %q, want it to contain %q", tt.file, err, w)
				}
			}
		})
	}
}

func TestReadBatchBoolMask(t *testing.T) {
	// The contract allows list<bool> masks, as a Python producer may write.
	path := filepath.Join(t.TempDir(), "bool.parquet")
	writeRaw(t, path, []batchBoolMask{{Step: 1, Role: "A", InputIDs: []int32{5, 6, 7}, LossMask: []bool{false, true, true},
		InferenceLogprobs: []float32{0, -1, -2}, Advantages: []float32{0, 0.5, 0.5}, Reward: 1}}, "1")
	got, err := ReadBatch(path)
	mustNoErr(t, err)
	want := []BatchRow{{Step: 1, Role: "A", InputIDs: []int32{5, 6, 7}, LossMask: []int8{0, 1, 1},
		InferenceLogprobs: []float32{0, -1, -2}, Advantages: []float32{0, 0.5, 0.5}, Reward: 1}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ReadBatch(bool mask) = %+v, want %+v", got, want)
	}
}

func TestVerifyBatch(t *testing.T) {
	tests := []struct {
		name   string
		tamper func(t *testing.T, dir string)
		want   string
	}{
		{"ok", func(*testing.T, string) {}, ""},
		{"flipped byte", func(t *testing.T, dir string) {
			b := mustRead(t, batchPath(dir, 5))
			b[len(b)/2] ^= 0xff
			mustNoErr(t, os.WriteFile(batchPath(dir, 5), b, 0o644))
		}, "sha256"},
		{"no marker", func(t *testing.T, dir string) { mustNoErr(t, os.Remove(readyPath(dir, 5))) }, "no such file"},
		{"no batch", func(t *testing.T, dir string) { mustNoErr(t, os.Remove(batchPath(dir, 5))) }, "no such file"},
		{"marker of another step", func(t *testing.T, dir string) {
			editReady(t, dir, func(r map[string]any) { r["step"] = 6 })
		}, "marker step 6, want 5"},
		{"marker version 2", func(t *testing.T, dir string) {
			editReady(t, dir, func(r map[string]any) { r["schema_version"] = 3 })
		}, "schema_version 3, want 1 to 2"},
		{"marker unknown field", func(t *testing.T, dir string) {
			editReady(t, dir, func(r map[string]any) { r["extra"] = true })
		}, `unknown field "extra"`},
		{"marker rows", func(t *testing.T, dir string) {
			editReady(t, dir, func(r map[string]any) { r["rows"] = 99 })
		}, "10 rows, marker says 99"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			_, err := WriteBatch(batchPath(dir, 5), 5, 4, testBatchRows(5, 10))
			mustNoErr(t, err)
			tt.tamper(t, dir)
			_, err = VerifyBatch(batchPath(dir, 5), 5)
			if tt.want == "" {
				if err != nil {
					t.Errorf("VerifyBatch = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("VerifyBatch(%s) = %v, want an error containing %q", tt.name, err, tt.want)
			}
		})
	}
}

func editReady(t *testing.T, dir string, edit func(map[string]any)) {
	t.Helper()
	var r map[string]any
	mustNoErr(t, json.Unmarshal(mustRead(t, readyPath(dir, 5)), &r))
	edit(r)
	b, err := json.Marshal(r)
	mustNoErr(t, err)
	mustNoErr(t, os.WriteFile(readyPath(dir, 5), b, 0o644))
}
