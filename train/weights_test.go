package train_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/handshake"
	"github.com/parleyhq/parley/internal/retry"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/llm/weights"
	"github.com/parleyhq/parley/llm/weightsync"
	"github.com/parleyhq/parley/sim"
	"github.com/parleyhq/parley/train"
)

// writeWeights writes a small model's weights to dir/model.safetensors:
// a norm and an embedding whose values depend on step, and rows rows of
// embedding (the served model's 3; another number is another shape).
func writeWeights(t testing.TB, dir string, step, rows int) {
	t.Helper()
	f32 := func(n int, base float32) []byte {
		b := make([]byte, 4*n)
		for i := range n {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(base+float32(i)/100))
		}
		return b
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	err := weights.WriteFile(filepath.Join(dir, "model.safetensors"), []weights.Written{
		{Name: "model.norm.weight", DType: "F32", Shape: []int64{4}, Data: f32(4, 1+float32(step))},
		{Name: "model.embed_tokens.weight", DType: "F32", Shape: []int64{int64(rows), 4}, Data: f32(rows*4, float32(step))},
	})
	if err != nil {
		t.Fatal(err)
	}
}

// fullSims starts n serve-sims holding the base weights (dir/base) with
// vLLM's RL routes.
func fullSims(t *testing.T, base string, n int) ([]*sim.Server, []string) {
	t.Helper()
	var srvs []*sim.Server
	var urls []string
	for range n {
		srv, err := sim.New(sim.Options{Weights: base})
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(srv.Handler())
		t.Cleanup(func() { ts.Close(); srv.Close() })
		srvs, urls = append(srvs, srv), append(urls, ts.URL)
	}
	return srvs, urls
}

// fullLoop is a test loop over urls training full weights from base; the
// returned trainer writes them (badAt: a step whose weights have another
// shape).
func fullLoop(t *testing.T, dir dataset.RunDir, base string, urls []string, steps, staleness, badAt int, server func(*llm.Client) weightsync.Server) (*train.Loop, *fakeTrainer) {
	t.Helper()
	var client *llm.Client
	l := newLoopClient(t, dir, llm.Options{Endpoints: urls, Retry: retry.Policy{BackoffBase: time.Millisecond}}, steps, staleness, func(o *train.LoopOptions) {
		client = o.Rollout.Policy.(*llm.Client)
		var srv weightsync.Server = client
		if server != nil {
			srv = server(client)
		}
		ws, err := weightsync.New(weightsync.Options{Server: srv, Transfer: weightsync.Disk{Reloader: client}, Base: base})
		if err != nil {
			t.Fatal(err)
		}
		o.Adapters, o.Weights, o.BaseWeights = nil, ws, base
	})
	ft := &fakeTrainer{dir: dir, consumed: map[int]int{}, versions: map[int]int{}, full: func(ck string, step int) {
		rows := 3
		if step == badAt {
			rows = 5
		}
		writeWeights(t, ck, step, rows)
	}}
	return l, ft
}

// wantServing checks that every sim holds step's weights (the trainer's
// checksums of dir), version step, and is not paused.
func wantServing(t *testing.T, srvs []*sim.Server, dir string, step int) {
	t.Helper()
	f, err := weights.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i, srv := range srvs {
		sums, version, paused, _ := srv.RLState()
		var keys []string
		for k := range sums {
			keys = append(keys, k)
		}
		want, _, err := weights.Expected(f, keys)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range want {
			if sums[k] != v {
				t.Errorf("endpoint %d: %s checksum is not step %d's", i, k, step)
			}
		}
		if version != fmt.Sprint(step) || paused {
			t.Errorf("endpoint %d: version %q, paused %v; want %d, not paused", i, version, paused, step)
		}
	}
}

