// Package langdetect is a Go port of the Python langdetect package 1.0.9
// (itself a port of Cybozu Labs' language-detection), the language
// identifier the IFEval reference uses, with its 55 language profiles
// embedded.
//
// Detection is randomized in the original; the reference fixes
// DetectorFactory.seed = 0, and this port reproduces Python's Mersenne
// Twister, random.gauss and random.choice so that the same n-grams are drawn
// in the same order. The remaining sources of difference are the floating
// point of math.Log/Sin/Cos against the C library's, and the order of the
// profiles (Python takes the directory listing order, this port sorts by
// name), which changes only the summation order of probabilities.
package langdetect

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/parleyhq/parley/internal/pystr"
)

//go:embed profiles.tsv.gz
var profilesGz []byte

//go:embed cjk.txt
var cjkTxt string

// ErrNoFeatures is returned when the text has no n-gram any profile knows
// (langdetect's LangDetectException "No features in text.").
var ErrNoFeatures = errors.New("langdetect: no features in text")

// Detection parameters of langdetect's Detector.
const (
	alphaDefault   = 0.5
	alphaWidth     = 0.05
	iterationLimit = 1000
	probThreshold  = 0.1
	convThreshold  = 0.99999
	baseFreq       = 10000
	nTrial         = 7
	maxTextLength  = 10000
	seed           = 0
)

type model struct {
	langs []string
	// probs maps an n-gram to its probability in each language.
	probs map[string][]float64
}

var (
	loadOnce sync.Once
	loaded   *model
	loadErr  error
)

func load() (*model, error) {
	loadOnce.Do(func() {
		loaded, loadErr = parseProfiles(profilesGz)
		initCJK()
	})
	return loaded, loadErr
}

type profile struct {
	name   string
	nWords [3]int
	freq   map[string]int
}

func parseProfiles(gz []byte) (*model, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, fmt.Errorf("langdetect: profiles: %w", err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("langdetect: profiles: %w", err)
	}
	var profs []*profile
	var cur *profile
	for n, line := range strings.Split(string(raw), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if f[0] == "lang" && len(f) == 5 {
			cur = &profile{name: f[1], freq: map[string]int{}}
			for i := 0; i < 3; i++ {
				if cur.nWords[i], err = strconv.Atoi(f[2+i]); err != nil {
					return nil, fmt.Errorf("langdetect: profiles line %d: %w", n+1, err)
				}
			}
			profs = append(profs, cur)
			continue
		}
		if cur == nil || len(f) != 2 {
			return nil, fmt.Errorf("langdetect: profiles line %d: malformed", n+1)
		}
		c, err := strconv.Atoi(f[1])
		if err != nil {
			return nil, fmt.Errorf("langdetect: profiles line %d: %w", n+1, err)
		}
		cur.freq[f[0]] = c
	}
	sort.Slice(profs, func(i, j int) bool { return profs[i].name < profs[j].name })
	m := &model{probs: map[string][]float64{}}
	for i, p := range profs {
		m.langs = append(m.langs, p.name)
		for g, c := range p.freq {
			l := len([]rune(g))
			if l < 1 || l > 3 {
				continue
			}
			v := m.probs[g]
			if v == nil {
				v = make([]float64, len(profs))
				m.probs[g] = v
			}
			v[i] = float64(c) / float64(p.nWords[l-1])
		}
	}
	return m, nil
}

// Detect returns the language code langdetect.detect gives for text (ISO
// 639-1, or "zh-cn"/"zh-tw"), or ErrNoFeatures.
func Detect(text string) (string, error) {
	m, err := load()
	if err != nil {
		return "", err
	}
	ngrams := extractNgrams(m, cleanText(prepare(text)))
	if len(ngrams) == 0 {
		return "", ErrNoFeatures
	}
	langprob := make([]float64, len(m.langs))
	rng := newPyRandom(seed)
	for t := 0; t < nTrial; t++ {
		prob := make([]float64, len(m.langs))
		for i := range prob {
			prob[i] = 1.0 / float64(len(m.langs))
		}
		alpha := alphaDefault + rng.gauss()*alphaWidth
		weight := alpha / baseFreq
		for i := 0; ; i++ {
			w := m.probs[ngrams[rng.randbelow(len(ngrams))]]
			for j := range prob {
				prob[j] *= weight + w[j]
			}
			if i%5 == 0 {
				if normalize(prob) > convThreshold || i >= iterationLimit {
					break
				}
			}
		}
		for j := range langprob {
			langprob[j] += prob[j] / nTrial
		}
	}
	// _sort_probability: languages above the threshold, highest first; the
	// sort is stable, so ties keep profile order.
	best, bestP := "", 0.0
	for j, p := range langprob {
		if p > probThreshold && p > bestP {
			best, bestP = m.langs[j], p
		}
	}
	if best == "" {
		return "unknown", nil
	}
	return best, nil
}

