package bench

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadCSVSynthetic(t *testing.T) {
	recs, err := ReadCSV("testdata/gpqa_synthetic.csv")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 4 {
		t.Fatalf("ReadCSV: %d records, want 4", len(recs))
	}
	// Rows 1 and 2 span 2 and 3 lines: they start on lines 2, 4, 7, 8.
	for i, want := range []int{2, 4, 7, 8} {
		if recs[i].Row != i+1 || recs[i].Line != want {
			t.Errorf("record %d: Row, Line = %d, %d, want %d, %d", i, recs[i].Row, recs[i].Line, i+1, want)
		}
	}
	q := recs[1].Fields["Question"]
	if want := "Synthetic question two, with \"quotes\", commas, and\ntwo more lines\nof text."; q != want {
		t.Errorf("multi-line field = %q, want %q", q, want)
	}
	if got := recs[1].Fields["Correct Answer"]; got != "  100 degrees Celsius  " {
		t.Errorf("unquoted field with spaces = %q, want it kept as is", got)
	}
	if got := recs[0].Fields["Writer's Difficulty Estimate"]; got != "Easy" {
		t.Errorf("field = %q, want %q", got, "Easy")
	}
	if got := recs[2].Where(); got != "testdata/gpqa_synthetic.csv row 3 (line 7)" {
		t.Errorf("Where() = %q", got)
	}
}

func TestReadCSVErrors(t *testing.T) {
	tests := []struct {
		name, content string
		want          []string // substrings of the error
	}{
		{"fields.csv", "a,b\n1,2\n1,2,3\n", []string{"fields.csv", "line 3", "wrong number of fields"}},
		{"short.csv", "a,b\n1\n", []string{"short.csv", "line 2", "wrong number of fields"}},
		{"bare.csv", "a,b\n1,x\"y\n", []string{"bare.csv", "line 2", "bare \""}},
		{"open.csv", "a,b\n1,\"never closed\n2,3\n", []string{"open.csv", "extraneous or missing \" in quoted-field"}},
		{"dup.csv", "a,a\n1,2\n", []string{"dup.csv", "line 1", "duplicate header \"a\""}},
		{"empty.csv", "", []string{"empty.csv", "no header row"}},
	}
	for _, tt := range tests {
		p := writeTemp(t, tt.name, tt.content)
		_, err := ReadCSV(p)
		if err == nil {
			t.Errorf("ReadCSV(%q) = nil error, want one containing %q", tt.content, tt.want)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("ReadCSV(%q) error = %q, want it to contain %q", tt.content, err, w)
			}
		}
	}
}

func TestReadCSVBOMAndCRLF(t *testing.T) {
	p := writeTemp(t, "bom.csv", "\ufeffQuestion,Answer\r\n\"two\r\nlines\",5\r\n")
	recs, err := ReadCSV(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].Fields["Question"] != "two\nlines" || recs[0].Fields["Answer"] != "5" {
		t.Errorf("ReadCSV(BOM, CRLF) = %+v, want Question %q, Answer 5", recs, "two\nlines")
	}
}

