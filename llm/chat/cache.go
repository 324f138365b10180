package chat

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
)

// CacheFile is the name of the judge cache in a run directory.
const CacheFile = "judge-cache.jsonl"

// cacheEntry is one line of the cache file.
type cacheEntry struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
}

// cache is the persistent judge cache: an append-only JSONL file of
// verdicts keyed by cacheKey, loaded whole at start. Each entry is written
// with a single write call and no fsync; a torn last line (a crash during a
// write) is ignored on load. Safe for concurrent use.
type cache struct {
	mu      sync.RWMutex
	entries map[string]json.RawMessage
	f       *os.File
	skipped int // unreadable lines found on load
}

// cacheKey is sha256(model + "\x00" + prompt) in hex, where prompt is the
// full rendered prompt including the rubric version.
func cacheKey(model, prompt string) string {
	h := sha256.New()
	io.WriteString(h, model)
	h.Write([]byte{0})
	io.WriteString(h, prompt)
	return hex.EncodeToString(h.Sum(nil))
}

// openCache loads dir/judge-cache.jsonl (creating dir and the file) and
// opens it for appending.
func openCache(dir string) (*cache, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("reward.openCache: %w", err)
	}
	path := filepath.Join(dir, CacheFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("reward.openCache: %w", err)
	}
	c := &cache{entries: make(map[string]json.RawMessage), f: f}
	endsWithNewline, err := c.load(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("reward.openCache %s: %w", path, err)
	}
	if !endsWithNewline {
		// Terminate a torn last line so the next entry starts cleanly.
		if _, err := f.Write([]byte{'\n'}); err != nil {
			f.Close()
			return nil, fmt.Errorf("reward.openCache %s: %w", path, err)
		}
	}
	return c, nil
}

// load reads every entry of r, skipping lines that do not decode. It
// reports whether the data is empty or ends with a newline.
func (c *cache) load(r io.Reader) (endsWithNewline bool, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	endsWithNewline = true
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			endsWithNewline = line[len(line)-1] == '\n'
			line = bytes.TrimSpace(line)
			var e cacheEntry
			if len(line) > 0 {
				if json.Unmarshal(line, &e) != nil || e.Key == "" || len(e.Value) == 0 {
					c.skipped++
				} else {
					c.entries[e.Key] = e.Value
				}
			}
		}
		if errors.Is(err, io.EOF) {
			return endsWithNewline, nil
		}
		if err != nil {
			return false, err
		}
	}
}

// get returns the cached value for key.
func (c *cache) get(key string) (json.RawMessage, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	v, ok := c.entries[key]
	return v, ok
}

// put stores value under key and appends it to the file.
func (c *cache) put(key string, value json.RawMessage) error {
	line, err := json.Marshal(cacheEntry{Key: key, Value: value})
	if err != nil {
		return fmt.Errorf("reward.cache.put: %w", err)
	}
	line = append(line, '\n')
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries[key] = value
	if _, err := c.f.Write(line); err != nil {
		return fmt.Errorf("reward.cache.put: %w", err)
	}
	return nil
}

// len returns the number of entries.
func (c *cache) len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.entries)
}

// close closes the file.
func (c *cache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.f.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		return fmt.Errorf("reward.cache.close: %w", err)
	}
	return nil
}
