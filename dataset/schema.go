package dataset

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/format"
)

// parquetMagic starts and ends every parquet file.
const parquetMagic = "PAR1"

// OpenParquet opens a parquet file for reading; the caller closes the
// returned *os.File. A file that cannot be parquet (empty, shorter than
// its header and footer, or without the PAR1 marks at both ends) is
// refused by name before parquet-go sees it, so that the message says what
// is wrong with the file rather than where a seek failed.
func OpenParquet(path string) (*os.File, *parquet.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if err := checkParquetFrame(f, st.Size()); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("%s: not a valid parquet file: %w", path, err)
	}
	return f, pf, nil
}

// checkParquetFrame checks the PAR1 marks at the start and end of a file
// of size bytes.
func checkParquetFrame(r io.ReaderAt, size int64) error {
	const frame = 2*len(parquetMagic) + 4 // the marks and the footer length
	if size == 0 {
		return errors.New("empty file (0 bytes), not a parquet file")
	}
	if size < int64(frame) {
		return fmt.Errorf("%d bytes, too short to be a parquet file", size)
	}
	head, tail := make([]byte, len(parquetMagic)), make([]byte, len(parquetMagic))
	if _, err := r.ReadAt(head, 0); err != nil {
		return err
	}
	if _, err := r.ReadAt(tail, size-int64(len(tail))); err != nil {
		return err
	}
	if string(head) != parquetMagic {
		return fmt.Errorf("not a parquet file (it starts with %q, not %q)", head, parquetMagic)
	}
	if string(tail) != parquetMagic {
		return fmt.Errorf("not a complete parquet file (no %q at its end: cut short, or still being written)", parquetMagic)
	}
	return nil
}

// IsPandasIndex reports whether a column is an index pandas wrote beside
// the data (to_parquet with index=True, or a reset index):
// __index_level_N__. Readers ignore such columns.
func IsPandasIndex(name string) bool {
	n, ok := strings.CutPrefix(name, "__index_level_")
	if !ok {
		return false
	}
	n, ok = strings.CutSuffix(n, "__")
	if !ok || n == "" {
		return false
	}
	for _, c := range n {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// newReader builds a parquet.GenericReader over pf, turning the panics
// parquet-go raises on incompatible schemas into errors.
func newReader[T any](pf *parquet.File) (r *parquet.GenericReader[T], err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("incompatible schema: %v", p)
		}
	}()
	return parquet.NewGenericReader[T](pf), nil
}

// readRows reads up to len(buf) rows, zeroing buf first so that no row
// shares memory with a previous batch, and recovering parquet-go panics.
func readRows[T any](r *parquet.GenericReader[T], buf []T) (n int, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("reading rows: %v", p)
		}
	}()
	clear(buf)
	return r.Read(buf)
}

// ColumnType describes a parquet schema node as a short type string:
// string, binary, bool, int8, int16, int32, int64, uint8…, float32,
// float64, list<T> or struct<name:T,…>.
func ColumnType(n parquet.Node) string {
	if n.Leaf() {
		return leafType(n.Type())
	}
	if isList(n) {
		return "list<" + ColumnType(listElement(n)) + ">"
	}
	fields := n.Fields()
	parts := make([]string, len(fields))
	for i, f := range fields {
		t := ColumnType(f)
		if f.Repeated() {
			t = "repeated " + t
		}
		parts[i] = f.Name() + ":" + t
	}
	return "struct<" + strings.Join(parts, ",") + ">"
}

// isList reports whether a group node carries the LIST annotation.
func isList(n parquet.Node) bool {
	if n.Leaf() {
		return false
	}
	if lt := n.Type().LogicalType(); lt != nil {
		if _, ok := lt.Value.(*format.ListType); ok {
			return true
		}
	}
	if ct := n.Type().ConvertedType(); ct != nil && *ct == deprecated.List {
		return true
	}
	return false
}

// listElement returns the element node of a LIST group, for both the
// standard three-level layout and the legacy two-level one.
func listElement(n parquet.Node) parquet.Node {
	fields := n.Fields()
	if len(fields) != 1 {
		return n
	}
	rep := fields[0]
	if rep.Leaf() || len(rep.Fields()) != 1 {
		return rep
	}
	return rep.Fields()[0]
}

// leafType names a leaf column's type from its physical and logical type.
func leafType(t parquet.Type) string {
	if lt := t.LogicalType(); lt != nil {
		switch v := lt.Value.(type) {
		case *format.StringType, *format.EnumType, *format.JsonType:
			return "string"
		case *format.IntType:
			if v.IsSigned {
				return fmt.Sprintf("int%d", v.BitWidth)
			}
			return fmt.Sprintf("uint%d", v.BitWidth)
		}
	}
	if ct := t.ConvertedType(); ct != nil {
		switch *ct {
		case deprecated.UTF8, deprecated.Enum, deprecated.Json:
			return "string"
		case deprecated.Int8:
			return "int8"
		case deprecated.Int16:
			return "int16"
		case deprecated.Int32:
			return "int32"
		case deprecated.Int64:
			return "int64"
		case deprecated.Uint8:
			return "uint8"
		case deprecated.Uint16:
			return "uint16"
		case deprecated.Uint32:
			return "uint32"
		case deprecated.Uint64:
			return "uint64"
		}
	}
	switch t.Kind() {
	case parquet.Boolean:
		return "bool"
	case parquet.Int32:
		return "int32"
	case parquet.Int64:
		return "int64"
	case parquet.Int96:
		return "int96"
	case parquet.Float:
		return "float32"
	case parquet.Double:
		return "float64"
	case parquet.ByteArray:
		return "binary"
	case parquet.FixedLenByteArray:
		return "fixed_len_byte_array"
	}
	return t.String()
}

// columnSpec is one column a reader requires, with the types it accepts.
type columnSpec struct {
	name     string
	types    []string
	optional bool // may be absent
}

// checkColumns checks that schema has every column of want with one of
// the accepted types. If strict, columns not in want are errors too.
func checkColumns(path string, schema *parquet.Schema, want []columnSpec, strict bool) error {
	have := map[string]parquet.Field{}
	for _, f := range schema.Fields() {
		have[f.Name()] = f
	}
	known := map[string]bool{}
	for _, c := range want {
		known[c.name] = true
		f, ok := have[c.name]
		if !ok && c.optional {
			continue
		}
		if !ok {
			return fmt.Errorf("%s: missing column %q (want %s)", path, c.name, strings.Join(c.types, " or "))
		}
		got := ColumnType(f)
		if f.Repeated() {
			got = "repeated " + got
		}
		match := false
		for _, t := range c.types {
			if got == t {
				match = true
				break
			}
		}
		if !match {
			return fmt.Errorf("%s: column %q has type %s, want %s", path, c.name, got, strings.Join(c.types, " or "))
		}
	}
	if strict {
		var extra []string
		for name := range have {
			if !known[name] && !IsPandasIndex(name) {
				extra = append(extra, name)
			}
		}
		if len(extra) > 0 {
			sort.Strings(extra)
			return fmt.Errorf("%s: unknown column %q", path, extra[0])
		}
	}
	return nil
}