func TestReadJSONL(t *testing.T) {
	p := writeTemp(t, "x.jsonl", "{\"id\": 1, \"s\": \"a\"}\n\n  \n{\"id\": \"b\", \"f\": 2.5, \"n\": null}\n{\"id\": 3}") // no final newline
	recs, err := ReadJSONL(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 {
		t.Fatalf("ReadJSONL: %d records, want 3", len(recs))
	}
	for i, want := range []int{1, 4, 5} {
		if recs[i].Line != want || recs[i].Row != i+1 {
			t.Errorf("record %d: Row, Line = %d, %d, want %d, %d", i, recs[i].Row, recs[i].Line, i+1, want)
		}
	}
	if n, ok := recs[0].Fields["id"].(json.Number); !ok || n.String() != "1" {
		t.Errorf("id = %#v, want json.Number 1", recs[0].Fields["id"])
	}

	for _, tt := range []struct {
		content, want string
	}{
		{"{\"a\":1}\n{\"a\":\n", "line 2"},
		{"{\"a\":1}\n[1,2]\n", "line 2: not a JSON object"},
		{"{\"a\":1} {\"b\":2}\n", "line 1: more than one JSON value"},
	} {
		p := writeTemp(t, "bad.jsonl", tt.content)
		_, err := ReadJSONL(p)
		if err == nil || !strings.Contains(err.Error(), "bad.jsonl "+tt.want) {
			t.Errorf("ReadJSONL(%q) error = %v, want it to contain %q", tt.content, err, "bad.jsonl "+tt.want)
		}
	}
}

func TestReadJSONArray(t *testing.T) {
	p := writeTemp(t, "x.json", `[{"problem": "p", "answer": 7}, {"problem": "q", "answer": "8"}]`)
	recs, err := ReadRecords(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[1].Row != 2 {
		t.Fatalf("ReadRecords(json) = %+v", recs)
	}
	p = writeTemp(t, "bad.json", `[{"a": 1}, 3]`)
	if _, err := ReadRecords(p); err == nil || !strings.Contains(err.Error(), "bad.json element 2") {
		t.Errorf("ReadRecords(bad.json) error = %v, want it to name element 2", err)
	}
}

// hfGPQARow has the columns of the Hugging Face parquet conversion of GPQA
// (pandas writes optional columns).
type hfGPQARow struct {
	Question   *string  `parquet:"Question,optional"`
	Correct    *string  `parquet:"Correct Answer,optional"`
	Incorrect1 *string  `parquet:"Incorrect Answer 1,optional"`
	Incorrect2 *string  `parquet:"Incorrect Answer 2,optional"`
	Incorrect3 *string  `parquet:"Incorrect Answer 3,optional"`
	Minutes    *float64 `parquet:"Self-reported question-writing time (minutes),optional"`
	RecordID   *string  `parquet:"Record ID,optional"`
	Domain     *string  `parquet:"High-level domain,optional"`
	Tags       []string `parquet:"tags,list"`
	Count      int64    `parquet:"count"`
}

func ptr[T any](v T) *T { return &v }

func writeParquet[T any](t *testing.T, name string, rows []T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := parquet.Write(f, rows); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadParquet(t *testing.T) {
	rows := []hfGPQARow{
		{Question: ptr("q1"), Correct: ptr("c1"), Incorrect1: ptr("i1"), Incorrect2: ptr("i2"), Incorrect3: ptr("i3"),
			Minutes: ptr(2.5), RecordID: ptr("rec1"), Domain: ptr("Physics"), Tags: []string{"x", "y"}, Count: 7},
		{Question: ptr("q2"), Count: 8},
	}
	p := writeParquet(t, "gpqa.parquet", rows)
	recs, err := ReadRecords(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 {
		t.Fatalf("ReadParquet: %d records, want 2", len(recs))
	}
	r := recs[0]
	if r.Fields["Correct Answer"] != "c1" || r.Fields["Record ID"] != "rec1" || r.Fields["Self-reported question-writing time (minutes)"] != 2.5 {
		t.Errorf("ReadParquet row 1 = %v", r.Fields)
	}
	if tags, ok := r.Fields["tags"].([]any); !ok || len(tags) != 2 || tags[1] != "y" {
		t.Errorf("list column = %#v, want [x y]", r.Fields["tags"])
	}
	if r.Fields["count"] != int64(7) {
		t.Errorf("int64 column = %#v, want int64(7)", r.Fields["count"])
	}
	if v, present := recs[1].Fields["Correct Answer"]; !present || v != nil {
		t.Errorf("null column = %#v (present %v), want nil", v, present)
	}
	if got := recs[1].Where(); got != p+" row 2" {
		t.Errorf("Where() = %q, want %q", got, p+" row 2")
	}

	bad := writeTemp(t, "bad.parquet", "not parquet at all")
	if _, err := ReadRecords(bad); err == nil || !strings.Contains(err.Error(), "bad.parquet") {
		t.Errorf("ReadParquet(not parquet) error = %v, want it to name the file", err)
	}
	if _, err := ReadRecords("x.xlsx"); err == nil || !strings.Contains(err.Error(), "unknown extension") {
		t.Errorf("ReadRecords(x.xlsx) error = %v, want unknown extension", err)
	}
}

func TestRecordText(t *testing.T) {
	r := Record{Fields: map[string]any{
		"s": "text", "blank": "  ", "nil": nil, "num": json.Number("033"), "i64": int64(12),
		"i32": int32(-3), "f": 33.0, "frac": 2.5, "nan": math.NaN(), "b": true, "list": []any{"x"},
	}}
	tests := []struct {
		keys   []string
		want   string
		wantOK bool
	}{
		{[]string{"s"}, "text", true},
		{[]string{"missing", "blank", "nil", "s"}, "text", true}, // first usable key wins
		{[]string{"num"}, "033", true},
		{[]string{"i64"}, "12", true},
		{[]string{"i32"}, "-3", true},
		{[]string{"f"}, "33", true},
		{[]string{"frac"}, "2.5", true},
		{[]string{"nan"}, "", false}, // pandas' missing value
		{[]string{"b"}, "true", true},
		{[]string{"list"}, "", false},
		{nil, "", false},
	}
	for _, tt := range tests {
		got, _, ok := r.Text(tt.keys...)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("Text(%q) = %q, %v, want %q, %v", tt.keys, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestReadParquetBadFilesAndPandasIndex(t *testing.T) {
	tests := []struct {
		name, content, want string
	}{
		{"empty.parquet", "", "empty file (0 bytes), not a parquet file"},
		{"csv.parquet", "Question,Correct Answer\nq,c\n", "not a parquet file"},
	}
	for _, tt := range tests {
		p := writeTemp(t, tt.name, tt.content)
		_, err := ReadRecords(p)
		if err == nil || !strings.Contains(err.Error(), p+": "+tt.want) || strings.Contains(err.Error(), "Seek") {
			t.Errorf("ReadRecords(%s) error = %v, want %q after the path", tt.name, err, tt.want)
		}
	}
	type pandasRow struct {
		Question string `parquet:"Question"`
		Index    int64  `parquet:"__index_level_0__"`
	}
	p := writeParquet(t, "pandas.parquet", []pandasRow{{Question: "q", Index: 4}})
	recs, err := ReadRecords(p)
	if err != nil || len(recs) != 1 {
		t.Fatalf("ReadRecords(pandas) = %v, %v", recs, err)
	}
	if _, ok := recs[0].Fields["__index_level_0__"]; ok || recs[0].Fields["Question"] != "q" {
		t.Errorf("pandas row fields = %v, want Question only", recs[0].Fields)
	}
}