// normalize is _normalize_prob: scale to sum 1, return the maximum.
func normalize(prob []float64) float64 {
	sum := 0.0
	for _, p := range prob {
		sum += p
	}
	maxp := 0.0
	for i, p := range prob {
		p /= sum
		if maxp < p {
			maxp = p
		}
		prob[i] = p
	}
	return maxp
}

// urlRe is Detector.URL_RE (https?://[-_.?&~;+=/#0-9A-Za-z]{1,2076}); RE2
// caps a repeat at 1000, so the bound is split.
var urlRe = regexp.MustCompile(`https?://[-_.?&~;+=/#0-9A-Za-z]{1,1000}[-_.?&~;+=/#0-9A-Za-z]{0,1000}[-_.?&~;+=/#0-9A-Za-z]{0,76}`)

// mailRe is Detector.MAIL_RE.
var mailRe = regexp.MustCompile(`[-_.0-9A-Za-z]{1,64}@[-_0-9A-Za-z]{1,255}[-_.0-9A-Za-z]{1,255}`)

// prepare is Detector.append: URLs and e-mail addresses become spaces,
// Vietnamese is normalized, runs of spaces collapse and the text is cut at
// maxTextLength characters.
func prepare(text string) []rune {
	text = urlRe.ReplaceAllString(text, " ")
	text = mailRe.ReplaceAllString(text, " ")
	rs := normalizeVi([]rune(text))
	if len(rs) > maxTextLength {
		rs = rs[:maxTextLength]
	}
	out := make([]rune, 0, len(rs))
	var pre rune
	for _, ch := range rs {
		if ch != ' ' || pre != ' ' {
			out = append(out, ch)
		}
		pre = ch
	}
	return out
}

// cleanText is Detector.cleaning_text: drop Latin letters from text that is
// mostly non-Latin.
func cleanText(rs []rune) []rune {
	latin, nonLatin := 0, 0
	for _, ch := range rs {
		if ch >= 'A' && ch <= 'z' {
			latin++
		} else if ch >= 0x300 && !(ch >= 0x1e00 && ch <= 0x1eff) {
			nonLatin++
		}
	}
	if latin*2 >= nonLatin {
		return rs
	}
	out := rs[:0:0]
	for _, ch := range rs {
		if ch < 'A' || ch > 'z' {
			out = append(out, ch)
		}
	}
	return out
}

// extractNgrams is Detector._extract_ngrams.
func extractNgrams(m *model, rs []rune) []string {
	var out []string
	var g ngram
	g.reset()
	for _, ch := range rs {
		g.addChar(ch)
		if g.capital {
			continue
		}
		for n := 1; n <= 3; n++ {
			if len(g.grams) < n {
				break
			}
			w := string(g.grams[len(g.grams)-n:])
			if w != " " {
				if _, ok := m.probs[w]; ok {
					out = append(out, w)
				}
			}
		}
	}
	return out
}

// ngram is langdetect's NGram buffer.
type ngram struct {
	grams   []rune
	capital bool
}

func (g *ngram) reset() { g.grams = []rune{' '} }

func isUpper(r rune) bool { return pystr.IsUpper(string(r)) }

// addChar is NGram.add_char.
func (g *ngram) addChar(ch rune) {
	ch = normalizeChar(ch)
	last := g.grams[len(g.grams)-1]
	if last == ' ' {
		g.grams = []rune{' '}
		g.capital = false
		if ch == ' ' {
			return
		}
	} else if len(g.grams) >= 3 {
		g.grams = append([]rune{}, g.grams[1:]...)
	}
	g.grams = append(g.grams, ch)
	if isUpper(ch) {
		if isUpper(last) {
			g.capital = true
		}
	} else {
		g.capital = false
	}
}

