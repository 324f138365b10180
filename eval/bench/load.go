package bench

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/internal/textfile"
	"github.com/parquet-go/parquet-go"
)

// Record is one row of a data file: its fields by column name, and where it
// came from, for error messages. Field values are what the format gives:
// string for CSV; string, json.Number, bool, nil, []any or map[string]any for
// JSON; the parquet column's Go type for parquet (string, int32, int64,
// float32, float64, bool, nil for a null, []any for a list).
type Record struct {
	File   string         // the path the record was read from
	Row    int            // 1-based data row (a CSV header is not a row)
	Line   int            // 1-based line the row starts on; 0 for parquet
	Fields map[string]any // values by column name
}

// Where names the record's position: "gpqa.csv row 3 (line 7)".
func (r Record) Where() string {
	name := r.File
	if name == "" {
		name = "<input>"
	}
	if r.Line > 0 {
		return fmt.Sprintf("%s row %d (line %d)", name, r.Row, r.Line)
	}
	return fmt.Sprintf("%s row %d", name, r.Row)
}

// Text returns the value of the first of keys that is present, not null and
// not blank, as text: strings as they are, JSON numbers as written, integers
// in decimal, integral floats without a fraction, other floats in the
// shortest form, booleans as true/false. ok is false when no key qualifies or
// the value is a list or an object.
func (r Record) Text(keys ...string) (text, key string, ok bool) {
	for _, k := range keys {
		v, present := r.Fields[k]
		if !present || v == nil {
			continue
		}
		s, ok := textOf(v)
		if !ok || strings.TrimSpace(s) == "" {
			continue
		}
		return s, k, true
	}
	return "", "", false
}

func textOf(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case []byte:
		return string(x), true
	case json.Number:
		return x.String(), true
	case bool:
		return strconv.FormatBool(x), true
	case int:
		return strconv.Itoa(x), true
	case int8, int16, int32, int64:
		return fmt.Sprintf("%d", x), true
	case uint8, uint16, uint32, uint64:
		return fmt.Sprintf("%d", x), true
	case float32:
		return formatFloat(float64(x), 32), true
	case float64:
		return formatFloat(x, 64), true
	}
	return "", false
}

func formatFloat(f float64, bits int) string {
	if math.IsNaN(f) {
		return "" // pandas writes missing values as NaN: treat as blank
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'g', -1, bits)
}

// ReadRecords reads a data file by its extension: .jsonl or .ndjson (one JSON
// object per line), .json (an array of objects), .csv (a header row, then
// records; quoted fields may span lines) or .parquet.
func ReadRecords(path string) ([]Record, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".jsonl", ".ndjson":
		return ReadJSONL(path)
	case ".json":
		return ReadJSONArray(path)
	case ".csv":
		return ReadCSV(path)
	case ".parquet":
		return ReadParquet(path)
	}
	return nil, fmt.Errorf("bench.ReadRecords: %s: unknown extension (want .jsonl, .ndjson, .json, .csv or .parquet)", path)
}

// ReadJSONL reads a file of one JSON object per line. Blank lines are
// skipped; numbers are kept as json.Number. Errors name the file and line.
func ReadJSONL(path string) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("bench.ReadJSONL: %w", err)
	}
	defer f.Close()
	recs, err := decodeJSONL(f, path)
	if err != nil {
		return nil, fmt.Errorf("bench.ReadJSONL: %w", err)
	}
	return recs, nil
}

func decodeJSONL(r io.Reader, name string) ([]Record, error) {
	br := textfile.NewReader(r, 64<<10)
	var recs []Record
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("%s line %d: %w", name, line, err)
		}
		if t := bytes.TrimSpace(b); len(t) > 0 {
			fields, derr := decodeObject(t)
			if derr != nil {
				return nil, fmt.Errorf("%s line %d: %w", name, line, derr)
			}
			recs = append(recs, Record{File: name, Row: len(recs) + 1, Line: line, Fields: fields})
		}
		if err == io.EOF {
			return recs, nil
		}
	}
}

// decodeObject decodes exactly one JSON object, numbers as json.Number.
func decodeObject(b []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("malformed JSON: %w", err)
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value")
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("not a JSON object: %.40s", b)
	}
	return m, nil
}

