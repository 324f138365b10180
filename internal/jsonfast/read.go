// Package jsonfast is parley's one JSON fast path, for the hot messages of
// the inference API (completions and tokenizations, on the client and in
// serve-sim): a strict, allocation-light reader (Reader) that validates
// and skips in one pass and reads only the fields asked for, and writers
// that append JSON values to a byte slice (AppendString, AppendInt32s,
// AppendFloat). Everything else uses encoding/json; the tests check both
// paths agree.
package jsonfast

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Reader is a strict, allocation-light JSON reader for the hot messages.
// encoding/json scans every byte twice through a per-byte state machine
// (validate, then decode) and spends most of a completion's client CPU
// skipping fields parley never reads (top_logprobs, tokens, text_offset);
// Reader validates and skips in one tight pass. It accepts exactly RFC
// 8259 JSON; the tests check it against encoding/json.
type Reader struct {
	b     []byte
	i     int
	depth int
}

// NewReader returns a Reader over b.
func NewReader(b []byte) *Reader { return &Reader{b: b} }

// Pos is the offset of the next byte to read.
func (r *Reader) Pos() int { return r.i }

// Rest is the input from the reader's position on.
func (r *Reader) Rest() []byte { return r.b[r.i:] }

// Advance moves the reader n bytes on, over bytes the caller has matched
// itself (a prefix of Rest).
func (r *Reader) Advance(n int) { r.i = min(r.i+n, len(r.b)) }

// MaxDepth bounds the nesting of containers.
const MaxDepth = 10000

// ErrUnexpectedEnd is the error of input that ends inside a value.
var ErrUnexpectedEnd = errors.New("unexpected end of JSON input")

// Errorf is an error at the reader's position.
func (r *Reader) Errorf(format string, args ...any) error {
	return fmt.Errorf("invalid JSON at offset %d: %s", r.i, fmt.Sprintf(format, args...))
}

func (r *Reader) ws() {
	if r.i < len(r.b) && r.b[r.i] > ' ' {
		return // compact JSON: the usual case
	}
	for r.i < len(r.b) {
		switch r.b[r.i] {
		case ' ', '\n', '\r', '\t':
			r.i++
		default:
			return
		}
	}
}

// Peek skips whitespace and returns the next byte (0 at the end).
func (r *Reader) Peek() byte {
	r.ws()
	if r.i >= len(r.b) {
		return 0
	}
	return r.b[r.i]
}

// End checks that only whitespace remains.
func (r *Reader) End() error {
	r.ws()
	if r.i != len(r.b) {
		return r.Errorf("unexpected %q after the top-level value", r.b[r.i])
	}
	return nil
}

// Null consumes a null literal if one comes next.
func (r *Reader) Null() (bool, error) {
	if r.Peek() != 'n' {
		return false, nil
	}
	return true, r.literal("null")
}

func (r *Reader) literal(lit string) error {
	if len(r.b)-r.i < len(lit) || string(r.b[r.i:r.i+len(lit)]) != lit {
		return r.Errorf("invalid literal, want %s", lit)
	}
	r.i += len(lit)
	return nil
}

// Object reads an object, calling field for each key with the reader
// positioned at the value; field must consume the value.
func (r *Reader) Object(field func(key []byte) error) error {
	if r.Peek() != '{' {
		return r.Errorf("want an object")
	}
	r.i++
	if r.depth++; r.depth > MaxDepth {
		return r.Errorf("nested too deeply")
	}
	defer func() { r.depth-- }()
	if r.Peek() == '}' {
		r.i++
		return nil
	}
	for {
		if r.Peek() != '"' {
			return r.Errorf("want an object key")
		}
		key, err := r.RawString()
		if err != nil {
			return err
		}
		if r.Peek() != ':' {
			return r.Errorf("want ':' after an object key")
		}
		r.i++
		if err := field(key); err != nil {
			return err
		}
		switch r.Peek() {
		case ',':
			r.i++
		case '}':
			r.i++
			return nil
		default:
			return r.Errorf("want ',' or '}' in an object")
		}
	}
}

