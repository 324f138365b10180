package generate

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// Normalize folds text for duplicate detection: lower case, every
// punctuation or symbol character becomes a space, and runs of white space
// become one space, trimmed. "Do you tell   them?" and "do you tell them"
// normalise alike.
func Normalize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	space := true // drop leading space
	for _, r := range s {
		switch {
		case unicode.IsPunct(r) || unicode.IsSymbol(r) || unicode.IsSpace(r) || unicode.IsControl(r):
			if !space {
				b.WriteByte(' ')
				space = true
			}
		default:
			b.WriteRune(unicode.ToLower(r))
			space = false
		}
	}
	return strings.TrimSuffix(b.String(), " ")
}

// WordCount is the number of white-space separated words of s.
func WordCount(s string) int { return len(strings.Fields(s)) }

// Clean tidies a generated text before it is checked: surrounding white
// space and one pair of matching surrounding quotes are removed, and runs of
// spaces and tabs inside a line become one space. Line breaks are kept, so
// that CheckForm can reject multi-paragraph texts and lists.
func Clean(s string) string {
	s = strings.TrimSpace(s)
	for _, q := range [][2]string{{`"`, `"`}, {"\u201c", "\u201d"}, {"'", "'"}, {"\u2018", "\u2019"}} {
		if len(s) > len(q[0])+len(q[1]) && strings.HasPrefix(s, q[0]) && strings.HasSuffix(s, q[1]) {
			inner := s[len(q[0]) : len(s)-len(q[1])]
			if !strings.Contains(inner, q[0]) && !strings.Contains(inner, q[1]) {
				s = strings.TrimSpace(inner)
			}
			break
		}
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// CheckLength reports whether s has between minWords and maxWords words.
func CheckLength(s string, minWords, maxWords int) error {
	n := WordCount(s)
	switch {
	case n < minWords:
		return fmt.Errorf("%d words, fewer than %d", n, minWords)
	case n > maxWords:
		return fmt.Errorf("%d words, more than %d", n, maxWords)
	}
	return nil
}

var (
	// listMarkerRe matches an enumeration marker: "1.", "2)", "(3)", "(b)".
	listMarkerRe = regexp.MustCompile(`(?:^|\s)(?:\d{1,2}[.)]|\(\d{1,2}\)|\([a-h]\))\s`)
	// labelRe matches a leading label such as "Dilemma 3:" or "Scenario:".
	labelRe = regexp.MustCompile(`(?i)^(?:dilemma|scenario|situation|task|prompt|question|example|category|professional|interpersonal|micro[- _]?ethics|open[- _]?ended)\b[^:]{0,20}:`)
	// metaRe matches an assistant's preamble.
	metaRe = regexp.MustCompile(`(?i)^(?:here(?:'s| is| are)|sure\b|certainly\b|of course\b|as an ai\b)`)
)

// CheckForm reports whether text has the form of a curriculum prompt: one
// plain paragraph (no line breaks, no markdown, no list, no bracketed
// placeholder, no label or preamble), at most two question marks (one
// situation, not a list of questions), ending with a question mark for a
// dilemma (kind KindDilemmas) or with terminal punctuation for an
// open-ended task (KindOpenEnded).
func CheckForm(kind, text string) error {
	t := strings.TrimSpace(text)
	switch {
	case t == "":
		return errors.New("empty")
	case strings.ContainsAny(t, "\n\r"):
		return errors.New("more than one line or paragraph")
	case strings.Contains(t, "**") || strings.Contains(t, "__") || strings.Contains(t, "`") ||
		strings.Contains(t, "##") || strings.Contains(t, "|"):
		return errors.New("markdown")
	case strings.HasPrefix(t, "#") || strings.HasPrefix(t, "- ") || strings.HasPrefix(t, "* ") ||
		strings.HasPrefix(t, "> ") || strings.HasPrefix(t, "\u2022"):
		return errors.New("markdown or a list item")
	case strings.ContainsAny(t, "[]{}<>"):
		return errors.New("a bracketed placeholder or markup")
	case metaRe.MatchString(t):
		return errors.New("an assistant's preamble")
	case labelRe.MatchString(t):
		return errors.New("a leading label")
	}
	if m := listMarkerRe.FindAllStringIndex(t, -1); len(m) >= 2 || (len(m) == 1 && m[0][0] == 0) {
		return errors.New("an enumerated list")
	}
	if q := strings.Count(t, "?"); q > 2 {
		return fmt.Errorf("%d questions: more than one situation", q)
	}
	end := strings.TrimRight(t, "\"'\u201d\u2019) ")
	last := ""
	if end != "" {
		last = end[len(end)-1:]
	}
	switch kind {
	case KindOpenEnded:
		if last != "." && last != "?" && last != "!" {
			return errors.New("does not end with a full stop or question mark")
		}
	default:
		if last != "?" {
			return errors.New("does not end with a question")
		}
	}
	return nil
}

// shingleSize is the number of words in a shingle of the near-duplicate
// check.
const shingleSize = 3

// shingles returns the hashed word 3-shingles of normalised text (the
// whole text as one shingle when it has fewer than three words).
func shingles(norm string) map[uint64]struct{} {
	words := strings.Fields(norm)
	out := make(map[uint64]struct{}, len(words))
	if len(words) < shingleSize {
		if len(words) > 0 {
			out[hashString(strings.Join(words, " "))] = struct{}{}
		}
		return out
	}
	for i := 0; i+shingleSize <= len(words); i++ {
		out[hashString(strings.Join(words[i:i+shingleSize], " "))] = struct{}{}
	}
	return out
}

// Jaccard is the Jaccard similarity of the word 3-shingle sets of a and b
// after Normalize: |A∩B| / |A∪B|, 1 for identical texts, 0 for none shared.
func Jaccard(a, b string) float64 {
	sa, sb := shingles(Normalize(a)), shingles(Normalize(b))
	if len(sa) == 0 && len(sb) == 0 {
		return 1
	}
	inter := 0
	for h := range sa {
		if _, ok := sb[h]; ok {
			inter++
		}
	}
	return float64(inter) / float64(len(sa)+len(sb)-inter)
}

// Index remembers accepted texts and finds duplicates: exact ones (equal
// after Normalize) and near ones (word 3-shingle Jaccard similarity at or
// above the threshold, computed exactly through an inverted index of
// shingles). Not safe for concurrent use.
type Index struct {
	threshold float64
	exact     map[string]int
	texts     []string
	sizes     []int
	postings  map[uint64][]int32
}

// NewIndex returns an empty index. A threshold of 1 or more (or 0 or less)
// detects exact duplicates only.
func NewIndex(threshold float64) *Index {
	return &Index{threshold: threshold, exact: map[string]int{}, postings: map[uint64][]int32{}}
}

// Len is the number of texts added.
func (x *Index) Len() int { return len(x.texts) }

// Match is what Check found.
type Match struct {
	// Reason is "" (new), ReasonDuplicate or ReasonNearDuplicate.
	Reason string
	// Similar is the accepted text matched, Similarity its Jaccard
	// similarity (1 for an exact duplicate).
	Similar    string
	Similarity float64
}

// Check looks text up without adding it.
func (x *Index) Check(text string) Match {
	norm := Normalize(text)
	if i, ok := x.exact[norm]; ok {
		return Match{Reason: ReasonDuplicate, Similar: x.texts[i], Similarity: 1}
	}
	if x.threshold <= 0 || x.threshold >= 1 {
		return Match{}
	}
	sh := shingles(norm)
	shared := map[int32]int{}
	for h := range sh {
		for _, id := range x.postings[h] {
			shared[id]++
		}
	}
	best, bestID := 0.0, int32(-1)
	for id, n := range shared {
		j := float64(n) / float64(len(sh)+x.sizes[id]-n)
		if j > best || (j == best && id < bestID) {
			best, bestID = j, id
		}
	}
	if bestID >= 0 && best >= x.threshold {
		return Match{Reason: ReasonNearDuplicate, Similar: x.texts[bestID], Similarity: best}
	}
	return Match{}
}

// Add records text as accepted.
func (x *Index) Add(text string) {
	norm := Normalize(text)
	id := int32(len(x.texts))
	if _, ok := x.exact[norm]; !ok {
		x.exact[norm] = int(id)
	}
	sh := shingles(norm)
	x.texts = append(x.texts, text)
	x.sizes = append(x.sizes, len(sh))
	for h := range sh {
		x.postings[h] = append(x.postings[h], id)
	}
}
