package sim

import (
	"slices"
	"testing"
)

func seq(from, n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(from + i)
	}
	return out
}

func TestPrefixCache(t *testing.T) {
	base := seq(1, 40) // 2 whole blocks and 8 tokens
	longer := append(slices.Clone(base), seq(100, 30)...)
	for _, tc := range []struct {
		name     string
		capacity int
		seen     []int32 // inserted before (model m)
		model    string
		prompt   []int32
		wantHit  int
	}{
		{"cold", 16, nil, "m", base, 0},
		{"same prompt: all whole blocks but the last token's", 16, base, "m", base, 32},
		{"extension of a prompt and its reply", 16, longer, "m", append(slices.Clone(longer), 7), 64},
		{"other adapter misses", 16, base, "adapter", base, 0},
		{"first block differs: the chain misses", 16, base, "m", append([]int32{9}, base[1:]...), 0},
		{"exactly one block: last token not hit", 16, base[:16], "m", base[:16], 0},
		{"capacity evicts the least recent", 1, base, "m", base, 0},
	} {
		c := newPrefixCache(tc.capacity)
		if tc.seen != nil {
			c.insert("m", tc.seen)
		}
		if got := c.lookup(tc.model, tc.prompt); got != tc.wantHit {
			t.Errorf("%s: lookup = %d, want %d", tc.name, got, tc.wantHit)
		}
		q, h := c.counts()
		if q != int64(len(tc.prompt)) || h != int64(tc.wantHit) {
			t.Errorf("%s: counts = %d, %d, want %d, %d", tc.name, q, h, len(tc.prompt), tc.wantHit)
		}
	}
}

// TestPrefixCacheReset: after a reset (POST /reset_prefix_cache, as after a
// weight update) nothing cached before hits; the counters go on.
func TestPrefixCacheReset(t *testing.T) {
	base := seq(1, 40)
	c := newPrefixCache(16)
	c.insert("m", base)
	c.reset()
	if got := c.lookup("m", base); got != 0 {
		t.Errorf("lookup after reset = %d, want 0", got)
	}
	c.insert("m", base)
	if got := c.lookup("m", base); got != 32 {
		t.Errorf("lookup after reinsert = %d, want 32", got)
	}
	if q, h := c.counts(); q != 80 || h != 32 {
		t.Errorf("counts = %d, %d, want 80, 32", q, h)
	}
}
