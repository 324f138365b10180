package handshake

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/dataset"
)

const testToken = "test-token-0123456789abcdef"

// newTestServer starts a handshake server on a run directory nested one
// level inside a temp dir, so that tests can plant a secret beside it.
func newTestServer(t *testing.T, mod func(*Options)) (*Server, dataset.RunDir, string) {
	t.Helper()
	outer := t.TempDir()
	run := dataset.RunDir(filepath.Join(outer, "run"))
	opts := Options{Dir: string(run), Token: testToken, PollInterval: 5 * time.Millisecond}
	if mod != nil {
		mod(&opts)
	}
	s, err := NewServer(opts)
	if err != nil {
		t.Fatalf("NewServer() = %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close() = %v", err)
		}
	})
	return s, run, outer
}

// writeBatch writes a fake batch file (the server never parses it) and its
// ready marker.
func writeBatch(t *testing.T, run dataset.RunDir, step int, content string) dataset.Ready {
	t.Helper()
	if err := os.WriteFile(run.BatchPath(step), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	ready := dataset.Ready{SchemaVersion: dataset.SchemaVersion, Step: step, PolicyVersion: step - 1, Rows: 2, Tokens: 10, SHA256: fmt.Sprintf("sha-%d", step)}
	b, _ := json.Marshal(ready)
	if err := os.WriteFile(run.ReadyPath(step), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return ready
}

func request(t *testing.T, s *Server, method, path, token string, body io.Reader) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, s.URL()+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// rawGet sends the request line exactly as given, bypassing any client-side
// path cleaning.
func rawGet(t *testing.T, s *Server, rawPath string) (int, string) {
	t.Helper()
	c, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nConnection: close\r\n\r\n", rawPath, testToken)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("GET %s: %v", rawPath, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

type tarEntry struct {
	name     string
	typ      byte
	body     string
	linkname string
}

func makeTar(t *testing.T, entries []tarEntry, gz bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	var w io.Writer = &buf
	var zw *gzip.Writer
	if gz {
		zw = gzip.NewWriter(&buf)
		w = zw
	}
	tw := tar.NewWriter(w)
	for _, e := range entries {
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		hdr := &tar.Header{Name: e.name, Typeflag: typ, Mode: 0o644, Linkname: e.linkname, Format: tar.FormatPAX}
		if typ == tar.TypeReg {
			hdr.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if typ == tar.TypeReg {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if zw != nil {
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func doneJSON(step int) string {
	return fmt.Sprintf(`{"step": %d, "metrics": {"loss": 0.5, "kl": 0.0}}`, step)
}

// listTree returns every path under root, relative, slash-separated.
func listTree(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel != "." {
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

func TestHandshakeAuth(t *testing.T) {
	s, _, _ := newTestServer(t, nil)
	tests := []struct {
		name   string
		header string
		want   int
	}{
		{"none", "", http.StatusUnauthorized},
		{"wrong token", "Bearer nope", http.StatusUnauthorized},
		{"token prefix", "Bearer " + testToken[:len(testToken)-1], http.StatusUnauthorized},
		{"token suffix", "Bearer " + testToken + "x", http.StatusUnauthorized},
		{"basic scheme", "Basic " + testToken, http.StatusUnauthorized},
		{"no scheme", testToken, http.StatusUnauthorized},
		{"right token", "Bearer " + testToken, http.StatusNoContent},
		{"lower-case scheme", "bearer " + testToken, http.StatusNoContent},
	}
	for _, tt := range tests {
		for _, path := range []string{"/v1/batches/next?wait=0", "/v1/batches/1", "/nowhere"} {
			req, _ := http.NewRequest(http.MethodGet, s.URL()+path, nil)
			if tt.header != "" {
				req.Header.Set("Authorization", tt.header)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			want := tt.want
			if want != http.StatusUnauthorized && path != "/v1/batches/next?wait=0" {
				want = http.StatusNotFound
			}
			if resp.StatusCode != want {
				t.Errorf("%s: GET %s = %d, want %d", tt.name, path, resp.StatusCode, want)
			}
			if want == http.StatusUnauthorized && resp.Header.Get("WWW-Authenticate") == "" {
				t.Errorf("%s: GET %s: 401 without WWW-Authenticate", tt.name, path)
			}
		}
	}
	resp, _ := request(t, s, http.MethodPost, "/v1/batches/1/done", "", strings.NewReader("x"))
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("POST done without token = %d, want 401", resp.StatusCode)
	}
	resp, body := request(t, s, http.MethodGet, "/v1/health", testToken, nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "ok") {
		t.Errorf("GET /v1/health = %d %s, want 200 ok", resp.StatusCode, body)
	}
}

func TestHandshakeListenAddress(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		addr        string
		allowRemote bool
		wantErr     bool
	}{
		{"", false, false},
		{"127.0.0.1:0", false, false},
		{"localhost:0", false, false},
		{"0.0.0.0:0", false, true},
		{":0", false, true},
		{"[::]:0", false, true},
		{"192.0.2.1:0", false, true},
		{"example.com:0", false, true},
		{"127.0.0.1", false, true}, // no port
		{"0.0.0.0:0", true, false},
	}
	for _, tt := range tests {
		s, err := NewServer(Options{Dir: dir, Token: testToken, Addr: tt.addr, AllowRemote: tt.allowRemote})
		if (err != nil) != tt.wantErr {
			t.Errorf("NewServer(addr %q, remote %v) error = %v, want error %v", tt.addr, tt.allowRemote, err, tt.wantErr)
		}
		if err != nil {
			continue
		}
		host, _, _ := net.SplitHostPort(s.Addr())
		if ip := net.ParseIP(host); !tt.allowRemote && (ip == nil || !ip.IsLoopback()) {
			t.Errorf("NewServer(addr %q) listens on %s, want loopback", tt.addr, s.Addr())
		}
		s.Close()
	}
	if _, err := NewServer(Options{Dir: dir}); err == nil {
		t.Error("NewServer(no token) = nil error")
	}
	if _, err := NewServer(Options{Token: testToken}); err == nil {
		t.Error("NewServer(no dir) = nil error")
	}
}

func TestHandshakeNext(t *testing.T) {
	s, run, _ := newTestServer(t, nil)
	writeBatch(t, run, 1, "one")
	r3 := writeBatch(t, run, 3, "three")
	writeBatch(t, run, 5, "five")
	// Not ready: a batch without marker, a marker without batch, a marker
	// that does not parse, a marker for another step, a stray name.
	os.WriteFile(run.BatchPath(2), []byte("two"), 0o644)
	os.WriteFile(run.ReadyPath(4), []byte(`{"step":4}`), 0o644)
	os.WriteFile(run.BatchPath(6), []byte("six"), 0o644)
	os.WriteFile(run.ReadyPath(6), []byte(`{"step":`), 0o644)
	os.WriteFile(run.BatchPath(7), []byte("seven"), 0o644)
	os.WriteFile(run.ReadyPath(7), []byte(`{"step":8}`), 0o644)
	os.WriteFile(filepath.Join(run.BatchesDir(), "step-8.ready"), []byte(`{"step":8}`), 0o644)
	// Ready but already trained: skipped.
	writeBatch(t, run, 9, "nine")
	os.MkdirAll(run.CheckpointDir(9), 0o755)
	if err := WriteDone(run.CheckpointDir(9), Done{Step: 9}); err != nil {
		t.Fatal(err)
	}
	writeBatch(t, run, 10, "ten")

	tests := []struct {
		query    string
		wantCode int
		wantStep int
	}{
		{"", http.StatusOK, 1},
		{"?after=-1&wait=0", http.StatusOK, 1},
		{"?after=0&wait=0", http.StatusOK, 1},
		{"?after=1&wait=0", http.StatusOK, 3},
		{"?after=2&wait=0", http.StatusOK, 3},
		{"?after=3&wait=0", http.StatusOK, 5},
		{"?after=5&wait=0", http.StatusOK, 10},
		{"?after=10&wait=0", http.StatusNoContent, 0},
		{"?after=10&wait=0.01", http.StatusNoContent, 0},
		{"?after=x", http.StatusBadRequest, 0},
		{"?after=-2", http.StatusBadRequest, 0},
		{"?wait=-1", http.StatusBadRequest, 0},
		{"?wait=NaN", http.StatusBadRequest, 0},
	}
	for _, tt := range tests {
		resp, body := request(t, s, http.MethodGet, "/v1/batches/next"+tt.query, testToken, nil)
		if resp.StatusCode != tt.wantCode {
			t.Errorf("GET next%s = %d %s, want %d", tt.query, resp.StatusCode, body, tt.wantCode)
			continue
		}
		if tt.wantCode != http.StatusOK {
			continue
		}
		var nb NextBatch
		if err := json.Unmarshal(body, &nb); err != nil {
			t.Fatalf("GET next%s: %v: %s", tt.query, err, body)
		}
		if nb.Step != tt.wantStep || nb.Ready.Step != tt.wantStep {
			t.Errorf("GET next%s = step %d (ready %d), want %d", tt.query, nb.Step, nb.Ready.Step, tt.wantStep)
		}
		if tt.wantStep == 3 && nb.Ready != r3 {
			t.Errorf("GET next%s ready = %+v, want %+v", tt.query, nb.Ready, r3)
		}
	}
}

func TestHandshakeLongPoll(t *testing.T) {
	var once sync.Once
	appeared := make(chan struct{})
	s, run, _ := newTestServer(t, func(o *Options) {
		dir := dataset.RunDir(o.Dir)
		o.pollHook = func() {
			// The first empty scan of the long poll: now the batch appears
			// (marker last, as the batch writer does).
			once.Do(func() {
				os.WriteFile(dir.BatchPath(2), []byte("two"), 0o644)
				os.WriteFile(dir.ReadyPath(2), []byte(`{"schema_version":1,"step":2}`), 0o644)
				close(appeared)
			})
		}
	})
	writeBatch(t, run, 1, "one")
	resp, body := request(t, s, http.MethodGet, "/v1/batches/next?after=1&wait=20", testToken, nil)
	select {
	case <-appeared:
	default:
		t.Fatal("the long poll answered before it ever waited")
	}
	var nb NextBatch
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &nb) != nil || nb.Step != 2 {
		t.Errorf("long poll = %d %s, want 200 step 2", resp.StatusCode, body)
	}
}

func TestHandshakeCloseEndsLongPoll(t *testing.T) {
	dir := t.TempDir()
	started := make(chan struct{})
	var once sync.Once
	s, err := NewServer(Options{Dir: dir, Token: testToken, PollInterval: 5 * time.Millisecond,
		pollHook: func() { once.Do(func() { close(started) }) }})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodGet, s.URL()+"/v1/batches/next?wait=600", nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			got <- -1
			return
		}
		resp.Body.Close()
		got <- resp.StatusCode
	}()
	<-started
	if err := s.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	if code := <-got; code != http.StatusNoContent {
		t.Errorf("long poll during Close = %d, want 204", code)
	}
}

func TestHandshakeGetBatch(t *testing.T) {
	s, run, _ := newTestServer(t, nil)
	content := strings.Repeat("PAR1 fake parquet bytes ", 100)
	ready := writeBatch(t, run, 42, content)
	os.WriteFile(run.BatchPath(43), []byte("unready"), 0o644)

	resp, body := request(t, s, http.MethodGet, "/v1/batches/42", testToken, nil)
	if resp.StatusCode != http.StatusOK || string(body) != content {
		t.Fatalf("GET /v1/batches/42 = %d, %d bytes, want 200 and the file", resp.StatusCode, len(body))
	}
	for k, want := range map[string]string{
		"Content-Type": "application/vnd.apache.parquet", "X-Parley-Step": "42", "X-Parley-Batch-Sha256": ready.SHA256,
	} {
		if got := resp.Header.Get(k); got != want {
			t.Errorf("GET /v1/batches/42 header %s = %q, want %q", k, got, want)
		}
	}
	// Leading zeros name the same step.
	if resp, _ := request(t, s, http.MethodGet, "/v1/batches/000042", testToken, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("GET /v1/batches/000042 = %d, want 200", resp.StatusCode)
	}
	// Range requests resume a download.
	req, _ := http.NewRequest(http.MethodGet, s.URL()+"/v1/batches/42", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Range", "bytes=5-9")
	rr, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	part, _ := io.ReadAll(rr.Body)
	rr.Body.Close()
	if rr.StatusCode != http.StatusPartialContent || string(part) != content[5:10] {
		t.Errorf("GET range 5-9 = %d %q, want 206 %q", rr.StatusCode, part, content[5:10])
	}
	for _, step := range []string{"43", "44", "0"} {
		if resp, _ := request(t, s, http.MethodGet, "/v1/batches/"+step, testToken, nil); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET /v1/batches/%s = %d, want 404", step, resp.StatusCode)
		}
	}
}

func TestHandshakePathTraversal(t *testing.T) {
	s, run, outer := newTestServer(t, nil)
	const secret = "TOP-SECRET-CONTENT"
	for _, p := range []string{filepath.Join(outer, "secret.txt"), filepath.Join(string(run), "secret.txt"), filepath.Join(run.BatchesDir(), "secret.txt")} {
		if err := os.WriteFile(p, []byte(secret), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeBatch(t, run, 1, "one")
	paths := []string{
		"/v1/batches/..%2f..%2fsecret.txt",
		"/v1/batches/..%2f..%2f..%2fsecret.txt",
		"/v1/batches/..%2fsecret.txt",
		"/v1/batches/%2e%2e%2fsecret.txt",
		"/v1/batches/1/../../secret.txt",
		"/v1/batches/1/../../../secret.txt",
		"/v1/batches/../secret.txt",
		"/v1/batches/next/../../../secret.txt",
		"/../secret.txt",
		"/v1/batches/secret.txt",
		"/v1/batches/1%2f..%2f..%2fsecret.txt",
		"/v1/batches/1%00",
		"/v1/batches/-1",
		"/v1/batches/+1",
		"/v1/batches/0x1",
		"/v1/batches/1e0",
		"/v1/batches/1.0",
		"/v1/batches/%31",
		"/v1/batches/99999999999999999999",
		"/v1/batches/1/done/../../../secret.txt",
		"//etc/passwd",
		"/v1/batches/%2fetc%2fpasswd",
	}
	for _, p := range paths {
		code, body := rawGet(t, s, p)
		if strings.Contains(body, secret) || strings.Contains(body, "root:") {
			t.Errorf("GET %s = %d and leaks a file outside the batches: %q", p, code, body)
		}
		if code == http.StatusOK && body != "one" {
			t.Errorf("GET %s = 200 %q", p, body)
		}
	}
	// Request-supplied steps on the done endpoint never name a directory.
	before := listTree(t, outer)
	for _, p := range []string{"/v1/batches/..%2f..%2fx/done", "/v1/batches/1%2f..%2f..%2fx/done", "/v1/batches/-1/done"} {
		req, _ := http.NewRequest(http.MethodPost, s.URL()+p, bytes.NewReader(makeTar(t, []tarEntry{{name: dataset.DoneFile, body: doneJSON(1)}}, false)))
		req.URL.RawPath = p
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("POST %s = 200, want an error", p)
		}
	}
	if after := listTree(t, outer); !slices.Equal(before, after) {
		t.Errorf("POST done with a bad step changed the tree:\nbefore %v\nafter  %v", before, after)
	}
}

func TestHandshakeDoneUpload(t *testing.T) {
	for _, gz := range []bool{false, true} {
		t.Run(fmt.Sprintf("gzip=%v", gz), func(t *testing.T) {
			s, run, outer := newTestServer(t, nil)
			writeBatch(t, run, 7, "seven")
			archive := makeTar(t, []tarEntry{
				{name: "./", typ: tar.TypeDir},
				{name: "./adapter_config.json", body: `{"r": 8}`},
				{name: "adapter_model.safetensors", body: strings.Repeat("\x00\x01", 5000)},
				{name: "tokenizer/", typ: tar.TypeDir},
				{name: "tokenizer/vocab.json", body: `{"a": 1}`},
				{name: "nested/deeper/file.bin", body: "xyz"},
				{name: "DONE", body: doneJSON(7)},
			}, gz)

			resp, body := request(t, s, http.MethodPost, "/v1/batches/7/done", testToken, bytes.NewReader(archive))
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("POST done = %d %s, want 200", resp.StatusCode, body)
			}
			ckpt := run.CheckpointDir(7)
			want := map[string]string{
				"adapter_config.json":       `{"r": 8}`,
				"adapter_model.safetensors": strings.Repeat("\x00\x01", 5000),
				"tokenizer/vocab.json":      `{"a": 1}`,
				"nested/deeper/file.bin":    "xyz",
			}
			for name, content := range want {
				b, err := os.ReadFile(filepath.Join(ckpt, filepath.FromSlash(name)))
				if err != nil || string(b) != content {
					t.Errorf("checkpoint file %s = %q, %v; want %d bytes", name, b, err, len(content))
				}
			}
			d, ok, err := ReadDone(ckpt)
			if err != nil || !ok || d.Step != 7 || d.Metrics["loss"] != 0.5 || d.AdapterPath != ckpt {
				t.Errorf("ReadDone() = %+v, %v, %v; want step 7, loss 0.5, adapter %s", d, ok, err, ckpt)
			}
			// The orchestrator's file-mode wait sees it too.
			if d2, err := WaitDone(t.Context(), ckpt, time.Millisecond); err != nil || d2.Step != 7 {
				t.Errorf("WaitDone() = %+v, %v", d2, err)
			}
			// Nothing else was created: no temp directories left over.
			tree := listTree(t, filepath.Join(outer, "run", dataset.CheckpointsDirName))
			wantTree := []string{"step-000007", "step-000007/DONE", "step-000007/adapter_config.json",
				"step-000007/adapter_model.safetensors", "step-000007/nested", "step-000007/nested/deeper",
				"step-000007/nested/deeper/file.bin", "step-000007/tokenizer", "step-000007/tokenizer/vocab.json"}
			if !slices.Equal(tree, wantTree) {
				t.Errorf("checkpoints/ = %v, want %v", tree, wantTree)
			}

			// A retried upload is harmless.
			resp, body = request(t, s, http.MethodPost, "/v1/batches/7/done", testToken, bytes.NewReader(archive))
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"exists"`) {
				t.Errorf("second POST done = %d %s, want 200 exists", resp.StatusCode, body)
			}
		})
	}
}

func TestHandshakeDoneRejects(t *testing.T) {
	s, run, outer := newTestServer(t, func(o *Options) { o.MaxUploadBytes = 64 << 10; o.MaxUploadEntries = 20 })
	writeBatch(t, run, 1, "one")
	// An incomplete checkpoint from an earlier attempt must be replaced, not
	// merged, once an upload succeeds; until then it is left alone.
	done := tarEntry{name: dataset.DoneFile, body: doneJSON(1)}
	file := tarEntry{name: "adapter.bin", body: "ok"}
	many := []tarEntry{done}
	for i := range 21 {
		many = append(many, tarEntry{name: fmt.Sprintf("f%d", i), body: "x"})
	}
	tests := []struct {
		name    string
		entries []tarEntry
		raw     []byte
		path    string
		want    int
	}{
		{"parent dir", []tarEntry{done, {name: "../evil", body: "x"}}, nil, "", 400},
		{"deep parent", []tarEntry{done, {name: "a/../../evil", body: "x"}}, nil, "", 400},
		{"dot-slash parent", []tarEntry{done, {name: "./../evil", body: "x"}}, nil, "", 400},
		{"absolute", []tarEntry{done, {name: "/tmp/evil", body: "x"}}, nil, "", 400},
		{"unclean", []tarEntry{done, {name: "a//b", body: "x"}}, nil, "", 400},
		{"inner dot", []tarEntry{done, {name: "a/./b", body: "x"}}, nil, "", 400},
		{"backslash", []tarEntry{done, {name: `..\evil`, body: "x"}}, nil, "", 400},
		{"parent dir entry", []tarEntry{done, {name: "../", typ: tar.TypeDir}}, nil, "", 400},
		{"symlink", []tarEntry{done, {name: "link", typ: tar.TypeSymlink, linkname: "/etc/passwd"}}, nil, "", 400},
		{"symlink then write", []tarEntry{{name: "d", typ: tar.TypeSymlink, linkname: ".."}, {name: "d/evil", body: "x"}, done}, nil, "", 400},
		{"hardlink", []tarEntry{done, {name: "hard", typ: tar.TypeLink, linkname: "../../secret"}}, nil, "", 400},
		{"fifo", []tarEntry{done, {name: "fifo", typ: tar.TypeFifo}}, nil, "", 400},
		{"duplicate", []tarEntry{done, file, file}, nil, "", 400},
		{"DONE as dir", []tarEntry{{name: "DONE/", typ: tar.TypeDir}, file}, nil, "", 400},
		{"DONE twice", []tarEntry{done, done}, nil, "", 400},
		{"no DONE", []tarEntry{file}, nil, "", 400},
		{"DONE for another step", []tarEntry{file, {name: dataset.DoneFile, body: doneJSON(2)}}, nil, "", 400},
		{"DONE malformed", []tarEntry{file, {name: dataset.DoneFile, body: `{"step": 1,`}}, nil, "", 400},
		{"DONE NaN", []tarEntry{file, {name: dataset.DoneFile, body: `{"step": 1, "metrics": {"loss": NaN}}`}}, nil, "", 400},
		{"too many members", many, nil, "", 400},
		{"too large", []tarEntry{done, {name: "big", body: strings.Repeat("x", 70<<10)}}, nil, "", 413},
		{"not a tar", nil, []byte("this is not a tar archive at all, just some text that goes on for a while" + strings.Repeat(".", 600)), "", 400},
		{"truncated gzip", nil, []byte{0x1f, 0x8b, 8, 0, 0}, "", 400},
		{"batch never ready", []tarEntry{{name: dataset.DoneFile, body: doneJSON(9)}}, nil, "/v1/batches/9/done", 404},
	}
	before := listTree(t, outer)
	for _, tt := range tests {
		body := tt.raw
		if body == nil {
			body = makeTar(t, tt.entries, false)
		}
		path := tt.path
		if path == "" {
			path = "/v1/batches/1/done"
		}
		resp, rb := request(t, s, http.MethodPost, path, testToken, bytes.NewReader(body))
		if resp.StatusCode != tt.want {
			t.Errorf("%s: POST %s = %d %s, want %d", tt.name, path, resp.StatusCode, rb, tt.want)
		}
		if after := listTree(t, outer); !slices.Equal(before, after) {
			t.Fatalf("%s: the tree changed:\nbefore %v\nafter  %v", tt.name, before, after)
		}
	}
	if _, err := os.Stat(filepath.Join(outer, "evil")); err == nil {
		t.Error("a file escaped the checkpoint directory")
	}

	// A leftover incomplete checkpoint (no DONE) is replaced by the upload.
	stale := run.CheckpointDir(1)
	os.MkdirAll(stale, 0o755)
	os.WriteFile(filepath.Join(stale, "stale.bin"), []byte("old"), 0o644)
	resp, rb := request(t, s, http.MethodPost, "/v1/batches/1/done", testToken, bytes.NewReader(makeTar(t, []tarEntry{file, done}, false)))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST done over a stale checkpoint = %d %s", resp.StatusCode, rb)
	}
	if got := listTree(t, stale); !slices.Equal(got, []string{"DONE", "adapter.bin"}) {
		t.Errorf("checkpoint after replacing a stale one = %v, want [DONE adapter.bin]", got)
	}
}

func TestMemberName(t *testing.T) {
	tests := []struct {
		in    string
		isDir bool
		want  string
		skip  bool
		ok    bool
	}{
		{"adapter.bin", false, "adapter.bin", false, true},
		{"./adapter.bin", false, "adapter.bin", false, true},
		{"a/b/c.json", false, "a/b/c.json", false, true},
		{"a/b/", true, "a/b", false, true},
		{"./", true, "", true, true},
		{".", true, "", true, true},
		{".hidden", false, ".hidden", false, true},
		{"..", false, "", false, false},
		{"../x", false, "", false, false},
		{"a/../../x", false, "", false, false},
		{"a/../x", false, "", false, false},
		{"/x", false, "", false, false},
		{"", false, "", false, false},
		{".", false, "", false, false},
		{"a\\b", false, "", false, false},
		{"c:x", false, "", false, false},
		{"a\x00b", false, "", false, false},
		{"a/", false, "", false, false},
		{"DONE/x", false, "", false, false},
		{strings.Repeat("d/", 17) + "f", false, "", false, false},
	}
	for _, tt := range tests {
		got, skip, err := memberName(tt.in, tt.isDir)
		if got != tt.want || skip != tt.skip || (err == nil) != tt.ok {
			t.Errorf("memberName(%q, %v) = %q, %v, %v; want %q, %v, ok %v", tt.in, tt.isDir, got, skip, err, tt.want, tt.skip, tt.ok)
		}
	}
}

func TestNewToken(t *testing.T) {
	a, err := NewToken()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewToken()
	if len(a) != 64 || a == b {
		t.Errorf("NewToken() = %q, %q; want two distinct 64-hex-digit tokens", a, b)
	}
}

// TestHandshakeRefused: a remote trainer's refusal reaches the run
// directory as REFUSED, which the loop reads.
func TestHandshakeRefused(t *testing.T) {
	s, run, _ := newTestServer(t, nil)
	writeBatch(t, run, 3, "parquet")
	tests := []struct {
		path, body string
		code       int
	}{
		{"/v1/batches/3/refused", `{"reason":"sha256 mismatch"}`, http.StatusOK},
		{"/v1/batches/3/refused", `{"reason":"  "}`, http.StatusBadRequest},
		{"/v1/batches/x/refused", `{"reason":"r"}`, http.StatusBadRequest},
		{"/v1/batches/3/refused", `not json`, http.StatusBadRequest},
	}
	for _, tt := range tests {
		resp, b := request(t, s, http.MethodPost, tt.path, testToken, strings.NewReader(tt.body))
		if resp.StatusCode != tt.code {
			t.Errorf("POST %s %s = %d %s, want %d", tt.path, tt.body, resp.StatusCode, b, tt.code)
		}
	}
	ref, ok := ReadRefused(run.CheckpointDir(3))
	if !ok || ref.Step != 3 || ref.Reason != "sha256 mismatch" {
		t.Errorf("REFUSED = %+v, %v", ref, ok)
	}
	if resp, _ := request(t, s, http.MethodPost, "/v1/batches/3/refused", "", strings.NewReader(`{"reason":"r"}`)); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("refusal without the token = %d, want 401", resp.StatusCode)
	}
	if err := WriteDone(run.CheckpointDir(3), Done{Step: 3}); err != nil {
		t.Fatal(err)
	}
	if resp, _ := request(t, s, http.MethodPost, "/v1/batches/3/refused", testToken, strings.NewReader(`{"reason":"late"}`)); resp.StatusCode != http.StatusConflict {
		t.Errorf("refusal of a done step = %d, want 409", resp.StatusCode)
	}
}

// TestHandshakeNextCarriesStepMetrics: the next answer brings the step's
// sampling metrics (its sidecar) for the trainer's TensorBoard/W&B; a step
// whose sidecar is lost or broken still gets its batch, without them.
func TestHandshakeNextCarriesStepMetrics(t *testing.T) {
	s, run, _ := newTestServer(t, nil)
	if err := os.MkdirAll(run.RolloutsDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	sidecars := map[int]string{
		1: `{"metrics":{"step":1,"reward_mean":0.5,"agreement_rate":0.25},"role_baseline":null}`,
		3: `{"metrics":`,
	}
	for step := 1; step <= 3; step++ {
		writeBatch(t, run, step, "batch")
		if sc, ok := sidecars[step]; ok {
			if err := os.WriteFile(run.SidecarPath(step), []byte(sc), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	tests := []struct {
		after int
		want  map[string]any
	}{
		{0, map[string]any{"step": 1.0, "reward_mean": 0.5, "agreement_rate": 0.25}},
		{1, nil}, // no sidecar
		{2, nil}, // a sidecar that does not parse
	}
	for _, tt := range tests {
		resp, body := request(t, s, http.MethodGet, fmt.Sprintf("/v1/batches/next?after=%d&wait=0", tt.after), testToken, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET next?after=%d = %d %s, want 200", tt.after, resp.StatusCode, body)
		}
		var nb NextBatch
		if err := json.Unmarshal(body, &nb); err != nil {
			t.Fatalf("GET next?after=%d: %v: %s", tt.after, err, body)
		}
		if nb.Step != tt.after+1 || fmt.Sprint(nb.Metrics) != fmt.Sprint(tt.want) {
			t.Errorf("GET next?after=%d = step %d metrics %v, want step %d metrics %v", tt.after, nb.Step, nb.Metrics, tt.after+1, tt.want)
		}
		if tt.want == nil && bytes.Contains(body, []byte(`"metrics"`)) {
			t.Errorf("GET next?after=%d = %s: metrics present without a sidecar", tt.after, body)
		}
	}
}
