package dataset

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/parleyhq/parley/internal/fsutil"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"
	"go.uber.org/zap"
)

// SchemaVersionKey is the parquet key-value metadata key that holds the
// batch contract's schema version.
const SchemaVersionKey = "schema_version"

// DefaultBatchRowGroup is the number of sequences per row group of a batch
// file when BatchWriterOptions.RowGroupRows is zero.
const DefaultBatchRowGroup = 512

// batchCodec compresses batch files: zstd at its fastest level, which on
// token ids costs under half the CPU of the default level for a file
// within 1% of the size (BenchmarkWriteBatch).
var batchCodec = &zstd.Codec{Level: zstd.SpeedFastest}

// BatchWriterOptions configures a BatchWriter.
type BatchWriterOptions struct {
	// RowGroupRows is the number of sequences per row group; zero means
	// DefaultBatchRowGroup.
	RowGroupRows int
	// Logger logs the finished batch at debug level; nil means no logging.
	Logger *zap.Logger
}

// BatchWriter streams the training sequences of one step to a batch file
// (RunDir.BatchPath; schema version 2, zstd, bounded row groups), hashing
// the bytes as they are written. Close makes the file durable, renames it
// into place and then writes the .ready marker the same atomic way. It is
// not safe for concurrent use.
type BatchWriter struct {
	path          string
	step          int
	policyVersion int
	file          *fsutil.File
	hash          hash.Hash
	pw            *parquet.GenericWriter[BatchRow]
	groupN        int
	pending       int
	rows          int
	tokens        int64
	err           error
	closed        bool
	log           *zap.Logger
}

// NewBatchWriter starts the batch file of step at path (its directory is
// created if needed); its marker goes to ReadyPathOf(path).
func NewBatchWriter(path string, step, policyVersion int, opts BatchWriterOptions) (*BatchWriter, error) {
	if opts.RowGroupRows <= 0 {
		opts.RowGroupRows = DefaultBatchRowGroup
	}
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	if step < 0 {
		return nil, fmt.Errorf("dataset.NewBatchWriter: negative step %d", step)
	}
	f, err := fsutil.MkdirCreate(path, 0o644)
	if err != nil {
		return nil, fmt.Errorf("dataset.NewBatchWriter: %w", err)
	}
	h := sha256.New()
	pw := parquet.NewGenericWriter[BatchRow](io.MultiWriter(f, h),
		parquet.Compression(batchCodec),
		parquet.KeyValueMetadata(SchemaVersionKey, strconv.Itoa(SchemaVersion)),
	)
	return &BatchWriter{
		path: path, step: step, policyVersion: policyVersion,
		file: f, hash: h, pw: pw, groupN: opts.RowGroupRows, log: log,
	}, nil
}

// Write appends rows after checking each: its step is the writer's, its
// lists have equal lengths and its mask is 0 or 1. A rejected row fails
// the whole batch (Close then discards it).
func (w *BatchWriter) Write(rows ...BatchRow) error {
	if w.closed {
		return errors.New("dataset.BatchWriter.Write: writer is closed")
	}
	if w.err != nil {
		return fmt.Errorf("dataset.BatchWriter.Write: earlier error: %w", w.err)
	}
	for i := range rows {
		if err := checkBatchRow(&rows[i]); err != nil {
			w.err = fmt.Errorf("row %d: %w", w.rows+i, err)
			return fmt.Errorf("dataset.BatchWriter.Write: step %d: %w", w.step, w.err)
		}
		if int(rows[i].Step) != w.step {
			w.err = fmt.Errorf("row %d: step %d, want %d", w.rows+i, rows[i].Step, w.step)
			return fmt.Errorf("dataset.BatchWriter.Write: step %d: %w", w.step, w.err)
		}
	}
	for len(rows) > 0 {
		n := min(len(rows), w.groupN-w.pending)
		if _, err := w.pw.Write(rows[:n]); err != nil {
			w.err = err
			return fmt.Errorf("dataset.BatchWriter.Write: step %d: %w", w.step, err)
		}
		for i := range rows[:n] {
			w.tokens += int64(len(rows[i].InputIDs))
		}
		w.pending += n
		w.rows += n
		rows = rows[n:]
		if w.pending >= w.groupN {
			if err := w.pw.Flush(); err != nil {
				w.err = err
				return fmt.Errorf("dataset.BatchWriter.Write: step %d: flush: %w", w.step, err)
			}
			w.pending = 0
		}
	}
	return nil
}

