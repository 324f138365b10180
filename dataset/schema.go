package dataset

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/format"
)

// openParquet opens a parquet file for reading. The caller closes the
// returned *os.File.
func openParquet(path string) (*os.File, *parquet.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("%s: not a valid parquet file: %w", path, err)
	}
	return f, pf, nil
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

// columnType describes a parquet schema node as a short type string:
// string, binary, bool, int8, int16, int32, int64, uint8…, float32,
// float64, list<T> or struct<name:T,…>.
func columnType(n parquet.Node) string {
	if n.Leaf() {
		return leafType(n.Type())
	}
	if isList(n) {
		return "list<" + columnType(listElement(n)) + ">"
	}
	fields := n.Fields()
	parts := make([]string, len(fields))
	for i, f := range fields {
		t := columnType(f)
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
		got := columnType(f)
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
			if !known[name] {
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
