package llm

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// jreader is a strict, allocation-light JSON reader for the two hot
// responses (completions and tokenizations). encoding/json scans every byte
// twice through a per-byte state machine (validate, then decode) and spends
// most of a completion's client CPU skipping fields parley never reads
// (top_logprobs, tokens, text_offset); this reader validates and skips in
// one tight pass. It accepts exactly RFC 8259 JSON; the tests check it
// against encoding/json.
type jreader struct {
	b     []byte
	i     int
	depth int
}

const maxJSONDepth = 10000

var errUnexpectedEnd = errors.New("unexpected end of JSON input")

func (r *jreader) errorf(format string, args ...any) error {
	return fmt.Errorf("invalid JSON at offset %d: %s", r.i, fmt.Sprintf(format, args...))
}

func (r *jreader) ws() {
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

// peek skips whitespace and returns the next byte (0 at the end).
func (r *jreader) peek() byte {
	r.ws()
	if r.i >= len(r.b) {
		return 0
	}
	return r.b[r.i]
}

// end checks that only whitespace remains.
func (r *jreader) end() error {
	r.ws()
	if r.i != len(r.b) {
		return r.errorf("unexpected %q after the top-level value", r.b[r.i])
	}
	return nil
}

// null consumes a null literal if one comes next.
func (r *jreader) null() (bool, error) {
	if r.peek() != 'n' {
		return false, nil
	}
	return true, r.literal("null")
}

func (r *jreader) literal(lit string) error {
	if len(r.b)-r.i < len(lit) || string(r.b[r.i:r.i+len(lit)]) != lit {
		return r.errorf("invalid literal, want %s", lit)
	}
	r.i += len(lit)
	return nil
}

// object reads an object, calling field for each key with the reader
// positioned at the value; field must consume the value.
func (r *jreader) object(field func(key []byte) error) error {
	if r.peek() != '{' {
		return r.errorf("want an object")
	}
	r.i++
	if r.depth++; r.depth > maxJSONDepth {
		return r.errorf("nested too deeply")
	}
	defer func() { r.depth-- }()
	if r.peek() == '}' {
		r.i++
		return nil
	}
	for {
		if r.peek() != '"' {
			return r.errorf("want an object key")
		}
		key, err := r.rawString()
		if err != nil {
			return err
		}
		if r.peek() != ':' {
			return r.errorf("want ':' after an object key")
		}
		r.i++
		if err := field(key); err != nil {
			return err
		}
		switch r.peek() {
		case ',':
			r.i++
		case '}':
			r.i++
			return nil
		default:
			return r.errorf("want ',' or '}' in an object")
		}
	}
}

// array reads an array, calling elem for each element with the reader
// positioned at it; elem must consume it.
func (r *jreader) array(elem func(i int) error) error {
	if r.peek() != '[' {
		return r.errorf("want an array")
	}
	r.i++
	if r.depth++; r.depth > maxJSONDepth {
		return r.errorf("nested too deeply")
	}
	defer func() { r.depth-- }()
	if r.peek() == ']' {
		r.i++
		return nil
	}
	for k := 0; ; k++ {
		if err := elem(k); err != nil {
			return err
		}
		switch r.peek() {
		case ',':
			r.i++
		case ']':
			r.i++
			return nil
		default:
			return r.errorf("want ',' or ']' in an array")
		}
	}
}

// skip consumes any value, iteratively (no recursion, no closures).
func (r *jreader) skip() error {
	var stackBuf [32]byte
	stack := stackBuf[:0] // open containers: '{' or '['
	for {
		// Expect a value.
		switch c := r.peek(); c {
		case '{', '[':
			r.i++
			if r.depth+len(stack) >= maxJSONDepth {
				return r.errorf("nested too deeply")
			}
			closer := byte('}')
			if c == '[' {
				closer = ']'
			}
			if r.peek() == closer {
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
			if _, err := r.rawString(); err != nil {
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
			return errUnexpectedEnd
		default:
			if _, err := r.number(); err != nil {
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
			c := r.peek()
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
				return errUnexpectedEnd
			}
			return r.errorf("want ',' or a closing bracket")
		}
	}
}

// key reads an object key and its colon.
func (r *jreader) key() error {
	if r.peek() != '"' {
		return r.errorf("want an object key")
	}
	if _, err := r.rawString(); err != nil {
		return err
	}
	if r.peek() != ':' {
		return r.errorf("want ':' after an object key")
	}
	r.i++
	return nil
}

// number consumes a number and returns its text.
func (r *jreader) number() ([]byte, error) {
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
		return nil, r.errorf("want a value")
	}
	if i < len(b) && b[i] == '.' {
		i++
		d := i
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		}
		if i == d {
			r.i = i
			return nil, r.errorf("want a digit after '.'")
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
			return nil, r.errorf("want a digit in the exponent")
		}
	}
	r.i = i
	return b[start:i], nil
}

// tokenIDs reads an array of token ids (the reader at '['), appending
// them to dst; with sum set it feeds them to sum instead.
func (r *jreader) tokenIDs(dst []int32, sum *tokenDigest) ([]int32, error) {
	if r.peek() != '[' {
		return dst, r.errorf("want an array")
	}
	r.i++
	if r.peek() == ']' {
		r.i++
		return dst, nil
	}
	for {
		r.ws()
		v, err := r.uint31()
		if err != nil {
			return dst, err
		}
		if sum != nil {
			sum.add(int64(v))
		} else {
			dst = append(dst, v)
		}
		switch r.peek() {
		case ',':
			r.i++
		case ']':
			r.i++
			return dst, nil
		case 0:
			return dst, errUnexpectedEnd
		default:
			return dst, r.errorf("want ',' or ']' in an array")
		}
	}
}

// uint31 reads a token id: a non-negative JSON integer that fits int32.
func (r *jreader) uint31() (int32, error) {
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
		num, err := r.number()
		if err != nil {
			return 0, err
		}
		return parseTokenID(num)
	case n > 1 && b[r.i] == '0':
		return 0, r.errorf("number with a leading zero")
	case v > 1<<31-1:
		return 0, fmt.Errorf("token id %s overflows int32", b[r.i:i])
	}
	r.i = i
	return int32(v), nil
}

