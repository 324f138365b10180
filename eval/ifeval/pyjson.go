package ifeval

import "strings"

// pyJSONValid reports whether Python's json.loads(s) succeeds. It is the
// JSON grammar (any value at top level, whitespace " \t\n\r" around
// tokens, no control characters in strings) plus the NaN, Infinity and
// -Infinity literals that Python accepts and Go's encoding/json does not.
func pyJSONValid(s string) bool {
	p := jsonParser{s: s}
	p.ws()
	if !p.value(0) {
		return false
	}
	p.ws()
	return p.i == len(s)
}

type jsonParser struct {
	s string
	i int
}

// maxJSONDepth bounds recursion; Python raises RecursionError (not a
// ValueError) near 1000 levels, which no benchmark response reaches.
const maxJSONDepth = 10000

func (p *jsonParser) ws() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *jsonParser) lit(word string) bool {
	if strings.HasPrefix(p.s[p.i:], word) {
		p.i += len(word)
		return true
	}
	return false
}

func (p *jsonParser) value(depth int) bool {
	if p.i >= len(p.s) || depth > maxJSONDepth {
		return false
	}
	switch c := p.s[p.i]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		return p.str()
	case c == 'n':
		return p.lit("null")
	case c == 't':
		return p.lit("true")
	case c == 'f':
		return p.lit("false")
	case c == 'N':
		return p.lit("NaN")
	case c == 'I':
		return p.lit("Infinity")
	case c == '-' && strings.HasPrefix(p.s[p.i:], "-Infinity"):
		return p.lit("-Infinity")
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	}
	return false
}

func (p *jsonParser) digits() int {
	start := p.i
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		p.i++
	}
	return p.i - start
}

// number matches -?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)? and, like
// Python's scanner, leaves an incomplete fraction or exponent unconsumed.
func (p *jsonParser) number() bool {
	if p.s[p.i] == '-' {
		p.i++
	}
	if p.i >= len(p.s) {
		return false
	}
	switch {
	case p.s[p.i] == '0':
		p.i++
	case p.s[p.i] >= '1' && p.s[p.i] <= '9':
		p.digits()
	default:
		return false
	}
	if p.i+1 < len(p.s) && p.s[p.i] == '.' && p.s[p.i+1] >= '0' && p.s[p.i+1] <= '9' {
		p.i++
		p.digits()
	}
	if p.i < len(p.s) && (p.s[p.i] == 'e' || p.s[p.i] == 'E') {
		save := p.i
		p.i++
		if p.i < len(p.s) && (p.s[p.i] == '+' || p.s[p.i] == '-') {
			p.i++
		}
		if p.digits() == 0 {
			p.i = save
		}
	}
	return true
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func (p *jsonParser) str() bool {
	p.i++ // opening quote
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if p.i+1 >= len(p.s) {
				return false
			}
			switch p.s[p.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p.i += 2
			case 'u':
				if p.i+6 > len(p.s) {
					return false
				}
				for k := p.i + 2; k < p.i+6; k++ {
					if !isHex(p.s[k]) {
						return false
					}
				}
				p.i += 6
			default:
				return false
			}
		default:
			p.i++
		}
	}
	return false
}

func (p *jsonParser) object(depth int) bool {
	p.i++ // '{'
	p.ws()
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		return true
	}
	for {
		if p.i >= len(p.s) || p.s[p.i] != '"' || !p.str() {
			return false
		}
		p.ws()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return false
		}
		p.i++
		p.ws()
		if !p.value(depth + 1) {
			return false
		}
		p.ws()
		if p.i >= len(p.s) {
			return false
		}
		switch p.s[p.i] {
		case '}':
			p.i++
			return true
		case ',':
			p.i++
			p.ws()
		default:
			return false
		}
	}
}

func (p *jsonParser) array(depth int) bool {
	p.i++ // '['
	p.ws()
	if p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		return true
	}
	for {
		if !p.value(depth + 1) {
			return false
		}
		p.ws()
		if p.i >= len(p.s) {
			return false
		}
		switch p.s[p.i] {
		case ']':
			p.i++
			return true
		case ',':
			p.i++
			p.ws()
		default:
			return false
		}
	}
}