// Array reads an array, calling elem for each element with the reader
// positioned at it; elem must consume it.
func (r *Reader) Array(elem func(i int) error) error {
	if r.Peek() != '[' {
		return r.Errorf("want an array")
	}
	r.i++
	if r.depth++; r.depth > MaxDepth {
		return r.Errorf("nested too deeply")
	}
	defer func() { r.depth-- }()
	if r.Peek() == ']' {
		r.i++
		return nil
	}
	for k := 0; ; k++ {
		if err := elem(k); err != nil {
			return err
		}
		switch r.Peek() {
		case ',':
			r.i++
		case ']':
			r.i++
			return nil
		default:
			return r.Errorf("want ',' or ']' in an array")
		}
	}
}

// Skip consumes any value, iteratively (no recursion, no closures).
func (r *Reader) Skip() error {
	var stackBuf [32]byte
	stack := stackBuf[:0] // open containers: '{' or '['
	for {
		// Expect a value.
		switch c := r.Peek(); c {
		case '{', '[':
			r.i++
			if r.depth+len(stack) >= MaxDepth {
				return r.Errorf("nested too deeply")
			}
			closer := byte('}')
			if c == '[' {
				closer = ']'
			}
			if r.Peek() == closer {
				r.i++
				break // an empty container is a complete value
			}
			stack = append(stack, c)
			if c == '{' {
				if err := r.key(); err != nil {
					return err
				}
			}
			continue
		case '"':
			if _, err := r.RawString(); err != nil {
				return err
			}
		case 't':
			if err := r.literal("true"); err != nil {
				return err
			}
		case 'f':
			if err := r.literal("false"); err != nil {
				return err
			}
		case 'n':
			if err := r.literal("null"); err != nil {
				return err
			}
		case 0:
			return ErrUnexpectedEnd
		default:
			if _, err := r.Number(); err != nil {
				return err
			}
		}
		// After a value: close finished containers, or move to the next
		// element.
		for {
			if len(stack) == 0 {
				return nil
			}
			top := stack[len(stack)-1]
			c := r.Peek()
			if c == ',' {
				r.i++
				if top == '{' {
					if err := r.key(); err != nil {
						return err
					}
				}
				break
			}
			if (top == '{' && c == '}') || (top == '[' && c == ']') {
				r.i++
				stack = stack[:len(stack)-1]
				continue
			}
			if c == 0 {
				return ErrUnexpectedEnd
			}
			return r.Errorf("want ',' or a closing bracket")
		}
	}
}

// key reads an object key and its colon.
func (r *Reader) key() error {
	if r.Peek() != '"' {
		return r.Errorf("want an object key")
	}
	if _, err := r.RawString(); err != nil {
		return err
	}
	if r.Peek() != ':' {
		return r.Errorf("want ':' after an object key")
	}
	r.i++
	return nil
}

// Number consumes a number and returns its text.
func (r *Reader) Number() ([]byte, error) {
	b, start := r.b, r.i
	i := r.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i++; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		}
	default:
		return nil, r.Errorf("want a value")
	}
	if i < len(b) && b[i] == '.' {
		i++
		d := i
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		}
		if i == d {
			r.i = i
			return nil, r.Errorf("want a digit after '.'")
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		}
		if i == d {
			r.i = i
			return nil, r.Errorf("want a digit in the exponent")
		}
	}
	r.i = i
	return b[start:i], nil
}

// Uint31s reads an array of non-negative integers that fit int32 (token
// ids; the reader at '['), calling each for every one, in order.
func (r *Reader) Uint31s(each func(v int32)) error {
	if r.Peek() != '[' {
		return r.Errorf("want an array")
	}
	r.i++
	if r.Peek() == ']' {
		r.i++
		return nil
	}
	for {
		r.ws()
		v, err := r.Uint31()
		if err != nil {
			return err
		}
		each(v)
		switch r.Peek() {
		case ',':
			r.i++
		case ']':
			r.i++
			return nil
		case 0:
			return ErrUnexpectedEnd
		default:
			return r.Errorf("want ',' or ']' in an array")
		}
	}
}

// Int32s reads an array of integers that fit int32 (the reader at '['),
// calling each for every one, in order.
func (r *Reader) Int32s(each func(v int32)) error {
	return r.Array(func(int) error {
		if r.Peek() == 0 {
			return ErrUnexpectedEnd
		}
		num, err := r.Number()
		if err != nil {
			return err
		}
		v, err := strconv.ParseInt(string(num), 10, 32)
		if err != nil {
			return fmt.Errorf("%s is not an int32", num)
		}
		each(int32(v))
		return nil
	})
}

