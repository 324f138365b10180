package export

import (
	"fmt"
	"strings"

	"github.com/parleyhq/parley/dataset"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// feature is one Hugging Face feature of the dataset card: a column with
// its dtype, a struct of features, or a list of structs.
type feature struct {
	Name   string
	Dtype  string    // a value's: string, int32, float32, bool
	Struct []feature // a struct's fields
	List   []feature // the fields of a list's struct elements
}

// schemaName is the name of the shards' parquet schema: the record's type
// name when it was dataset.ExportRecord, kept so that an export's bytes
// stay the same.
const schemaName = "ExportRecord"

// schema is the parquet schema of the HF shards: Record's columns.
var schema = parquet.NewSchema(schemaName, parquet.SchemaOf(Record{}))

// features are the Hugging Face features of an HF export, derived from
// the shards' schema: the card cannot name a column the shards lack, or
// miss one.
var features = mustFeatures(schema)

// hfDtypes are the Hugging Face value dtypes of the parquet leaf types
// (dataset.ColumnType) a Record holds.
var hfDtypes = map[string]string{"string": "string", "int32": "int32", "int64": "int64", "float32": "float32", "float64": "float64", "bool": "bool"}

func mustFeatures(n parquet.Node) []feature {
	fs, err := featuresOf(n)
	if err != nil {
		panic("export: the features of Record: " + err.Error())
	}
	return fs
}

// featuresOf derives the features of a group node's fields, in order.
func featuresOf(n parquet.Node) ([]feature, error) {
	var out []feature
	for _, f := range n.Fields() {
		ft, err := featureOf(f)
		if err != nil {
			return nil, err
		}
		out = append(out, ft)
	}
	return out, nil
}

// featureOf derives one field's feature: a leaf is a value of its dtype,
// a LIST group of structs a list, another group a struct.
func featureOf(f parquet.Field) (feature, error) {
	switch {
	case f.Leaf():
		t := dataset.ColumnType(f)
		dtype, ok := hfDtypes[t]
		if !ok {
			return feature{}, fmt.Errorf("column %s: no Hugging Face dtype for %s", f.Name(), t)
		}
		return feature{Name: f.Name(), Dtype: dtype}, nil
	case isList(f):
		elem := listElement(f)
		if elem.Leaf() {
			return feature{}, fmt.Errorf("column %s: a list of values (only lists of structs are declared)", f.Name())
		}
		fs, err := featuresOf(elem)
		return feature{Name: f.Name(), List: fs}, err
	default:
		fs, err := featuresOf(f)
		return feature{Name: f.Name(), Struct: fs}, err
	}
}

// isList reports whether a group node carries the LIST annotation.
func isList(n parquet.Node) bool {
	lt := n.Type().LogicalType()
	if lt == nil {
		return false
	}
	_, ok := lt.Value.(*format.ListType)
	return ok
}

// listElement is the element node of a three-level LIST group.
func listElement(n parquet.Node) parquet.Node {
	rep := n.Fields()[0]
	if rep.Leaf() || len(rep.Fields()) != 1 {
		return rep
	}
	return rep.Fields()[0]
}

// featuresYAML writes the features block of the dataset card's
// dataset_info.
func featuresYAML() string {
	var b strings.Builder
	b.WriteString("  features:\n")
	writeFeatures(&b, features, "  ")
	return b.String()
}

// writeFeatures writes fs as a YAML list at indent.
func writeFeatures(b *strings.Builder, fs []feature, indent string) {
	for _, f := range fs {
		fmt.Fprintf(b, "%s- name: %s\n", indent, f.Name)
		switch {
		case f.Struct != nil:
			fmt.Fprintf(b, "%s  struct:\n", indent)
			writeFeatures(b, f.Struct, indent+"  ")
		case f.List != nil:
			fmt.Fprintf(b, "%s  list:\n", indent)
			writeFeatures(b, f.List, indent+"  ")
		default:
			fmt.Fprintf(b, "%s  dtype: %s\n", indent, f.Dtype)
		}
	}
}