// tokenID reads a non-negative integer that fits int32.
func (r *jreader) tokenID() (int32, error) {
	if r.peek() == 0 {
		return 0, errUnexpectedEnd
	}
	num, err := r.number()
	if err != nil {
		return 0, err
	}
	return parseTokenID(num)
}

// int reads an integer.
func (r *jreader) int() (int64, error) {
	if r.peek() == 0 {
		return 0, errUnexpectedEnd
	}
	num, err := r.number()
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(string(num), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("integer %q: %w", num, err)
	}
	return v, nil
}

// float32 reads a number as float32.
func (r *jreader) float32() (float32, error) {
	if r.peek() == 0 {
		return 0, errUnexpectedEnd
	}
	num, err := r.number()
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseFloat(string(num), 32)
	if err != nil {
		return 0, fmt.Errorf("number %q: %w", num, err)
	}
	return float32(v), nil
}

// strPlain marks the bytes a string holds without further checks: not a
// quote, backslash or control character.
var strPlain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// rawString consumes a string and returns its bytes between the quotes,
// escapes left in place, after checking them.
func (r *jreader) rawString() ([]byte, error) {
	b := r.b
	start := r.i + 1
	i := start
	for {
		for i < len(b) && strPlain[b[i]] {
			i++
		}
		if i >= len(b) {
			r.i = i
			return nil, errUnexpectedEnd
		}
		switch c := b[i]; {
		case c == '"':
			r.i = i + 1
			return b[start:i], nil
		case c < 0x20:
			r.i = i
			return nil, r.errorf("control character %#x in a string", c)
		default: // backslash
			if i+1 >= len(b) {
				r.i = i
				return nil, errUnexpectedEnd
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					r.i = i
					return nil, errUnexpectedEnd
				}
				for _, h := range b[i+2 : i+6] {
					if unhex(h) < 0 {
						r.i = i
						return nil, r.errorf("invalid \\u escape")
					}
				}
				i += 6
			default:
				r.i = i
				return nil, r.errorf("invalid escape \\%c", b[i+1])
			}
		}
	}
}

// str reads a string value as encoding/json would decode it.
func (r *jreader) str() (string, error) {
	if r.peek() != '"' {
		return "", r.errorf("want a string")
	}
	raw, err := r.rawString()
	if err != nil {
		return "", err
	}
	return unquoteJSON(raw), nil
}

// strOrNull reads a string or null (as "").
func (r *jreader) strOrNull() (string, error) {
	if isNull, err := r.null(); isNull || err != nil {
		return "", err
	}
	return r.str()
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

// unquoteJSON decodes the checked contents of a JSON string. Like
// encoding/json, it turns invalid UTF-8 and lone surrogates into U+FFFD.
func unquoteJSON(s []byte) string {
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

// keyIs compares a raw object key with name (keys with escapes are
// unescaped first).
func keyIs(raw []byte, name string) bool {
	if containsByte(raw, '\\') {
		return unquoteJSON(raw) == name
	}
	return string(raw) == name
}
