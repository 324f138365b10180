package view

import (
	"errors"
	"fmt"
	"io"

	"github.com/parleyhq/parley/dataset"
	"github.com/parquet-go/parquet-go"
)

// idRow is the rollout_id column alone.
type idRow struct {
	RolloutID string `parquet:"rollout_id"`
}

// readRollout reads, from the parquet file at path (a step's rollouts or
// batch), the rows whose rollout_id is id, as T (a projection: only T's
// columns are read). One pass over the rollout_id column finds the rows,
// then the reader seeks to them, so that no other row's token lists are
// decoded: a dialogue of a 256-rollout step reads its own rows alone.
func readRollout[T any](path, id string) ([]T, error) {
	var at []int64
	var n int64
	if err := dataset.StreamRows(path, func(r idRow) error {
		if r.RolloutID == id {
			at = append(at, n)
		}
		n++
		return nil
	}); err != nil {
		return nil, err
	}
	if len(at) == 0 {
		return nil, nil
	}
	f, pf, err := dataset.OpenParquet(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return seekRows[T](path, pf, at)
}

// seekRows reads the rows at the given indexes, turning parquet-go's
// panics on a damaged file into errors.
func seekRows[T any](path string, pf *parquet.File, at []int64) (out []T, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%s: reading rows: %v", path, p)
		}
	}()
	r := parquet.NewGenericReader[T](pf)
	defer r.Close()
	buf := make([]T, 1)
	for _, i := range at {
		if err := r.SeekToRow(i); err != nil {
			return nil, fmt.Errorf("%s: row %d: %w", path, i, err)
		}
		buf[0] = *new(T)
		k, err := r.Read(buf)
		if k != 1 {
			if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, fmt.Errorf("%s: row %d: %w", path, i, err)
		}
		out = append(out, buf[0])
	}
	return out, nil
}
