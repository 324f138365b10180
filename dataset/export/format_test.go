package export

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
)

// TestFormatTable: every format has a unique name, help texts and a sink;
// an unknown one is refused naming them all.
func TestFormatTable(t *testing.T) {
	if got := FormatNames(); !slices.Equal(got, []string{FormatJSONL, FormatHF}) {
		t.Errorf("FormatNames() = %v, want [jsonl hf]", got)
	}
	seen := map[string]bool{}
	for _, f := range Formats() {
		if f.Name == "" || f.Short == "" || f.Long == "" || f.open == nil || seen[f.Name] {
			t.Errorf("format %+v: want a unique name, help texts and a sink", f)
		}
		seen[f.Name] = true
	}
	if _, err := formatOf("csv"); err == nil || err.Error() != `unknown format "csv" (want jsonl or hf)` {
		t.Errorf(`formatOf("csv") = %v, want an error naming jsonl and hf`, err)
	}
}

// recordingSink keeps the ids of the records it is given.
type recordingSink struct {
	ids    *[]string
	closed *bool
}

func (s recordingSink) write(r *Record) error         { *s.ids = append(*s.ids, r.ID); return nil }
func (s recordingSink) close(Stats) ([]string, error) { *s.closed = true; return []string{"ids"}, nil }
func (s recordingSink) abort()                        {}

// TestFormatTableDispatch: a format is its entry in the table; Rollouts
// finds it by name and writes through its sink, and help lists it.
func TestFormatTableDispatch(t *testing.T) {
	var ids []string
	var closed bool
	saved := formats
	t.Cleanup(func() { formats = saved })
	formats = append(slices.Clone(saved), Format{Name: "ids", Short: "ids", Long: "ids",
		open: func(Options, string) (sink, error) { return recordingSink{&ids, &closed}, nil }})
	run, all := makeRun(t, 1, 4)
	st, err := Rollouts(context.Background(), Options{From: run, Format: "ids", Out: filepath.Join(t.TempDir(), "o"), IncludeFailed: true})
	mustNoErr(t, err)
	if len(ids) != len(all) || !closed || !slices.Equal(st.Outputs, []string{"ids"}) {
		t.Errorf("the table's ids format got %v (closed %v, outputs %v), want %d records", ids, closed, st.Outputs, len(all))
	}
	if got := FormatNames(); !slices.Contains(got, "ids") {
		t.Errorf("FormatNames() = %v, want the added format", got)
	}
}
