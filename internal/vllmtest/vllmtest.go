// Package vllmtest hands tests the real parts they run against: the
// project's Python environment, the tiny model, and a real vLLM (CPU build)
// serving it.
//
// vLLM takes about a minute to start on 2 cores, so `make test` starts one
// shared server (scripts/with_vllm.sh) and names it in PARLEY_VLLM_URL; tests
// that need a server of their own (the quickstart, which starts vLLM through
// train.server_command as a user's run does) get its command line from
// ServerCommand.
//
// A test that needs one of these and finds it missing skips with a message
// saying how to run it, except under PARLEY_REQUIRE_VLLM=1 (set by `make
// test` and so by CI), where it fails: CI never passes by skipping them.
package vllmtest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// Environment variables read by this package.
const (
	// EnvURL is the base URL of the shared vLLM server.
	EnvURL = "PARLEY_VLLM_URL"
	// EnvModel is the shared server's served model name (default "tiny").
	EnvModel = "PARLEY_VLLM_MODEL"
	// EnvPython is the Python interpreter of the project's environment.
	EnvPython = "PARLEY_PYTHON"
	// EnvTinyModel is the tiny model's folder.
	EnvTinyModel = "PARLEY_TINY_MODEL"
	// EnvStartedURL, when set, names a server already started the way
	// Start would start it, which Start then returns instead (to rerun a
	// test without paying vLLM's start each time).
	EnvStartedURL = "PARLEY_VLLM_STARTED_URL"
	// EnvRequire, when "1", turns every skip of this package into a failure.
	EnvRequire = "PARLEY_REQUIRE_VLLM"
)

// DefaultModel is the served model name of the tiny model.
const DefaultModel = "tiny"

// Server is a running vLLM server.
type Server struct {
	// URL is its base URL, e.g. "http://127.0.0.1:18431".
	URL string
	// Model is its served model name.
	Model string
}

// missing skips t, or fails it under PARLEY_REQUIRE_VLLM=1.
func missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv(EnvRequire) == "1" {
		t.Fatalf("%s (%s=1: this test must run; see the Makefile's test target)", msg, EnvRequire)
	}
	t.Skipf("%s: run through `make test`", msg)
}

// Python returns the project's Python interpreter and the tiny model folder
// (PARLEY_PYTHON, PARLEY_TINY_MODEL).
func Python(t testing.TB) (python, model string) {
	t.Helper()
	python, model = os.Getenv(EnvPython), os.Getenv(EnvTinyModel)
	if python == "" || model == "" {
		missing(t, "%s and %s are unset (the Python environment and the tiny model)", EnvPython, EnvTinyModel)
	}
	return python, model
}

// Shared returns the shared vLLM server named by PARLEY_VLLM_URL after
// checking that it is healthy.
func Shared(t testing.TB) Server {
	t.Helper()
	url := os.Getenv(EnvURL)
	if url == "" {
		missing(t, "%s is unset: no shared vLLM server", EnvURL)
	}
	s := Server{URL: url, Model: os.Getenv(EnvModel)}
	if s.Model == "" {
		s.Model = DefaultModel
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := WaitHealthy(ctx, s.URL); err != nil {
		t.Fatalf("the shared vLLM server %s (%s) is not healthy: %v", s.URL, EnvURL, err)
	}
	return s
}

// ServerCommand is the command line that serves the tiny model with vLLM on
// port, with parley's flags (scripts/parley_trainer/serve_vllm.py).
func ServerCommand(python, model string, port int) []string {
	return []string{python, "-m", "parley_trainer.serve_vllm", "--model", model,
		"--served-model-name", DefaultModel, "--port", strconv.Itoa(port)}
}

// WaitHealthy polls GET url/health until it answers 200 or ctx ends.
func WaitHealthy(ctx context.Context, url string) error {
	client := &http.Client{Timeout: 5 * time.Second}
	var last error
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/health", nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("GET /health: %s", resp.Status)
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// FreePort returns a TCP port that was free on 127.0.0.1 a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// Start starts a vLLM server of this test's own (ServerCommand with extra
// flags, e.g. --full-weights) on a free port, in its own process group,
// waits for its health (10 minutes at most) and stops it, with every
// engine process, when the test ends. Use it only where the shared server
// cannot serve: each start costs about a minute on 2 cores.
func Start(t testing.TB, extra ...string) Server {
	t.Helper()
	python, model := Python(t)
	if u := os.Getenv(EnvStartedURL); u != "" {
		return Server{URL: u, Model: DefaultModel}
	}
	port := FreePort(t)
	args := append(ServerCommand(python, model, port), extra...)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	logf, err := os.CreateTemp(t.TempDir(), "vllm-*.log")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("start vLLM: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		logf.Close()
	})
	s := Server{URL: fmt.Sprintf("http://127.0.0.1:%d", port), Model: DefaultModel}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	go func() {
		select {
		case <-exited:
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := WaitHealthy(ctx, s.URL); err != nil {
		b, _ := os.ReadFile(logf.Name())
		t.Fatalf("vLLM (%v) did not become healthy: %v\n%s", args, err, tail(string(b), 3000))
	}
	return s
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