// Uint31 reads a non-negative JSON integer that fits int32 (a token id).
func (r *Reader) Uint31() (int32, error) {
	b, i := r.b, r.i
	var v uint64
	for ; i < len(b) && i-r.i <= 10; i++ {
		d := b[i] - '0'
		if d > 9 {
			break
		}
		v = v*10 + uint64(d)
	}
	n := i - r.i
	switch {
	case n == 0 || n > 10 || (i < len(b) && (b[i] == '.' || b[i] == 'e' || b[i] == 'E')):
		// Not a plain integer: say why, reading it as a number.
		if r.Peek() == 0 {
			return 0, ErrUnexpectedEnd
		}
		num, err := r.Number()
		if err != nil {
			return 0, err
		}
		return ParseUint31(num)
	case n > 1 && b[r.i] == '0':
		return 0, r.Errorf("number with a leading zero")
	case v > 1<<31-1:
		return 0, fmt.Errorf("token id %s overflows int32", b[r.i:i])
	}
	r.i = i
	return int32(v), nil
}

// ParseUint31 parses the text of a JSON number that must be a
// non-negative integer fitting int32 (a token id), saying why not.
func ParseUint31(num []byte) (int32, error) {
	if len(num) == 0 || len(num) > 10 {
		return 0, fmt.Errorf("token id %q is not an int32", num)
	}
	var v int64
	for _, c := range num {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("token id %q is not a non-negative integer", num)
		}
		v = v*10 + int64(c-'0')
	}
	if v > 1<<31-1 {
		return 0, fmt.Errorf("token id %q overflows int32", num)
	}
	return int32(v), nil
}

// Int reads an integer.
func (r *Reader) Int() (int64, error) {
	if r.Peek() == 0 {
		return 0, ErrUnexpectedEnd
	}
	num, err := r.Number()
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(string(num), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("integer %q: %w", num, err)
	}
	return v, nil
}

// Float32 reads a number as float32, rounded as strconv.ParseFloat(s, 32)
// rounds it. Plain decimals of at most 19 digits (what servers write for
// logprobs) take a fast path.
func (r *Reader) Float32() (float32, error) {
	if r.Peek() == 0 {
		return 0, ErrUnexpectedEnd
	}
	if v, n := fastFloat32(r.b[r.i:]); n > 0 {
		r.i += n
		return v, nil
	}
	num, err := r.Number()
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseFloat(string(num), 32)
	if err != nil {
		return 0, fmt.Errorf("number %q: %w", num, err)
	}
	return float32(v), nil
}

// exactPow10 holds the powers of ten that float64 represents exactly.
var exactPow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// fastFloat32 parses the JSON number at the start of b when it is a plain
// decimal ('-'? digits ('.' digits)?, no exponent) of at most 19 digits
// followed by a byte that ends a number, returning its value rounded to
// float32 and its length; n is 0 when the number needs strconv.
//
// The digits m are exact in a uint64 and m/10^k (k ≤ 19, 10^k exact in
// float64) is computed in float64 with two roundings, so f lies within
// 1.5 float64 ulps of the true value x. Rounding f to float32 then gives
// float32(x) unless a float32 rounding boundary (the midpoint between two
// float32 values, where the low 29 bits of f's mantissa are 1<<28) lies
// between them: f near a midpoint goes to strconv instead, as do results
// outside float32's normal range.
func fastFloat32(b []byte) (float32, int) {
	i := 0
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		i++
	}
	var m uint64
	digits, frac := 0, 0
	switch {
	case i < len(b) && b[i] == '0':
		i++
		digits++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			m = m*10 + uint64(b[i]-'0')
			digits++
		}
	default:
		return 0, 0
	}
	if i < len(b) && b[i] == '.' {
		i++
		d := i
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			m = m*10 + uint64(b[i]-'0')
		}
		frac = i - d
		digits += frac
		if frac == 0 {
			return 0, 0
		}
	}
	if digits > 19 || i >= len(b) {
		return 0, 0
	}
	switch b[i] {
	case ',', ']', '}', ' ', '\n', '\r', '\t':
	default:
		return 0, 0 // an exponent, or not a number
	}
	f := float64(m) / exactPow10[frac]
	if f == 0 {
		if neg {
			return float32(math.Copysign(0, -1)), i
		}
		return 0, i
	}
	bits := math.Float64bits(f)
	if e := int(bits>>52) & 0x7ff; e < 1023-126 || e > 1023+126 {
		return 0, 0 // outside float32's normal range
	}
	const low, half = 1<<29 - 1, 1 << 28
	if d := int64(bits&low) - half; d > -8 && d < 8 {
		return 0, 0 // within reach of a float32 rounding boundary
	}
	if neg {
		f = -f
	}
	return float32(f), i
}