var cjkMap map[rune]rune

func initCJK() {
	cjkMap = map[rune]rune{}
	for _, line := range strings.Split(cjkTxt, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		rs := []rune(line)
		for _, r := range rs {
			cjkMap[r] = rs[0]
		}
	}
}

// normalizeChar is NGram.normalize, keyed on the Unicode block of ch.
func normalizeChar(ch rune) rune {
	switch {
	case ch <= 0x7f: // Basic Latin
		if ch < 'A' || (ch > 'Z' && ch < 'a') || ch > 'z' {
			return ' '
		}
	case ch <= 0xff: // Latin-1 Supplement
		switch ch {
		case 0xa0, 0xab, 0xb0, 0xbb:
			return ' '
		}
	case ch >= 0x180 && ch <= 0x24f: // Latin Extended-B (Romanian)
		switch ch {
		case 0x219:
			return 0x15f
		case 0x21b:
			return 0x163
		}
	case ch >= 0x2000 && ch <= 0x206f: // General Punctuation
		return ' '
	case ch >= 0x600 && ch <= 0x6ff: // Arabic
		if ch == 0x6cc {
			return 0x64a
		}
	case ch >= 0x1e00 && ch <= 0x1eff: // Latin Extended Additional
		if ch >= 0x1ea0 {
			return 0x1ec3
		}
	case ch >= 0x3040 && ch <= 0x309f: // Hiragana
		return 0x3042
	case ch >= 0x30a0 && ch <= 0x30ff: // Katakana
		return 0x30a2
	case (ch >= 0x3100 && ch <= 0x312f) || (ch >= 0x31a0 && ch <= 0x31bf): // Bopomofo
		return 0x3105
	case ch >= 0x4e00 && ch <= 0x9fff: // CJK Unified Ideographs
		if r, ok := cjkMap[ch]; ok {
			return r
		}
	case ch >= 0xac00 && ch <= 0xd7af: // Hangul Syllables
		return 0xac00
	}
	return ch
}

// Vietnamese normalization tables (messages.properties).
var (
	viChars  = []rune("AEIOUYaeiouy\u00c2\u00ca\u00d4\u00e2\u00ea\u00f4\u0102\u0103\u01a0\u01a1\u01af\u01b0")
	viDmarks = []rune("\u0300\u0301\u0303\u0309\u0323")
	viNormed = [][]rune{
		[]rune("\u00C0\u00C8\u00CC\u00D2\u00D9\u1EF2\u00E0\u00E8\u00EC\u00F2\u00F9\u1EF3\u1EA6\u1EC0\u1ED2\u1EA7\u1EC1\u1ED3\u1EB0\u1EB1\u1EDC\u1EDD\u1EEA\u1EEB"),
		[]rune("\u00C1\u00C9\u00CD\u00D3\u00DA\u00DD\u00E1\u00E9\u00ED\u00F3\u00FA\u00FD\u1EA4\u1EBE\u1ED0\u1EA5\u1EBF\u1ED1\u1EAE\u1EAF\u1EDA\u1EDB\u1EE8\u1EE9"),
		[]rune("\u00C3\u1EBC\u0128\u00D5\u0168\u1EF8\u00E3\u1EBD\u0129\u00F5\u0169\u1EF9\u1EAA\u1EC4\u1ED6\u1EAB\u1EC5\u1ED7\u1EB4\u1EB5\u1EE0\u1EE1\u1EEE\u1EEF"),
		[]rune("\u1EA2\u1EBA\u1EC8\u1ECE\u1EE6\u1EF6\u1EA3\u1EBB\u1EC9\u1ECF\u1EE7\u1EF7\u1EA8\u1EC2\u1ED4\u1EA9\u1EC3\u1ED5\u1EB2\u1EB3\u1EDE\u1EDF\u1EEC\u1EED"),
		[]rune("\u1EA0\u1EB8\u1ECA\u1ECC\u1EE4\u1EF4\u1EA1\u1EB9\u1ECB\u1ECD\u1EE5\u1EF5\u1EAC\u1EC6\u1ED8\u1EAD\u1EC7\u1ED9\u1EB6\u1EB7\u1EE2\u1EE3\u1EF0\u1EF1"),
	}
)

