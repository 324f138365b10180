package sim

import (
	"container/list"
	"hash/maphash"
	"sync"
)

// PrefixBlockSize is the block size of the prefix-cache model, vLLM's
// default --block-size: a prompt is cached and looked up in whole blocks
// of 16 tokens.
const PrefixBlockSize = 16

// DefaultPrefixCacheBlocks is the prefix cache's capacity in blocks when
// Options.PrefixCacheBlocks is zero: 65,536 blocks, about a million
// tokens of KV cache.
const DefaultPrefixCacheBlocks = 1 << 16

// prefixCache models vLLM's automatic prefix caching: the KV blocks of
// every prompt and its sampled tokens are kept by a hash chained over the
// blocks before them and the model (base or adapter) that computed them,
// so a prompt hits for its longest run of leading blocks that some earlier
// request computed with the same model; blocks are evicted least recently
// used past the capacity. Like vLLM it never hits the last token of a
// prompt (a prompt's last block is computed again when it is full), and it
// counts prefix_cache_queries and prefix_cache_hits in tokens.
type prefixCache struct {
	mu       sync.Mutex
	capacity int
	seed     maphash.Seed
	blocks   map[uint64]*list.Element // of uint64 hashes, front most recent
	lru      *list.List
	queries  int64
	hits     int64
}

func newPrefixCache(capacity int) *prefixCache {
	return &prefixCache{capacity: capacity, seed: maphash.MakeSeed(), blocks: map[uint64]*list.Element{}, lru: list.New()}
}

// chain returns the chained hashes of the whole blocks of ids under model.
func (c *prefixCache) chain(model string, ids []int32) []uint64 {
	n := len(ids) / PrefixBlockSize
	out := make([]uint64, n)
	var h maphash.Hash
	h.SetSeed(c.seed)
	h.WriteString(model)
	prev := h.Sum64()
	var buf [4 * PrefixBlockSize]byte
	for b := 0; b < n; b++ {
		for i, t := range ids[b*PrefixBlockSize : (b+1)*PrefixBlockSize] {
			buf[4*i], buf[4*i+1], buf[4*i+2], buf[4*i+3] = byte(t), byte(t>>8), byte(t>>16), byte(t>>24)
		}
		h.Reset()
		var p [8]byte
		for i := range p {
			p[i] = byte(prev >> (8 * i))
		}
		h.Write(p[:])
		h.Write(buf[:])
		prev = h.Sum64()
		out[b] = prev
	}
	return out
}

// lookup counts a prompt's query and returns the tokens it hits.
func (c *prefixCache) lookup(model string, prompt []int32) int {
	if c == nil {
		return 0
	}
	// The last token is always computed: at most (len-1)/16 blocks hit.
	hs := c.chain(model, prompt[:len(prompt)-1])
	c.mu.Lock()
	defer c.mu.Unlock()
	hit := 0
	for _, h := range hs {
		e, ok := c.blocks[h]
		if !ok {
			break
		}
		c.lru.MoveToFront(e)
		hit++
	}
	c.queries += int64(len(prompt))
	c.hits += int64(hit * PrefixBlockSize)
	return hit * PrefixBlockSize
}

// insert caches the whole blocks of ids (a prompt and its sampled tokens).
func (c *prefixCache) insert(model string, ids []int32) {
	if c == nil {
		return
	}
	hs := c.chain(model, ids)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, h := range hs {
		if e, ok := c.blocks[h]; ok {
			c.lru.MoveToFront(e)
			continue
		}
		c.blocks[h] = c.lru.PushFront(h)
		for c.lru.Len() > c.capacity {
			old := c.lru.Back()
			c.lru.Remove(old)
			delete(c.blocks, old.Value.(uint64))
		}
	}
}

// counts returns the queries and hits so far, in tokens.
func (c *prefixCache) counts() (queries, hits int64) {
	if c == nil {
		return 0, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.queries, c.hits
}

// reset drops every cached block (POST /reset_prefix_cache, as vLLM's);
// the counters go on.
func (c *prefixCache) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.blocks)
	c.lru.Init()
}
