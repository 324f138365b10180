package weightsync_test

import (
	"context"
	"encoding/binary"
	"math"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/llm/weights"
	"github.com/parleyhq/parley/llm/weightsync"
	"github.com/parleyhq/parley/sim"
)

// linear is the small model's linear layer: serve-sim's Repacked, as
// vLLM's CPU build reports its linear layers.
const linear = "model.layers.0.mlp.down_proj.weight"

// smallModel writes a model to dir whose norm and embedding depend on
// frozen and whose linear layer on step.
func smallModel(t *testing.T, dir string, frozen, step int) string {
	t.Helper()
	f32 := func(n int, base float32) []byte {
		b := make([]byte, 4*n)
		for i := range n {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(base+float32(i)/100))
		}
		return b
	}
	err := weights.WriteFile(filepath.Join(dir, "model.safetensors"), []weights.Written{
		{Name: "model.norm.weight", DType: "F32", Shape: []int64{4}, Data: f32(4, 1+float32(frozen))},
		{Name: "model.embed_tokens.weight", DType: "F32", Shape: []int64{3, 4}, Data: f32(12, float32(frozen))},
		{Name: linear, DType: "F32", Shape: []int64{4, 4}, Data: f32(16, 2+float32(step))},
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestSyncFrozenChecksummed (issue 28, item 8): a step that changed only
// parameters whose checksums the server cannot report (the CPU build's
// linear layers, the norms and embedding frozen) is transferred: matching
// checksums skip a transfer only when they cover every parameter, and
// "already at this step" needs the step's version too. The endpoint ends
// on the step's real weights (serve-sim's own checksums, not the ones it
// reports).
func TestSyncFrozenChecksummed(t *testing.T) {
	root := t.TempDir()
	base := smallModel(t, root, 0, 0)
	step1 := smallModel(t, t.TempDir(), 0, 1) // only the linear layer trained
	for _, tc := range []struct {
		name     string
		repacked []string
		// the transfers of: step 0 (the base, version unset), step 1,
		// step 1 again, step 1 after the version was set to 7
		want [4]float64
	}{
		{"every checksum", nil, [4]float64{0, 1, 0, 0}},
		{"linear layer repacked", []string{linear}, [4]float64{1, 1, 0, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := sim.New(sim.Options{Weights: base, Repacked: tc.repacked})
			if err != nil {
				t.Fatal(err)
			}
			ts := httptest.NewServer(srv.Handler())
			t.Cleanup(func() { ts.Close(); srv.Close() })
			client, err := llm.New(llm.Options{Endpoints: []string{ts.URL}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(client.Close)
			ws, err := weightsync.New(weightsync.Options{Server: client, Transfer: weightsync.Disk{Reloader: client}, Base: base})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			for i, call := range []struct {
				step    int
				dir     string
				version string // set on the server before the call
			}{{0, base, ""}, {1, step1, ""}, {1, step1, ""}, {1, step1, "7"}} {
				if call.version != "" {
					if err := client.SetWeightVersion(ctx, call.version); err != nil {
						t.Fatal(err)
					}
				}
				m, err := ws.Sync(ctx, call.step, call.dir)
				if err != nil {
					t.Fatalf("call %d, Sync(%d): %v", i, call.step, err)
				}
				if m["update_transferred"] != tc.want[i] {
					t.Errorf("call %d, Sync(%d): update_transferred %v, want %v (metrics %v)", i, call.step, m["update_transferred"], tc.want[i], m)
				}
				wantHeld(t, srv, call.dir)
			}
		})
	}
}

// wantHeld checks that srv's engine holds dir's weights, every parameter
// (its real checksums, the repacked ones included).
func wantHeld(t *testing.T, srv *sim.Server, dir string) {
	t.Helper()
	f, err := weights.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	sums, _, _, _ := srv.RLState()
	keys := make([]string, 0, len(sums))
	for k := range sums {
		keys = append(keys, k)
	}
	want, _, err := weights.Expected(f, keys)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range want {
		if sums[k] != v {
			t.Errorf("the engine's %s is not %s's", k, dir)
		}
	}
}