// strPlain marks the bytes a string holds without further checks: not a
// quote, backslash or control character.
var strPlain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// RawString consumes a string and returns its bytes between the quotes,
// escapes left in place, after checking them.
func (r *Reader) RawString() ([]byte, error) {
	b := r.b
	start := r.i + 1
	i := start
	for {
		for i < len(b) && strPlain[b[i]] {
			i++
		}
		if i >= len(b) {
			r.i = i
			return nil, ErrUnexpectedEnd
		}
		switch c := b[i]; {
		case c == '"':
			r.i = i + 1
			return b[start:i], nil
		case c < 0x20:
			r.i = i
			return nil, r.Errorf("control character %#x in a string", c)
		default: // backslash
			if i+1 >= len(b) {
				r.i = i
				return nil, ErrUnexpectedEnd
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					r.i = i
					return nil, ErrUnexpectedEnd
				}
				for _, h := range b[i+2 : i+6] {
					if unhex(h) < 0 {
						r.i = i
						return nil, r.Errorf("invalid \\u escape")
					}
				}
				i += 6
			default:
				r.i = i
				return nil, r.Errorf("invalid escape \\%c", b[i+1])
			}
		}
	}
}

// Str reads a string value as encoding/json would decode it.
func (r *Reader) Str() (string, error) {
	if r.Peek() != '"' {
		return "", r.Errorf("want a string")
	}
	raw, err := r.RawString()
	if err != nil {
		return "", err
	}
	return Unquote(raw), nil
}

// StrOrNull reads a string or null (as "").
func (r *Reader) StrOrNull() (string, error) {
	if isNull, err := r.Null(); isNull || err != nil {
		return "", err
	}
	return r.Str()
}

func unhex(c byte) rune {
	switch {
	case c >= '0' && c <= '9':
		return rune(c - '0')
	case c >= 'a' && c <= 'f':
		return rune(c - 'a' + 10)
	case c >= 'A' && c <= 'F':
		return rune(c - 'A' + 10)
	}
	return -1
}

// Unquote decodes the checked contents of a JSON string. Like
// encoding/json, it turns invalid UTF-8 and lone surrogates into U+FFFD.
func Unquote(s []byte) string {
	simple := true
	for _, c := range s {
		if c == '\\' || c >= utf8.RuneSelf {
			simple = false
			break
		}
	}
	if simple || (!containsByte(s, '\\') && utf8.Valid(s)) {
		return string(s)
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\':
			switch s[i+1] {
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				rr := hex4(s[i+2:])
				i += 6
				if utf16.IsSurrogate(rr) {
					if i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' {
						if dec := utf16.DecodeRune(rr, hex4(s[i+2:])); dec != utf8.RuneError {
							out = utf8.AppendRune(out, dec)
							i += 6
							continue
						}
					}
					rr = utf8.RuneError
				}
				out = utf8.AppendRune(out, rr)
				continue
			default: // " \ /
				out = append(out, s[i+1])
			}
			i += 2
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		default:
			rr, size := utf8.DecodeRune(s[i:])
			if rr == utf8.RuneError && size == 1 {
				out = utf8.AppendRune(out, utf8.RuneError)
			} else {
				out = append(out, s[i:i+size]...)
			}
			i += size
		}
	}
	return string(out)
}

func hex4(s []byte) rune {
	return unhex(s[0])<<12 | unhex(s[1])<<8 | unhex(s[2])<<4 | unhex(s[3])
}

func containsByte(s []byte, c byte) bool {
	for _, x := range s {
		if x == c {
			return true
		}
	}
	return false
}

// KeyIs compares a raw object key with name (keys with escapes are
// unescaped first).
func KeyIs(raw []byte, name string) bool {
	if containsByte(raw, '\\') {
		return Unquote(raw) == name
	}
	return string(raw) == name
}