// Close finishes the parquet file, fsyncs it, renames it into place, then
// writes the .ready marker atomically and returns it. After a failed Write
// it discards the file and returns the error. Later calls return an error.
func (w *BatchWriter) Close() (Ready, error) {
	if w.closed {
		return Ready{}, errors.New("dataset.BatchWriter.Close: writer is closed")
	}
	w.closed = true
	if w.err != nil {
		w.file.Abort()
		return Ready{}, fmt.Errorf("dataset.BatchWriter.Close: step %d discarded: %w", w.step, w.err)
	}
	if err := w.pw.Close(); err != nil {
		w.file.Abort()
		return Ready{}, fmt.Errorf("dataset.BatchWriter.Close: step %d: %w", w.step, err)
	}
	if err := w.file.Commit(); err != nil {
		return Ready{}, fmt.Errorf("dataset.BatchWriter.Close: step %d: %w", w.step, err)
	}
	ready := Ready{
		SchemaVersion: SchemaVersion,
		Step:          w.step,
		PolicyVersion: w.policyVersion,
		Rows:          w.rows,
		Tokens:        w.tokens,
		SHA256:        hex.EncodeToString(w.hash.Sum(nil)),
	}
	data, err := json.MarshalIndent(ready, "", "  ")
	if err != nil {
		return Ready{}, fmt.Errorf("dataset.BatchWriter.Close: %w", err)
	}
	if err := fsutil.WriteFileAtomic(ReadyPathOf(w.path), append(data, '\n'), 0o644); err != nil {
		return Ready{}, fmt.Errorf("dataset.BatchWriter.Close: step %d: ready marker: %w", w.step, err)
	}
	w.log.Debug("batch written", zap.Int("step", w.step), zap.Int("rows", w.rows), zap.Int64("tokens", w.tokens))
	return ready, nil
}

// Abort discards the batch file; no marker is written. It does nothing
// after Close.
func (w *BatchWriter) Abort() {
	if w.closed {
		return
	}
	w.closed = true
	w.file.Abort()
}

// WriteBatch writes the batch of one step to path, then its .ready marker
// (ReadyPathOf), each to a temporary name, fsynced and renamed. The marker
// holds the file's sha256, its rows and its tokens (the sum of the
// input_ids lengths).
func WriteBatch(path string, step int, policyVersion int, rows []BatchRow) (Ready, error) {
	w, err := NewBatchWriter(path, step, policyVersion, BatchWriterOptions{})
	if err != nil {
		return Ready{}, err
	}
	if err := w.Write(rows...); err != nil {
		w.Abort()
		return Ready{}, err
	}
	return w.Close()
}

// checkBatchRow checks the per-row invariants of the contract.
func checkBatchRow(r *BatchRow) error {
	n := len(r.InputIDs)
	if n == 0 {
		return errors.New("input_ids is empty")
	}
	if len(r.LossMask) != n {
		return fmt.Errorf("loss_mask has %d tokens, input_ids %d", len(r.LossMask), n)
	}
	if len(r.InferenceLogprobs) != n {
		return fmt.Errorf("inference_logprobs has %d tokens, input_ids %d", len(r.InferenceLogprobs), n)
	}
	if len(r.Advantages) != n {
		return fmt.Errorf("advantages has %d tokens, input_ids %d", len(r.Advantages), n)
	}
	for i, m := range r.LossMask {
		if m != 0 && m != 1 {
			return fmt.Errorf("loss_mask[%d] = %d, want 0 or 1", i, m)
		}
	}
	return nil
}

// batchColumns is the batch contract, schema version 2: version 1's
// columns plus kind and advantage (optional, so version-1 files pass).
var batchColumns = []columnSpec{
	{name: "run_id", types: []string{"string"}},
	{name: "sample_id", types: []string{"string"}},
	{name: "group_id", types: []string{"string"}},
	{name: "rollout_id", types: []string{"string"}},
	{name: "prompt_id", types: []string{"string"}},
	{name: "step", types: []string{"int32"}},
	{name: "policy_version", types: []string{"int32"}},
	{name: "env", types: []string{"string"}},
	{name: "role", types: []string{"string"}},
	{name: "kind", types: []string{"string"}, optional: true},
	{name: "input_ids", types: []string{"list<int32>"}},
	{name: "loss_mask", types: []string{"list<int8>", "list<bool>"}},
	{name: "inference_logprobs", types: []string{"list<float32>"}},
	{name: "advantages", types: []string{"list<float32>"}},
	{name: "reward", types: []string{"float32"}},
	{name: "advantage", types: []string{"float32"}, optional: true},
	{name: "temperature", types: []string{"float32"}},
}

// batchV2Columns are required from schema version 2 on.
var batchV2Columns = []string{"kind", "advantage"}

