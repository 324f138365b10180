package llm

// The hot path's JSON is internal/jsonfast: token-id arrays are long
// (thousands of numbers per request) and reflection costs far more than
// the bytes.

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
