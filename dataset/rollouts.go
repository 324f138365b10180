package dataset

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/parleyhq/parley/internal/fsutil"
	"github.com/parquet-go/parquet-go"
	"go.uber.org/zap"
)

// DefaultRolloutRowGroup is the number of rollouts per parquet row group
// when RolloutWriterOptions.RowGroupRows is zero.
const DefaultRolloutRowGroup = 256

// RolloutWriterOptions configures a RolloutWriter.
type RolloutWriterOptions struct {
	// RowGroupRows is the number of rows buffered before a row group is
	// flushed; it bounds the writer's memory. Zero means
	// DefaultRolloutRowGroup.
	RowGroupRows int
	// Metadata is written as parquet key-value metadata.
	Metadata map[string]string
	// Scale, when not zero, is recorded as the file's ScoreScaleKey.
	Scale ScoreScale
	// Logger logs flushes at debug level; nil means no logging.
	Logger *zap.Logger
}

// RolloutWriter streams rollouts to a zstd parquet file, one row per
// Rollout, in bounded memory. It writes path+".tmp" and renames it onto
// path on Close, after fsyncing the file (and the directory after the
// rename), so an interrupted process leaves either no file or a complete
// one. It is not safe for concurrent use.
type RolloutWriter struct {
	path    string
	file    *fsutil.File
	pw      *parquet.GenericWriter[Rollout]
	groupN  int
	pending int
	rows    int64
	err     error // sticky write error
	closed  bool
	log     *zap.Logger
}

// NewRolloutWriter creates path+".tmp" (and path's directory if needed)
// and returns a writer for it.
func NewRolloutWriter(path string, opts RolloutWriterOptions) (*RolloutWriter, error) {
	if opts.RowGroupRows <= 0 {
		opts.RowGroupRows = DefaultRolloutRowGroup
	}
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	f, err := fsutil.MkdirCreate(path, 0o644)
	if err != nil {
		return nil, fmt.Errorf("dataset.NewRolloutWriter: %w", err)
	}
	wopts := []parquet.WriterOption{
		parquet.Compression(&parquet.Zstd),
		parquet.KeyValueMetadata(SchemaVersionKey, strconv.Itoa(SchemaVersion)),
	}
	for k, v := range opts.Metadata {
		wopts = append(wopts, parquet.KeyValueMetadata(k, v))
	}
	for k, v := range opts.Scale.metadata() {
		wopts = append(wopts, parquet.KeyValueMetadata(k, v))
	}
	return &RolloutWriter{
		path:   path,
		file:   f,
		pw:     parquet.NewGenericWriter[Rollout](f, wopts...),
		groupN: opts.RowGroupRows,
		log:    log,
	}, nil
}

// Write appends rollouts, flushing a row group every RowGroupRows rows.
// After an error every later Write fails; Close then discards the file.
func (w *RolloutWriter) Write(rollouts ...Rollout) error {
	if w.closed {
		return errors.New("dataset.RolloutWriter.Write: writer is closed")
	}
	if w.err != nil {
		return fmt.Errorf("dataset.RolloutWriter.Write: earlier error: %w", w.err)
	}
	for len(rollouts) > 0 {
		n := min(len(rollouts), w.groupN-w.pending)
		if _, err := w.pw.Write(rollouts[:n]); err != nil {
			w.err = err
			return fmt.Errorf("dataset.RolloutWriter.Write: %s: %w", w.path, err)
		}
		w.pending += n
		w.rows += int64(n)
		rollouts = rollouts[n:]
		if w.pending >= w.groupN {
			if err := w.pw.Flush(); err != nil {
				w.err = err
				return fmt.Errorf("dataset.RolloutWriter.Write: %s: flush: %w", w.path, err)
			}
			w.log.Debug("rollout row group flushed", zap.String("path", w.path), zap.Int("rows", w.pending))
			w.pending = 0
		}
	}
	return nil
}

// Rows returns the number of rollouts written so far.
func (w *RolloutWriter) Rows() int64 { return w.rows }

// Close writes the parquet footer, fsyncs and renames the file onto its
// final path, so that it holds every rollout written. If an earlier Write
// failed, Close discards the temporary file and returns that error. Close
// is safe to call more than once and after Abort; later calls return nil.
func (w *RolloutWriter) Close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	if w.err != nil {
		w.file.Abort()
		return fmt.Errorf("dataset.RolloutWriter.Close: %s: discarded after write error: %w", w.path, w.err)
	}
	if err := w.pw.Close(); err != nil {
		w.file.Abort()
		return fmt.Errorf("dataset.RolloutWriter.Close: %s: %w", w.path, err)
	}
	if err := w.file.Commit(); err != nil {
		return fmt.Errorf("dataset.RolloutWriter.Close: %s: %w", w.path, err)
	}
	return nil
}

// Abort discards the temporary file, leaving the final path untouched. It
// is safe to call after Close (then it does nothing).
func (w *RolloutWriter) Abort() {
	if w.closed {
		return
	}
	w.closed = true
	w.file.Abort()
}

// readBatchRows is how many rows readers decode at a time.
const readBatchRows = 64

// rolloutColumns are the columns every rollouts file has, in every schema
// version.
var rolloutColumns = []columnSpec{
	{name: "rollout_id", types: []string{"string"}},
	{name: "group_id", types: []string{"string"}},
	{name: "env", types: []string{"string"}},
	{name: "final", types: []string{"string"}},
	{name: "failed", types: []string{"bool"}},
}

