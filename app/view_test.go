package app

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// viewRun is a folder parley view takes for a run: a metrics.jsonl alone.
func viewRun(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "metrics.jsonl"), []byte(`{"step":1,"score_mean":0.5,"score_min":0,"score_max":1}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// TestViewServes: parley view prints its URL, serves the index there, and
// stops with its context.
func TestViewServes(t *testing.T) {
	var out syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- View(ctx, Env{Out: &out}, ViewOptions{Dirs: []string{viewRun(t)}, Addr: "127.0.0.1:0"})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.HasSuffix(out.String(), "/\n") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	url := strings.TrimSpace(out.String())
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("parley view printed %q, want its URL on 127.0.0.1", url)
	}
	resp, err := http.Get(url + "api/index")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET %sapi/index: %d", url, resp.StatusCode)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("View after its context ended: %v", err)
	}
}

// TestViewBadInput: a port in use names --addr; bad --steps, --export and
// filters name their flag.
func TestViewBadInput(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	run := viewRun(t)
	tests := []struct {
		name string
		o    ViewOptions
		want []string
	}{
		{"port in use", ViewOptions{Addr: ln.Addr().String()}, []string{"flag --addr " + ln.Addr().String(), "address already in use"}},
		{"steps backwards", ViewOptions{Export: filepath.Join(t.TempDir(), "v.html"), Steps: "5-2"}, []string{"flag --steps", "A-B"}},
		{"steps not a number", ViewOptions{Export: filepath.Join(t.TempDir(), "v.html"), Steps: "x"}, []string{"flag --steps"}},
		{"steps without export", ViewOptions{Steps: "1-2"}, []string{"--steps", "--export"}},
		{"export not html", ViewOptions{Export: filepath.Join(t.TempDir(), "v.txt")}, []string{"flag --export", ".html"}},
		{"bad filter", ViewOptions{Filter: map[string][]string{"reward_min": {"high"}}}, []string{"reward_min"}},
	}
	for _, tt := range tests {
		tt.o.Dirs = []string{run}
		err := View(context.Background(), Env{}, tt.o)
		if err == nil {
			t.Errorf("%s: View = nil error", tt.name)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", tt.name, err, w)
			}
		}
	}
}

// TestViewExport: --export writes one HTML file with the snapshot and the
// assets inlined, and prints its path.
func TestViewExport(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out", "run.html")
	var out bytes.Buffer
	if err := View(context.Background(), Env{Out: &out}, ViewOptions{Dirs: []string{viewRun(t)}, Export: path, Steps: "1-"}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, w := range []string{"window.PARLEY_SNAPSHOT = {", `"/api/run/overview?run=0":`, "window.parley = {", ".tokens {"} {
		if !strings.Contains(page, w) {
			t.Errorf("the export lacks %q", w)
		}
	}
	for _, bad := range []string{`src="/assets/`, `href="/assets/`} {
		if strings.Contains(page, bad) {
			t.Errorf("the export still loads %q from a server", bad)
		}
	}
	if strings.TrimSpace(out.String()) != path {
		t.Errorf("printed %q, want the export's path", out.String())
	}
}

func TestParseSteps(t *testing.T) {
	tests := []struct {
		in       string
		from, to int
		ok       bool
	}{
		{"", 0, 0, true}, {"3", 3, 3, true}, {"2-5", 2, 5, true}, {"4-", 4, 0, true}, {"-4", 0, 4, true},
		{"-", 0, 0, false}, {"5-2", 0, 0, false}, {"0", 0, 0, false}, {"a-b", 0, 0, false},
	}
	for _, tt := range tests {
		from, to, err := parseSteps(tt.in)
		if (err == nil) != tt.ok || from != tt.from || to != tt.to {
			t.Errorf("parseSteps(%q) = %d, %d, %v; want %d, %d, ok %v", tt.in, from, to, err, tt.from, tt.to, tt.ok)
		}
	}
}

func TestIsLoopback(t *testing.T) {
	for host, want := range map[string]bool{"127.0.0.1": true, "::1": true, "0.0.0.0": false, "192.168.1.4": false, "": false} {
		if got := isLoopback(host); got != want {
			t.Errorf("isLoopback(%q) = %v, want %v", host, got, want)
		}
	}
}