func runeIndex(rs []rune, r rune) int {
	for i, x := range rs {
		if x == r {
			return i
		}
	}
	return -1
}

// normalizeVi is NGram.normalize_vi: a vowel followed by a combining
// diacritic becomes the precomposed character.
func normalizeVi(rs []rune) []rune {
	out := make([]rune, 0, len(rs))
	for i := 0; i < len(rs); i++ {
		if i+1 < len(rs) {
			a, d := runeIndex(viChars, rs[i]), runeIndex(viDmarks, rs[i+1])
			if a >= 0 && d >= 0 {
				out = append(out, viNormed[d][a])
				i++
				continue
			}
		}
		out = append(out, rs[i])
	}
	return out
}

// pyRandom is CPython's random.Random (MT19937) for the calls langdetect
// makes: seed(int), gauss and choice.
type pyRandom struct {
	mt        [624]uint32
	index     int
	gaussNext float64
	hasGauss  bool
}

func newPyRandom(seed uint32) *pyRandom {
	r := &pyRandom{}
	r.initByArray([]uint32{seed})
	return r
}

func (r *pyRandom) initGenrand(s uint32) {
	r.mt[0] = s
	for i := 1; i < 624; i++ {
		r.mt[i] = 1812433253*(r.mt[i-1]^(r.mt[i-1]>>30)) + uint32(i)
	}
	r.index = 624
}

func (r *pyRandom) initByArray(key []uint32) {
	r.initGenrand(19650218)
	i, j := 1, 0
	k := 624
	if len(key) > k {
		k = len(key)
	}
	for ; k > 0; k-- {
		r.mt[i] = (r.mt[i] ^ ((r.mt[i-1] ^ (r.mt[i-1] >> 30)) * 1664525)) + key[j] + uint32(j)
		i++
		j++
		if i >= 624 {
			r.mt[0] = r.mt[623]
			i = 1
		}
		if j >= len(key) {
			j = 0
		}
	}
	for k = 623; k > 0; k-- {
		r.mt[i] = (r.mt[i] ^ ((r.mt[i-1] ^ (r.mt[i-1] >> 30)) * 1566083941)) - uint32(i)
		i++
		if i >= 624 {
			r.mt[0] = r.mt[623]
			i = 1
		}
	}
	r.mt[0] = 0x80000000
}

func (r *pyRandom) uint32() uint32 {
	if r.index >= 624 {
		for kk := 0; kk < 624; kk++ {
			y := (r.mt[kk] & 0x80000000) | (r.mt[(kk+1)%624] & 0x7fffffff)
			v := r.mt[(kk+397)%624] ^ (y >> 1)
			if y&1 != 0 {
				v ^= 0x9908b0df
			}
			r.mt[kk] = v
		}
		r.index = 0
	}
	y := r.mt[r.index]
	r.index++
	y ^= y >> 11
	y ^= (y << 7) & 0x9d2c5680
	y ^= (y << 15) & 0xefc60000
	y ^= y >> 18
	return y
}

// random is random.random(): 53 random bits.
func (r *pyRandom) random() float64 {
	a, b := r.uint32()>>5, r.uint32()>>6
	return (float64(a)*67108864.0 + float64(b)) * (1.0 / 9007199254740992.0)
}

// twoPi is random.TWOPI (2.0 * math.pi, exact in binary).
const twoPi = 2 * math.Pi

// gauss is random.gauss(0, 1) (Box-Muller, caching the second value).
func (r *pyRandom) gauss() float64 {
	if r.hasGauss {
		r.hasGauss = false
		return r.gaussNext
	}
	x2pi := r.random() * twoPi
	g2rad := math.Sqrt(-2.0 * math.Log(1.0-r.random()))
	r.gaussNext, r.hasGauss = math.Sin(x2pi)*g2rad, true
	return math.Cos(x2pi) * g2rad
}

// randbelow is random._randbelow_with_getrandbits(n), for 0 < n < 2^32.
func (r *pyRandom) randbelow(n int) int {
	k := 0
	for v := n; v > 0; v >>= 1 {
		k++
	}
	for {
		v := int(r.uint32() >> (32 - k))
		if v < n {
			return v
		}
	}
}