// CheckRolloutsFile refuses a parquet file that is not a rollouts file,
// saying what it looks like instead (a training batch is the likely
// mistake: judging it would judge empty finals).
func CheckRolloutsFile(path string) error {
	f, pf, err := OpenParquet(path)
	if err != nil {
		return err
	}
	defer f.Close()
	schema := pf.Schema()
	has := map[string]bool{}
	for _, f := range schema.Fields() {
		has[f.Name()] = true
	}
	if has["input_ids"] && has["loss_mask"] {
		return fmt.Errorf("%s is a training batch (input_ids, loss_mask), not a rollouts file: give a rollouts file (rollouts/step-N.parquet, or parley rollout's rollouts.parquet)", path)
	}
	if err := checkColumns(path, schema, rolloutColumns, false); err != nil {
		return fmt.Errorf("%w: not a rollouts file", err)
	}
	return nil
}

// rolloutCompat is a Rollout with the columns schema version 1 had and
// version 2 replaced: the persona pair and the rollout-level reward and
// advantage, now per role.
type rolloutCompat struct {
	Rollout
	PersonaA        string  `parquet:"persona_a"`
	PersonaB        string  `parquet:"persona_b"`
	LegacyReward    float32 `parquet:"reward"`
	LegacyAdvantage float32 `parquet:"advantage"`
}

// upgrade turns a version-1 row into a version-2 Rollout: the persona pair
// becomes roles A and B, and every role that has a sequence (or "final"
// for a rollout with none) gets the rollout's reward and advantage, as
// version 1 trained every sequence on them.
func (c rolloutCompat) upgrade() Rollout {
	r := c.Rollout
	if len(r.Personas) == 0 && (c.PersonaA != "" || c.PersonaB != "") {
		r.Personas = PersonaPairOf(c.PersonaA, c.PersonaB)
	}
	if len(r.Roles) > 0 {
		return r
	}
	var roles []string
	for _, s := range r.Sequences {
		if !slices.Contains(roles, s.Role) {
			roles = append(roles, s.Role)
		}
	}
	if len(roles) == 0 {
		roles = []string{"final"}
	}
	for _, role := range roles {
		r.Roles = append(r.Roles, RoleOutcome{
			Role: role, Policy: PolicyTrained, Trained: true,
			Scored: r.Judged, Score: r.Score, Reward: c.LegacyReward, Advantage: c.LegacyAdvantage,
		})
	}
	return r
}

// ReadRollouts streams the rollouts of a parquet file to fn, decoding a
// few rows at a time so memory stays bounded by the page size, not the
// file size. fn may keep the Rollout it is given. An error from fn stops
// the read and is returned as is. Files of schema version 1 (no
// schema_version metadata) are upgraded row by row (see rolloutCompat).
func ReadRollouts(path string, fn func(Rollout) error) error {
	if err := CheckRolloutsFile(path); err != nil {
		return fmt.Errorf("dataset.ReadRollouts: %w", err)
	}
	err := streamParquetMeta(path, func(version int, c rolloutCompat) error {
		if version < 2 {
			return fn(c.upgrade())
		}
		return fn(c.Rollout)
	})
	var stop fnError
	if errors.As(err, &stop) {
		return stop.err
	}
	if err != nil {
		return fmt.Errorf("dataset.ReadRollouts: %w", err)
	}
	return nil
}

// ReadAllRollouts reads every rollout of a parquet file into memory.
func ReadAllRollouts(path string) ([]Rollout, error) {
	var out []Rollout
	err := ReadRollouts(path, func(r Rollout) error {
		out = append(out, r)
		return nil
	})
	return out, err
}

// fnError carries an error returned by a caller's callback through the
// stream, so that it is returned unwrapped.
type fnError struct{ err error }

// Error returns the callback's error message.
func (e fnError) Error() string { return e.err.Error() }

// StreamRows reads rows of T from the parquet file at path a few at a
// time and calls fn on each, in constant memory. The file's columns are
// mapped by name onto T: columns T lacks are not read (a projection of
// Rollout skips the token sequences), columns the file lacks read as zero.
// An error from fn stops the read and is returned as is.
func StreamRows[T any](path string, fn func(T) error) error {
	err := streamParquet(path, fn)
	var stop fnError
	if errors.As(err, &stop) {
		return stop.err
	}
	return err
}

// streamParquet reads rows of T from path, batch by batch, and calls fn
// on each. The file's columns are mapped by name onto T: columns T lacks
// are skipped (not even read), columns the file lacks read as zero.
func streamParquet[T any](path string, fn func(T) error) error {
	return streamParquetMeta(path, func(_ int, v T) error { return fn(v) })
}

// streamParquetMeta is streamParquet that also passes the file's
// schema_version (1 when the metadata is absent).
func streamParquetMeta[T any](path string, fn func(version int, v T) error) error {
	f, pf, err := OpenParquet(path)
	if err != nil {
		return err
	}
	defer f.Close()
	version := 1
	if v, ok := pf.Lookup(SchemaVersionKey); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < MinSchemaVersion || n > SchemaVersion {
			return fmt.Errorf("%s: schema_version %q: this parley reads versions %d to %d", path, v, MinSchemaVersion, SchemaVersion)
		}
		version = n
	}
	r, err := newReader[T](pf)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer r.Close()
	buf := make([]T, readBatchRows)
	var row int64
	for {
		n, err := readRows(r, buf)
		for i := 0; i < n; i++ {
			if ferr := fn(version, buf[i]); ferr != nil {
				return fnError{ferr}
			}
			buf[i] = *new(T) // drop references early
		}
		row += int64(n)
		if err == io.EOF || (err == nil && n == 0) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: row %d: %w", path, row, err)
		}
	}
}