// checkBatchSchema checks an open batch file against the contract: the
// schema_version metadata and every required column with its type.
// Extra columns are allowed.
func checkBatchSchema(path string, pf *parquet.File) error {
	v, ok := pf.Lookup(SchemaVersionKey)
	if !ok {
		return fmt.Errorf("%s: no %q key-value metadata (want %d to %d)", path, SchemaVersionKey, MinSchemaVersion, SchemaVersion)
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < MinSchemaVersion || n > SchemaVersion {
		return fmt.Errorf("%s: schema_version %q, want %d to %d", path, v, MinSchemaVersion, SchemaVersion)
	}
	if n >= 2 {
		have := map[string]bool{}
		for _, f := range pf.Schema().Fields() {
			have[f.Name()] = true
		}
		for _, name := range batchV2Columns {
			if !have[name] {
				return fmt.Errorf("%s: missing column %q (schema_version %d)", path, name, n)
			}
		}
	}
	return checkColumns(path, pf.Schema(), batchColumns, false)
}

// ReadBatch reads a batch file after checking it against the contract
// (schema_version metadata, every column with its type) and checks every
// row's invariants (equal list lengths, mask in {0, 1}); errors name the
// file, the column (found and wanted type) or the row (from 0).
func ReadBatch(path string) ([]BatchRow, error) {
	var rows []BatchRow
	err := ReadBatchFunc(path, func(r BatchRow) error {
		rows = append(rows, r)
		return nil
	})
	return rows, err
}

// ReadBatchFunc is ReadBatch streaming: it calls fn on each row, decoding
// a few rows at a time. An error from fn is returned as is.
func ReadBatchFunc(path string, fn func(BatchRow) error) error {
	f, pf, err := OpenParquet(path)
	if err != nil {
		return fmt.Errorf("dataset.ReadBatch: %w", err)
	}
	err = checkBatchSchema(path, pf)
	f.Close()
	if err != nil {
		return fmt.Errorf("dataset.ReadBatch: %w", err)
	}
	row := 0
	err = streamParquet(path, func(r BatchRow) error {
		if err := checkBatchRow(&r); err != nil {
			return fmt.Errorf("dataset.ReadBatch: %s: row %d: %w", path, row, err)
		}
		row++
		return fn(r)
	})
	var stop fnError
	if errors.As(err, &stop) {
		return stop.err
	}
	if err != nil {
		return fmt.Errorf("dataset.ReadBatch: %w", err)
	}
	return nil
}

// ReadReady reads a .ready marker, rejecting unknown fields and other
// schema versions.
func ReadReady(path string) (Ready, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Ready{}, fmt.Errorf("dataset.ReadReady: %w", err)
	}
	var r Ready
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return Ready{}, fmt.Errorf("dataset.ReadReady: %s: %w", path, err)
	}
	if r.SchemaVersion < MinSchemaVersion || r.SchemaVersion > SchemaVersion {
		return Ready{}, fmt.Errorf("dataset.ReadReady: %s: schema_version %d, want %d to %d", path, r.SchemaVersion, MinSchemaVersion, SchemaVersion)
	}
	return r, nil
}

// VerifyBatch checks step's batch file at path against its .ready marker:
// the marker's step, the file's sha256, its schema (as ReadBatch) and its
// row count. It does not decode the rows.
func VerifyBatch(path string, step int) (Ready, error) {
	ready, err := ReadReady(ReadyPathOf(path))
	if err != nil {
		return Ready{}, fmt.Errorf("dataset.VerifyBatch: %w", err)
	}
	if ready.Step != step {
		return Ready{}, fmt.Errorf("dataset.VerifyBatch: %s: marker step %d, want %d", ReadyPathOf(path), ready.Step, step)
	}
	sum, err := fileSHA256(path)
	if err != nil {
		return Ready{}, fmt.Errorf("dataset.VerifyBatch: %w", err)
	}
	if sum != ready.SHA256 {
		return Ready{}, fmt.Errorf("dataset.VerifyBatch: %s: sha256 %s, marker says %s", path, sum, ready.SHA256)
	}
	f, pf, err := OpenParquet(path)
	if err != nil {
		return Ready{}, fmt.Errorf("dataset.VerifyBatch: %w", err)
	}
	defer f.Close()
	if err := checkBatchSchema(path, pf); err != nil {
		return Ready{}, fmt.Errorf("dataset.VerifyBatch: %w", err)
	}
	if pf.NumRows() != int64(ready.Rows) {
		return Ready{}, fmt.Errorf("dataset.VerifyBatch: %s: %d rows, marker says %d", path, pf.NumRows(), ready.Rows)
	}
	return ready, nil
}

// RemoveReady removes the .ready marker of the batch file at path
// (ReadyPathOf) and fsyncs its folder, so that no trainer takes the batch
// before it is written again: a reader sees the marker whole or not at
// all, and after a crash it stays removed. A missing marker is no error.
func RemoveReady(path string) error {
	p := ReadyPathOf(path)
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("dataset.RemoveReady: %w", err)
	}
	if err := fsutil.SyncDir(filepath.Dir(p)); err != nil {
		return fmt.Errorf("dataset.RemoveReady: %s: %w", filepath.Dir(p), err)
	}
	return nil
}

// fileSHA256 returns the hex sha256 of a file.
func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
