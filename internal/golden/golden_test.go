package golden

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a testing.TB that records what Check reports.
type recorder struct {
	testing.TB
	errors, fatals, logs []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, a ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, a...))
}
func (r *recorder) Fatalf(format string, a ...any) {
	r.fatals = append(r.fatals, fmt.Sprintf(format, a...))
}
func (r *recorder) Logf(format string, a ...any) { r.logs = append(r.logs, fmt.Sprintf(format, a...)) }

// setUpdate sets -update for one test.
func setUpdate(t *testing.T, v bool) {
	old := *update
	*update = v
	t.Cleanup(func() { *update = old })
}

func TestCheck(t *testing.T) {
	setUpdate(t, false)
	dir := t.TempDir()
	path := filepath.Join(dir, "out.golden")
	if err := os.WriteFile(path, []byte("a\nb\nc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name       string
		path       string
		got        string
		wantErrors []string // substrings of the one error, none when nil
		wantFatal  string
	}{
		{"equal", path, "a\nb\nc\n", nil, ""},
		{"differs", path, "a\nB\nc\n", []string{path + ": the output differs", "go test -update rewrites it", "- b\n+ B\n"}, ""},
		{"missing", filepath.Join(dir, "none.golden"), "x", nil, "go test -update writes it"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{TB: t}
			Check(r, tt.path, []byte(tt.got))
			if tt.wantFatal != "" {
				if len(r.fatals) != 1 || !strings.Contains(r.fatals[0], tt.wantFatal) {
					t.Errorf("Check(%s, %q) fatals %q, want one saying %q", tt.path, tt.got, r.fatals, tt.wantFatal)
				}
				return
			}
			if len(r.fatals) != 0 {
				t.Fatalf("Check(%s, %q) fatals %q, want none", tt.path, tt.got, r.fatals)
			}
			if tt.wantErrors == nil {
				if len(r.errors) != 0 {
					t.Errorf("Check(%s, %q) errors %q, want none", tt.path, tt.got, r.errors)
				}
				return
			}
			if len(r.errors) != 1 {
				t.Fatalf("Check(%s, %q) errors %q, want one", tt.path, tt.got, r.errors)
			}
			for _, want := range tt.wantErrors {
				if !strings.Contains(r.errors[0], want) {
					t.Errorf("Check(%s, %q) error %q lacks %q", tt.path, tt.got, r.errors[0], want)
				}
			}
		})
	}
}

// TestCheckUpdate: under -update, Check writes the file (and its folder)
// and passes, and the next check without -update passes.
func TestCheckUpdate(t *testing.T) {
	setUpdate(t, true)
	path := filepath.Join(t.TempDir(), "sub", "new.golden")
	r := &recorder{TB: t}
	Check(r, path, []byte("fresh\n"))
	if len(r.errors)+len(r.fatals) != 0 {
		t.Fatalf("Check under -update reported %q %q, want nothing", r.errors, r.fatals)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "fresh\n" {
		t.Fatalf("after Check under -update, %s = %q, %v; want %q", path, b, err, "fresh\n")
	}
	*update = false
	r = &recorder{TB: t}
	Check(r, path, []byte("fresh\n"))
	if len(r.errors)+len(r.fatals) != 0 {
		t.Errorf("Check of the rewritten file reported %q %q, want nothing", r.errors, r.fatals)
	}
}

func TestDiff(t *testing.T) {
	for _, tt := range []struct {
		want, got string
		diff      string
	}{
		{"a\nb\n", "a\nb\n", ""},
		{"a\nb\nc\n", "a\nB\nc\n", "@@ -1 +1 @@\n  a\n- b\n+ B\n  c\n"},
		{"", "x\n", "@@ -1 +1 @@\n+ x\n"},
		{"x\n", "", "@@ -1 +1 @@\n- x\n"},
		{"a\n", "a", "@@ -1 +1 @@\n- a\n+ a (no newline at the end)\n"},
		// two changes far apart: two hunks, two lines of context each
		{"1\n2\n3\n4\n5\n6\n7\n8\n9\n", "0\n2\n3\n4\n5\n6\n7\n8\n9\n10\n",
			"@@ -1 +1 @@\n- 1\n+ 0\n  2\n  3\n@@ -8 +8 @@\n  8\n  9\n+ 10\n"},
		// changes close together: one hunk
		{"1\n2\n3\n4\n", "0\n2\n3\n5\n", "@@ -1 +1 @@\n- 1\n+ 0\n  2\n  3\n- 4\n+ 5\n"},
	} {
		if got := diff(tt.want, tt.got); got != tt.diff {
			t.Errorf("diff(%q, %q) =\n%s\nwant\n%s", tt.want, tt.got, got, tt.diff)
		}
	}
}
