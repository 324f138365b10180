package export

import (
	"bytes"
	"encoding/json"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/parleyhq/parley/dataset"
	"github.com/parquet-go/parquet-go"
)

// jsonKeys returns the keys of the JSON object b in order, each nested
// object's and the first element of each array of objects as
// "key.nested".
func jsonKeys(t *testing.T, b []byte) []string {
	t.Helper()
	var keys []string
	var walk func(prefix string, raw json.RawMessage)
	walk = func(prefix string, raw json.RawMessage) {
		raw = bytes.TrimSpace(raw)
		if len(raw) > 0 && raw[0] == '[' {
			var items []json.RawMessage
			mustNoErr(t, json.Unmarshal(raw, &items))
			if len(items) > 0 {
				walk(prefix, items[0])
			}
			return
		}
		if len(raw) == 0 || raw[0] != '{' {
			return
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		_, err := dec.Token() // {
		mustNoErr(t, err)
		for dec.More() {
			tok, err := dec.Token()
			mustNoErr(t, err)
			var v json.RawMessage
			mustNoErr(t, dec.Decode(&v))
			keys = append(keys, prefix+tok.(string))
			walk(prefix+tok.(string)+".", v)
		}
	}
	walk("", b)
	return keys
}

// parquetColumns returns the fields of a parquet node in order, nested
// ones as "field.nested" (a list's by its element's fields).
func parquetColumns(n parquet.Node, prefix string) []string {
	var out []string
	for _, f := range n.Fields() {
		out = append(out, prefix+f.Name())
		switch {
		case f.Leaf():
		case isList(f):
			out = append(out, parquetColumns(listElement(f), prefix+f.Name()+".")...)
		default:
			out = append(out, parquetColumns(f, prefix+f.Name()+".")...)
		}
	}
	return out
}

// TestRecordColumns: a JSONL line has exactly the parquet columns of a
// shard, in the same order, nested ones too: the json and parquet tags of
// Record and its parts do not drift apart.
func TestRecordColumns(t *testing.T) {
	rec := NewRecord(testRollout(1, 0), dataset.ScoreScale{Name: "CA", Min: 1, Max: 5})
	b, err := json.Marshal(rec)
	mustNoErr(t, err)
	got, want := jsonKeys(t, b), parquetColumns(schema, "")
	if !slices.Equal(got, want) {
		t.Errorf("JSON keys of a record =\n%v\nparquet columns =\n%v", got, want)
	}
	if len(want) != 26+4+3 {
		t.Errorf("parquet columns = %d, want 26 and the 4 of personas and the 3 of a message", len(want))
	}
}

// TestFeaturesFollowSchema: the card's features are the shards' columns,
// in order, with the Hugging Face dtype of each column's type.
func TestFeaturesFollowSchema(t *testing.T) {
	var flat func(fs []feature, prefix string) []string
	flat = func(fs []feature, prefix string) []string {
		var out []string
		for _, f := range fs {
			out = append(out, prefix+f.Name)
			out = append(out, flat(f.Struct, prefix+f.Name+".")...)
			out = append(out, flat(f.List, prefix+f.Name+".")...)
		}
		return out
	}
	if got, want := flat(features, ""), parquetColumns(schema, ""); !slices.Equal(got, want) {
		t.Errorf("features = %v, want the columns %v", got, want)
	}
	for _, f := range schema.Fields() {
		var ft feature
		for _, x := range features {
			if x.Name == f.Name() {
				ft = x
			}
		}
		want := dataset.ColumnType(f)
		if got := featureType(ft); got != want {
			t.Errorf("feature %s has type %s, the column %s", f.Name(), got, want)
		}
	}
}

// featureType writes a feature's type as dataset.ColumnType does.
func featureType(f feature) string {
	fields := func(fs []feature) string {
		parts := make([]string, len(fs))
		for i, x := range fs {
			parts[i] = x.Name + ":" + featureType(x)
		}
		return "struct<" + strings.Join(parts, ",") + ">"
	}
	switch {
	case f.Struct != nil:
		return fields(f.Struct)
	case f.List != nil:
		return "list<" + fields(f.List) + ">"
	}
	return f.Dtype
}

// TestFeatureOf: the column types a record may hold have a Hugging Face
// dtype; the others are refused by name.
func TestFeatureOf(t *testing.T) {
	type elem struct {
		X string `parquet:"x"`
	}
	tests := []struct {
		name  string
		model any
		want  string // the features as YAML, or the error
	}{
		{"values", struct {
			S string  `parquet:"s"`
			I int64   `parquet:"i"`
			F float64 `parquet:"f"`
			B *bool   `parquet:"b,optional"`
		}{}, "- name: s\n  dtype: string\n- name: i\n  dtype: int64\n- name: f\n  dtype: float64\n- name: b\n  dtype: bool\n"},
		{"struct and list", struct {
			S elem   `parquet:"s"`
			L []elem `parquet:"l,list"`
		}{}, "- name: s\n  struct:\n  - name: x\n    dtype: string\n- name: l\n  list:\n  - name: x\n    dtype: string\n"},
		{"a list of values", struct {
			L []string `parquet:"l,list"`
		}{}, "column l: a list of values"},
		{"bytes", struct {
			B []byte `parquet:"b"`
		}{}, "column b: no Hugging Face dtype for binary"},
		{"uint", struct {
			U uint16 `parquet:"u"`
		}{}, "column u: no Hugging Face dtype for uint16"},
	}
	for _, tt := range tests {
		fs, err := featuresOf(parquet.SchemaOf(tt.model))
		var got string
		if err != nil {
			got = err.Error()
		} else {
			var b strings.Builder
			writeFeatures(&b, fs, "")
			got = b.String()
		}
		if !strings.HasPrefix(got, tt.want) {
			t.Errorf("featuresOf(%s) = %q, want %q", tt.name, got, tt.want)
		}
	}
}

var cardRowRE = regexp.MustCompile("(?m)^\\| (`[^|]*) \\| ([^|]*) \\| [^|]* \\|$")

// TestCardSchemaTable: the card's table of columns names every column of
// the shards once, in order, with its type.
func TestCardSchemaTable(t *testing.T) {
	var names, types []string
	for _, m := range cardRowRE.FindAllStringSubmatch(cardSchema, -1) {
		cols := strings.Split(m[1], ", ")
		typs := strings.Split(m[2], ", ")
		if strings.HasPrefix(m[2], "struct<") || strings.HasPrefix(m[2], "list<") {
			typs = []string{strings.ReplaceAll(m[2], ", ", ",")}
		}
		for i, c := range cols {
			names = append(names, strings.Trim(c, "`"))
			types = append(types, typs[min(i, len(typs)-1)])
		}
	}
	var want, wantTypes []string
	for _, f := range features {
		want = append(want, f.Name)
		typ := featureType(f)
		// The table names a struct's fields without their types.
		typ = regexp.MustCompile(`:[a-z0-9]+`).ReplaceAllString(typ, "")
		wantTypes = append(wantTypes, typ)
	}
	if !slices.Equal(names, want) {
		t.Errorf("the card's schema table names the columns\n%v\nthe shards have\n%v", names, want)
	}
	if !slices.Equal(types, wantTypes) {
		t.Errorf("the card's schema table gives the types\n%v\nthe shards have\n%v", types, wantTypes)
	}
}

// TestSourceIsRolloutProjection: every field of source but the legacy
// columns is dataset.Rollout's field of the same name, type and column, so
// that an export reads what a rollouts file holds and NewRecord copies it.
func TestSourceIsRolloutProjection(t *testing.T) {
	rt := reflect.TypeFor[dataset.Rollout]()
	st := reflect.TypeFor[source]()
	var legacy []string
	for i := range st.NumField() {
		sf := st.Field(i)
		col := strings.Split(sf.Tag.Get("parquet"), ",")[0]
		rf, ok := rt.FieldByName(sf.Name)
		if !ok {
			legacy = append(legacy, col)
			continue
		}
		if rf.Type != sf.Type || rf.Tag.Get("parquet") != sf.Tag.Get("parquet") {
			t.Errorf("source.%s is %v `parquet:%q`, dataset.Rollout.%s is %v `parquet:%q`",
				sf.Name, sf.Type, sf.Tag.Get("parquet"), rf.Name, rf.Type, rf.Tag.Get("parquet"))
		}
	}
	if !slices.Equal(legacy, legacyColumns) {
		t.Errorf("source's columns that Rollout lacks = %v, want the legacy ones %v", legacy, legacyColumns)
	}
}
