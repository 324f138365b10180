package chat

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/retry"
)

func TestBackoffGrowsAndIsBounded(t *testing.T) {
	c := &Client{opts: Options{Retry: retry.Policy{BackoffBase: 100 * time.Millisecond, BackoffMax: time.Second}.WithDefaults(retry.Default)}}
	for attempt := 1; attempt <= 40; attempt++ {
		d := c.backoff(attempt, errors.New("x"))
		full := min(c.opts.Retry.BackoffBase<<min(attempt-1, 30), c.opts.Retry.BackoffMax)
		if d < 0 || d > full {
			t.Errorf("backoff(%d) = %v, want in [0, %v]", attempt, d, full)
		}
	}
	ra := &retryAfterError{err: errors.New("429"), wait: time.Hour}
	if d := c.backoff(1, ra); d != retry.Default.AfterMax {
		t.Errorf("backoff(Retry-After 1h) = %v, want the cap %v", d, retry.Default.AfterMax)
	}
}

func TestCacheToleratesTornLine(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, CacheFile)
	good := `{"key":"k1","value":{"score":4,"rationale":"a","model":"m","prompt_tokens":1,"completion_tokens":1}}` + "\n"
	torn := `{"key":"k2","value":{"score":`
	if err := os.WriteFile(path, []byte(good+torn), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := openCache(dir)
	if err != nil {
		t.Fatalf("openCache: %v", err)
	}
	if _, ok := c.get("k1"); !ok || c.len() != 1 || c.skipped != 1 {
		t.Errorf("loaded %d entries (skipped %d), want k1 only and 1 skipped", c.len(), c.skipped)
	}
	if err := c.put("k3", []byte(`{"score":2}`)); err != nil {
		t.Fatal(err)
	}
	c.close()
	c2, err := openCache(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.close()
	if _, ok := c2.get("k3"); !ok || c2.len() != 2 {
		t.Errorf("after reopen: %d entries, k3 present %v; want k1 and k3", c2.len(), ok)
	}
}

func TestCacheConcurrentPuts(t *testing.T) {
	dir := t.TempDir()
	c, err := openCache(dir)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.put(fmt.Sprintf("k%d", i), []byte(fmt.Sprintf(`{"n":%d,"pad":%q}`, i, strings.Repeat("x", 5000))))
		}()
	}
	wg.Wait()
	c.close()
	c2, err := openCache(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.close()
	if c2.len() != 50 || c2.skipped != 0 {
		t.Errorf("reloaded %d entries, %d skipped; want 50, 0", c2.len(), c2.skipped)
	}
}

func TestRedact(t *testing.T) {
	c := &Client{opts: Options{APIKey: "k3y-123"}}
	long := errors.New("Bearer k3y-123 " + strings.Repeat("é", 2000))
	got := c.redact(long)
	if strings.Contains(got.Error(), "k3y-123") || !strings.Contains(got.Error(), "[REDACTED]") {
		t.Errorf("redact(%.30q) = %.40q, want the key replaced", long.Error(), got.Error())
	}
	if len(got.Error()) > maxErrorLen+len("…") || !errors.Is(got, long) {
		t.Errorf("redact: %d bytes, unwraps to original %v; want at most %d and true", len(got.Error()), errors.Is(got, long), maxErrorLen)
	}
	short := errors.New("plain")
	if c.redact(short) != short {
		t.Errorf("redact(plain) changed the error")
	}
}

func TestSetTemperature(t *testing.T) {
	got, err := setTemperature([]byte(`{"model":"m","messages":[{"role":"user","content":"<hi>"}]}`), 0)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(got, []byte(`"temperature":0`)) || !bytes.Contains(got, []byte(`"model":"m"`)) {
		t.Errorf("setTemperature = %s, want temperature 0 and the original fields", got)
	}
	if _, err := setTemperature([]byte(`[1]`), 0); err == nil {
		t.Errorf("setTemperature(array) = nil error, want error")
	}
}
