// Package summary holds the table a command prints when it ends: what it
// did, in rows a researcher reads at a glance on a terminal, or the same
// rows as one structured log line when logs are JSON.
package summary

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"go.uber.org/zap"
)

// Table is a titled list of rows, in the order they were added.
type Table struct {
	title string
	rows  []row
}

type row struct {
	key   string
	value any
}

// New returns an empty table titled title (e.g. "rollout").
func New(title string) *Table { return &Table{title: title} }

// Add appends a row and returns t, so rows chain.
func (t *Table) Add(key string, value any) *Table {
	t.rows = append(t.rows, row{key, value})
	return t
}

// AddIf appends a row only when cond holds (a count worth showing).
func (t *Table) AddIf(cond bool, key string, value any) *Table {
	if cond {
		t.Add(key, value)
	}
	return t
}

// Title returns the table's title.
func (t *Table) Title() string { return t.title }

// WriteText writes the table as aligned text: a title line, then one
// "key  value" line per row.
func (t *Table) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "── %s ──\n", t.title)
	for _, r := range t.rows {
		fmt.Fprintf(tw, "  %s\t%s\n", r.key, Format(r.value))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("summary: write %s: %w", t.title, err)
	}
	return nil
}

// Fields returns the rows as zap fields, for a JSON log line.
func (t *Table) Fields() []zap.Field {
	fs := make([]zap.Field, 0, len(t.rows))
	for _, r := range t.rows {
		key := strings.ReplaceAll(r.key, " ", "_")
		switch v := r.value.(type) {
		case time.Duration:
			fs = append(fs, zap.Float64(key+"_s", v.Seconds()))
		default:
			fs = append(fs, zap.Any(key, v))
		}
	}
	return fs
}

// Format renders one value for the text table: durations to a tenth of a
// second, floats to four significant digits, integers with thousands
// separators, lists comma-separated, a nil *float64 (a mean over nothing)
// as "–".
func Format(v any) string {
	switch x := v.(type) {
	case time.Duration:
		return x.Round(100 * time.Millisecond).String()
	case float64:
		return strconv.FormatFloat(x, 'g', 4, 64)
	case float32:
		return strconv.FormatFloat(float64(x), 'g', 4, 32)
	case *float64: // nil: undefined (rounds to agreement without an agreement)
		if x == nil {
			return "–"
		}
		return Format(*x)
	case int:
		return thousands(int64(x))
	case int64:
		return thousands(x)
	case []string:
		return strings.Join(x, ", ")
	case nil:
		return "–"
	default:
		return fmt.Sprint(x)
	}
}

// thousands writes n with a comma every three digits.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