// TestFullWeights (issue 19, item 1): with full weights every step's
// weights reach both endpoints, verified, with the update's metrics on
// each step line; bad input stops the run naming the cause before it
// trains what it cannot serve.
func TestFullWeights(t *testing.T) {
	root := t.TempDir()
	base := filepath.Join(root, "base")
	writeWeights(t, base, 0, 3)

	t.Run("two endpoints", func(t *testing.T) {
		srvs, urls := fullSims(t, base, 2)
		dir := dataset.RunDir(filepath.Join(t.TempDir(), "run"))
		l, ft := fullLoop(t, dir, base, urls, 3, 0, 0, nil)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go ft.run(ctx)
		if err := l.Run(ctx); err != nil {
			t.Fatal(err)
		}
		wantServing(t, srvs, dir.CheckpointDir(3), 3)
		for _, m := range readMetrics(t, dir) {
			if m["update_checksums_compared"] != float64(4) || m["update_transferred"] != float64(1) || m["update_seconds"] == nil {
				t.Errorf("step %v: update metrics %v %v %v, want 4 checksums compared (2 per endpoint), transferred, a time",
					m["step"], m["update_checksums_compared"], m["update_transferred"], m["update_seconds"])
			}
		}
		if _, _, _, reloads := srvs[0].RLState(); reloads != 1+3 {
			t.Errorf("%d loads, want the base and one per step", reloads)
		}
	})

	for _, tc := range []struct {
		name    string
		noRL    bool
		badAt   int
		server  func(*llm.Client) weightsync.Server
		want    []string
		trained int // the steps trained before the error
	}{
		{name: "no dev mode", noRL: true, want: []string{"no weight-update routes", "VLLM_SERVER_DEV_MODE=1"}},
		{name: "bad shapes", badAt: 2, trained: 2, want: []string{"step 2", "model.embed_tokens.weight: F32 [5 4], want F32 [3 4]", "nothing was sent"}},
		{name: "version mismatch", server: func(c *llm.Client) weightsync.Server { return versionIgnorer{c} },
			want: []string{"policy version 0", "reports weight version", `want "0"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := dataset.RunDir(filepath.Join(t.TempDir(), "run"))
			var urls []string
			var srvs []*sim.Server
			if tc.noRL {
				urls = []string{simURL(t)}
			} else {
				srvs, urls = fullSims(t, base, 1)
			}
			l, ft := fullLoop(t, dir, base, urls, 3, 0, tc.badAt, tc.server)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go ft.run(ctx)
			err := l.Run(ctx)
			if err == nil {
				t.Fatal("Run = nil error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if tc.noRL && !errors.Is(err, llm.ErrNoRLRoutes) {
				t.Errorf("error %v is not ErrNoRLRoutes", err)
			}
			for s := 1; s <= 3; s++ {
				_, done, _ := handshake.ReadDone(dir.CheckpointDir(s))
				if done != (s <= tc.trained) {
					t.Errorf("step %d trained %v, want %v", s, done, s <= tc.trained)
				}
			}
			if tc.badAt > 0 {
				// Nothing reached the server: it still serves step 1's weights, resumed.
				wantServing(t, srvs, dir.CheckpointDir(1), 1)
			}
		})
	}
}

// versionIgnorer is a server whose version never changes.
type versionIgnorer struct{ *llm.Client }

func (versionIgnorer) SetWeightVersion(context.Context, string) error { return nil }

// TestUpdateCrashChild is the child process of TestSIGKILLDuringUpdate.
func TestUpdateCrashChild(t *testing.T) {
	dir, urls, base := os.Getenv("PARLEY_TEST_UPDATE_DIR"), os.Getenv("PARLEY_TEST_UPDATE_URLS"), os.Getenv("PARLEY_TEST_UPDATE_BASE")
	if dir == "" {
		t.Skip("child of TestSIGKILLDuringUpdate")
	}
	var staleness int
	fmt.Sscan(os.Getenv("PARLEY_TEST_UPDATE_STALENESS"), &staleness)
	l, ft := fullLoop(t, dataset.RunDir(dir), base, strings.Split(urls, ","), 5, staleness, 0, nil)
	ft.log = filepath.Join(dir, "consumed.log")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go ft.run(ctx)
	if err := l.Run(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestSIGKILLDuringUpdate (item 5) kills the loop with SIGKILL at every
// point of a full-weights update — paused, one of two endpoints
// reloaded, both reloaded with the old version, the version set but the
// cache not reset, verified but not resumed — at both staleness settings,
// then resumes: every endpoint ends on exactly the last step's weights
// (checksums) and version, none paused, every step trained and recorded
// once.
func TestSIGKILLDuringUpdate(t *testing.T) {
	root := t.TempDir()
	base := filepath.Join(root, "base")
	writeWeights(t, base, 0, 3)
	for _, staleness := range []int{0, 1} {
		t.Run(fmt.Sprint("staleness", staleness), func(t *testing.T) {
			srvs, urls := fullSims(t, base, 2)
			dir := filepath.Join(t.TempDir(), "run")
			kills := killAtPoints(t, "TestUpdateCrashChild", []string{"PARLEY_TEST_UPDATE_DIR=" + dir, "PARLEY_TEST_UPDATE_URLS=" + strings.Join(urls, ","),
				"PARLEY_TEST_UPDATE_BASE=" + base, fmt.Sprint("PARLEY_TEST_UPDATE_STALENESS=", staleness)},
				"update-paused:2", "reload-endpoint:1", "update-transferred:2", "update-version-set:1", "update-verified:3", "reload-endpoint:3")
			if kills < 5 {
				t.Fatalf("%d kills landed, want at least 5", kills)
			}
			rd := dataset.RunDir(dir)
			wantServing(t, srvs, rd.CheckpointDir(5), 5)
			ms := readMetrics(t, rd)
			if len(ms) != 5 {
				t.Fatalf("%d metrics lines, want 5", len(ms))
			}
			b, _ := os.ReadFile(filepath.Join(dir, "consumed.log"))
			for s := 1; s <= 5; s++ {
				if ms[s-1]["step"] != float64(s) {
					t.Errorf("metrics line %d is step %v", s-1, ms[s-1]["step"])
				}
				n := strings.Count(string(b), fmt.Sprintf("step %d\n", s))
				if _, done, _ := handshake.ReadDone(rd.CheckpointDir(s)); n == 0 && done {
					n = 1 // killed between its DONE and its log line
				}
				if n != 1 {
					t.Errorf("step %d trained %d times across %d kills, want once", s, n, kills)
				}
			}
			t.Logf("%d kills", kills)
		})
	}
}
