// Package golden compares a test's output with a file kept in testdata/,
// and rewrites the file instead when the test runs with -update:
//
//	golden.Check(t, "testdata/report.golden.md", got)
//
// go test -update ./pkg/ rewrites every golden file the package's tests
// check; review the diff (git diff testdata/) before committing it. A
// mismatch names the file, says how to update it, and shows the lines that
// differ.
package golden

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// update is the -update flag of every test binary that imports golden.
var update = flag.Bool("update", false, "rewrite the golden files in testdata/ with what the tests produce")

// Check fails t when got differs from the golden file at path, relative to
// the test's directory. Under -update it writes got to path instead
// (making its directory) and passes.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatalf("golden: %v", err)
			return
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatalf("golden: %v", err)
			return
		}
		t.Logf("golden: rewrote %s", path)
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden: %v (go test -update writes it)", err)
		return
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s: the output differs from the golden file (go test -update rewrites it; review the diff):\n%s", path, diff(string(want), string(got)))
	}
}

// contextLines is the number of unchanged lines Diff shows around a change.
const contextLines = 2

// maxCells bounds the table of a line diff (lines of want times lines of
// got); larger inputs are shown whole.
const maxCells = 4 << 20

// diff returns the lines that differ between want and got, "-" for want's
// and "+" for got's, with a few unchanged lines around them and the line
// numbers of each hunk ("@@ -want +got @@"); "" when they are equal.
func diff(want, got string) string {
	if want == got {
		return ""
	}
	a, b := splitLines(want), splitLines(got)
	if len(a)*len(b) > maxCells {
		return "--- want\n" + want + "\n+++ got\n" + got
	}
	ops := lineOps(a, b)
	var out strings.Builder
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		// A hunk: the changes from i, joined while they are at most
		// 2*contextLines unchanged lines apart, with contextLines around them.
		start := max(i-contextLines, 0)
		end := i
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			next := end
			for next < len(ops) && ops[next].kind == ' ' {
				next++
			}
			if next == len(ops) || next-end > 2*contextLines {
				break
			}
			end = next
		}
		stop := min(end+contextLines, len(ops))
		fmt.Fprintf(&out, "@@ -%d +%d @@\n", ops[start].a+1, ops[start].b+1)
		for _, op := range ops[start:stop] {
			line := ""
			if op.kind == '-' {
				line = a[op.a]
			} else {
				line = b[op.b]
			}
			fmt.Fprintf(&out, "%c %s\n", op.kind, line)
		}
		i = stop
	}
	return out.String()
}

// op is one line of a diff: kept (' '), removed from want ('-') or added
// in got ('+'), at line a of want and line b of got (0-based; the lines
// after it where it has none).
type op struct {
	kind byte
	a, b int
}

// lineOps returns a shortest edit from a to b, from the longest common
// subsequence of their lines.
func lineOps(a, b []string) []op {
	// lcs[i][j]: the longest common subsequence of a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var ops []op
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			ops = append(ops, op{' ', i, j})
			i, j = i+1, j+1
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, op{'-', i, j})
			i++
		default:
			ops = append(ops, op{'+', i, j})
			j++
		}
	}
	return ops
}

// splitLines splits s into lines; a last line without a newline is marked
// so that it differs from the same line with one.
func splitLines(s string) []string {
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	for i, l := range lines {
		if strings.HasSuffix(l, "\n") {
			lines[i] = strings.TrimSuffix(l, "\n")
		} else {
			lines[i] = l + " (no newline at the end)"
		}
	}
	return lines
}
