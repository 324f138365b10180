package ifeval

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
)

// Comparison relations of the reference (_COMPARISON_RELATION).
const (
	relationLessThan = "less than"
	relationAtLeast  = "at least"
)

// args reads the kwargs of one instruction. Null values count as absent (the
// Hugging Face copy of the data pads every kwargs object with nulls); any
// other key the instruction does not take is an error, as it is in Python.
type args struct {
	id   string
	m    map[string]any
	used map[string]bool
}

func newArgs(id string, m map[string]any) *args {
	return &args{id: id, m: m, used: map[string]bool{}}
}

func (a *args) errf(name, format string, v ...any) error {
	return fmt.Errorf("ifeval.Build: %s: kwarg %q: %s", a.id, name, fmt.Sprintf(format, v...))
}

func (a *args) get(name string) (any, bool) {
	a.used[name] = true
	v, ok := a.m[name]
	if !ok || v == nil {
		return nil, false
	}
	return v, true
}

// optInt returns an integer kwarg; integral floats (JSON numbers) are accepted.
func (a *args) optInt(name string) (int, bool, error) {
	v, ok := a.get(name)
	if !ok {
		return 0, false, nil
	}
	switch x := v.(type) {
	case int:
		return x, true, nil
	case int32:
		return int(x), true, nil
	case int64:
		return int(x), true, nil
	case float64:
		if x != math.Trunc(x) || math.Abs(x) > 1<<53 {
			return 0, false, a.errf(name, "want an integer, got %v", x)
		}
		return int(x), true, nil
	case json.Number:
		n, err := x.Int64()
		if err != nil {
			return 0, false, a.errf(name, "want an integer, got %v", x)
		}
		return int(n), true, nil
	}
	return 0, false, a.errf(name, "want an integer, got %T", v)
}

// reqInt returns an integer kwarg that must be present; where the reference
// would draw a random value (absent, or below min) it is an error.
func (a *args) reqInt(name string, min int) (int, error) {
	n, ok, err := a.optInt(name)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, a.errf(name, "missing (the reference would draw it at random)")
	}
	if n < min {
		return 0, a.errf(name, "%d is below %d (the reference would draw it at random)", n, min)
	}
	return n, nil
}

func (a *args) optStr(name string) (string, bool, error) {
	v, ok := a.get(name)
	if !ok {
		return "", false, nil
	}
	s, isStr := v.(string)
	if !isStr {
		return "", false, a.errf(name, "want a string, got %T", v)
	}
	return s, true, nil
}

func (a *args) reqStr(name string) (string, error) {
	s, ok, err := a.optStr(name)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", a.errf(name, "missing (the reference would draw it at random)")
	}
	return s, nil
}

// reqStrs returns a non-empty list of strings.
func (a *args) reqStrs(name string) ([]string, error) {
	v, ok := a.get(name)
	if !ok {
		return nil, a.errf(name, "missing (the reference would draw it at random)")
	}
	var out []string
	switch x := v.(type) {
	case []string:
		out = append(out, x...)
	case []any:
		for i, e := range x {
			s, isStr := e.(string)
			if !isStr {
				return nil, a.errf(name, "element %d: want a string, got %T", i, e)
			}
			out = append(out, s)
		}
	default:
		return nil, a.errf(name, "want a list of strings, got %T", v)
	}
	if len(out) == 0 {
		return nil, a.errf(name, "empty (the reference would draw it at random)")
	}
	return out, nil
}

// relation returns a comparison relation kwarg.
func (a *args) relation(name string) (string, error) {
	s, err := a.reqStr(name)
	if err != nil {
		return "", err
	}
	if s != relationLessThan && s != relationAtLeast {
		return "", a.errf(name, "%q is not %q or %q", s, relationLessThan, relationAtLeast)
	}
	return s, nil
}

// done rejects non-null kwargs the instruction does not take.
func (a *args) done() error {
	var extra []string
	for k, v := range a.m {
		if v != nil && !a.used[k] {
			extra = append(extra, k)
		}
	}
	if len(extra) == 0 {
		return nil
	}
	sort.Strings(extra)
	return fmt.Errorf("ifeval.Build: %s: unexpected kwarg %q (takes %s)", a.id, extra[0], a.takes())
}

func (a *args) takes() string {
	if len(a.used) == 0 {
		return "no kwargs"
	}
	var names []string
	for k := range a.used {
		names = append(names, fmt.Sprintf("%q", k))
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// compare applies a relation: count < n for "less than", count >= n otherwise.
func compare(relation string, count, n int) bool {
	if relation == relationLessThan {
		return count < n
	}
	return count >= n
}
