package llm

import "fmt"

// Hand-written JSON for the hot path: token-id arrays are long (thousands
// of numbers per request) and reflection costs far more than the bytes.
// Strings are encoded by internal/jsonenc.

// tokenDigest is a cheap checksum of a token-id sequence (FNV-1a over the
// ids), used to check a server's echoed prompt_token_ids without keeping
// them.
type tokenDigest struct {
	n int
	h uint64
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func (d *tokenDigest) add(t int64) {
	if d.n == 0 {
		d.h = fnvOffset
	}
	d.h = (d.h ^ uint64(t)) * fnvPrime
	d.n++
}

// digestOf returns the digest of ids.
func digestOf(ids []int32) tokenDigest {
	var d tokenDigest
	for _, t := range ids {
		d.add(int64(t))
	}
	return d
}

// parseTokenID parses one token id: a non-negative integer that fits int32.
func parseTokenID(num []byte) (int32, error) {
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

// appendTokenID appends a non-negative token id in decimal; it is
// strconv.AppendInt specialised for the 2048 ids of a typical prompt.
func appendTokenID(b []byte, v int32) []byte {
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