// ReadJSONArray reads a file holding one JSON array of objects (numbers kept
// as json.Number). Errors name the file and the 1-based element.
func ReadJSONArray(path string) ([]Record, error) {
	b, err := textfile.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("bench.ReadJSONArray: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var raw []json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("bench.ReadJSONArray: %s: not a JSON array of objects: %w", path, err)
	}
	recs := make([]Record, 0, len(raw))
	for i, m := range raw {
		fields, err := decodeObject(m)
		if err != nil {
			return nil, fmt.Errorf("bench.ReadJSONArray: %s element %d: %w", path, i+1, err)
		}
		recs = append(recs, Record{File: path, Row: i + 1, Fields: fields})
	}
	return recs, nil
}

// ReadCSV reads a CSV file with a header row (RFC 4180: quoted fields may
// hold commas, doubled quotes and newlines; a bare quote in an unquoted field
// is an error, not leniently accepted). Every record must have as many
// fields as the header; header names must be unique. A UTF-8 byte-order mark
// is dropped. Errors name the file and line.
func ReadCSV(path string) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("bench.ReadCSV: %w", err)
	}
	defer f.Close()
	recs, err := decodeCSV(f, path)
	if err != nil {
		return nil, fmt.Errorf("bench.ReadCSV: %w", err)
	}
	return recs, nil
}

func decodeCSV(r io.Reader, name string) ([]Record, error) {
	cr := csv.NewReader(textfile.NewReader(r, 64<<10))
	cr.LazyQuotes = false
	cr.FieldsPerRecord = 0 // the header's count, enforced on every record
	header, err := cr.Read()
	if err == io.EOF {
		return nil, fmt.Errorf("%s: no header row", name)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	seen := make(map[string]bool, len(header))
	for i, h := range header {
		if seen[h] {
			return nil, fmt.Errorf("%s line 1: column %d: duplicate header %q", name, i+1, h)
		}
		seen[h] = true
	}
	var recs []Record
	for {
		fields, err := cr.Read()
		if err == io.EOF {
			return recs, nil
		}
		if err != nil {
			// csv.ParseError names the line (and column) already.
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		line, _ := cr.FieldPos(0)
		m := make(map[string]any, len(header))
		for i, h := range header {
			m[h] = fields[i]
		}
		recs = append(recs, Record{File: name, Row: len(recs) + 1, Line: line, Fields: m})
	}
}

// ReadParquet reads every row of a parquet file into generic records, keyed
// by top-level column name (a null is nil; a list is []any; a group is
// map[string]any). pandas' index columns (__index_level_N__) are dropped.
// Errors name the file and row.
func ReadParquet(path string) ([]Record, error) {
	f, pf, err := dataset.OpenParquet(path)
	if err != nil {
		return nil, fmt.Errorf("bench.ReadParquet: %w", err)
	}
	defer f.Close()
	recs, err := decodeParquet(pf, path)
	if err != nil {
		return nil, fmt.Errorf("bench.ReadParquet: %w", err)
	}
	return recs, nil
}

func decodeParquet(pf *parquet.File, name string) (recs []Record, err error) {
	reader := parquet.NewGenericReader[map[string]any](pf, pf.Schema())
	defer reader.Close()
	defer func() {
		// parquet-go panics when a row cannot be rebuilt into a Go value.
		if p := recover(); p != nil {
			recs, err = nil, fmt.Errorf("%s row %d: %v", name, len(recs)+1, p)
		}
	}()
	const batch = 256
	buf := make([]map[string]any, batch)
	for {
		for i := range buf {
			buf[i] = map[string]any{}
		}
		n, rerr := reader.Read(buf)
		for _, m := range buf[:n] {
			for k := range m {
				if dataset.IsPandasIndex(k) {
					delete(m, k)
				}
			}
			recs = append(recs, Record{File: name, Row: len(recs) + 1, Fields: m})
		}
		if rerr == io.EOF {
			return recs, nil
		}
		if rerr != nil {
			return nil, fmt.Errorf("%s row %d: %w", name, len(recs)+1, rerr)
		}
		if n == 0 {
			return recs, nil
		}
	}
}
