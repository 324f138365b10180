package jsonfast

import (
	"strconv"
	"unicode/utf8"
)

// The writers append JSON to a byte slice for hot paths (request and
// response bodies dominated by long token-id arrays), where encoding/json's
// reflection costs far more than the bytes. Each writes exactly what
// encoding/json would for the same value.

// digitPairs holds "00" to "99".
const digitPairs = "00010203040506070809" +
	"10111213141516171819" +
	"20212223242526272829" +
	"30313233343536373839" +
	"40414243444546474849" +
	"50515253545556575859" +
	"60616263646566676869" +
	"70717273747576777879" +
	"80818283848586878889" +
	"90919293949596979899"

// AppendInt32 appends v in decimal; it is strconv.AppendInt specialised
// for the thousands of token ids of a prompt.
func AppendInt32(b []byte, v int32) []byte {
	if v < 0 {
		return strconv.AppendInt(b, int64(v), 10)
	}
	u := uint32(v)
	if u < 10 {
		return append(b, byte('0'+u))
	}
	var tmp [10]byte
	i := len(tmp)
	for u >= 100 {
		q := u / 100
		r := (u - q*100) * 2
		i -= 2
		tmp[i], tmp[i+1] = digitPairs[r], digitPairs[r+1]
		u = q
	}
	if u >= 10 {
		i -= 2
		tmp[i], tmp[i+1] = digitPairs[u*2], digitPairs[u*2+1]
	} else {
		i--
		tmp[i] = byte('0' + u)
	}
	return append(b, tmp[i:]...)
}

// AppendInt32s appends ids as a JSON array (null for nil).
func AppendInt32s(dst []byte, ids []int32) []byte {
	if ids == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	for i, id := range ids {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendInt32(dst, id)
	}
	return append(dst, ']')
}

// AppendFloat32 appends v at float32 precision (the precision logprobs are
// kept at, so clients decoding into float32 lose nothing).
func AppendFloat32(dst []byte, v float64) []byte {
	return strconv.AppendFloat(dst, v, 'g', -1, 32)
}

const hexDigits = "0123456789abcdef"

// AppendString appends s to dst as a JSON string literal and returns the
// extended slice. It escapes as encoding/json does with HTML escaping off:
// '"' and '\\' are backslash-escaped, \b, \f, \n, \r and \t use their short
// forms, other control characters below U+0020 become \u00XX, U+2028 and U+2029
// become \u2028 and \u2029, and each byte of invalid UTF-8 becomes \ufffd.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
