package weights_test

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/llm/weights"
)

func sum(parts ...[]byte) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write(p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func bytesOf(n int, v byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = v + byte(i)
	}
	return b
}

// TestExpected: vLLM's runtime checksums computed from a checkpoint:
// a tensor as it is, fused q/k/v and gate/up (bytes one after the other),
// the vocabulary padded with zero rows to 64, other ranks not reproduced.
func TestExpected(t *testing.T) {
	dir := t.TempDir()
	q, k, v := bytesOf(16, 1), bytesOf(8, 2), bytesOf(8, 3)
	g, u := bytesOf(12, 4), bytesOf(12, 5)
	emb := bytesOf(3*4*4, 6) // 3 rows of 4 F32
	norm := bytesOf(16, 7)
	err := weights.WriteFile(filepath.Join(dir, "model.safetensors"), []weights.Written{
		{Name: "l.q_proj.weight", DType: "F32", Shape: []int64{4, 1}, Data: q},
		{Name: "l.k_proj.weight", DType: "F32", Shape: []int64{2, 1}, Data: k},
		{Name: "l.v_proj.weight", DType: "F32", Shape: []int64{2, 1}, Data: v},
		{Name: "m.gate_proj.weight", DType: "F32", Shape: []int64{3, 1}, Data: g},
		{Name: "m.up_proj.weight", DType: "F32", Shape: []int64{3, 1}, Data: u},
		{Name: "model.embed_tokens.weight", DType: "F32", Shape: []int64{3, 4}, Data: emb},
		{Name: "model.norm.weight", DType: "F32", Shape: []int64{4}, Data: norm},
	})
	if err != nil {
		t.Fatal(err)
	}
	f, err := weights.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	p := "dp0:pp0:pcp0:tp0:"
	got, skipped, err := weights.Expected(f, []string{p + "l.qkv_proj.weight", p + "m.gate_up_proj.weight", p + "model.embed_tokens.weight",
		p + "model.norm.weight", "dp0:pp0:pcp0:tp1:model.norm.weight", p + "missing.weight"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ key, want string }{
		{p + "l.qkv_proj.weight", sum(q, k, v)},
		{p + "m.gate_up_proj.weight", sum(g, u)},
		{p + "model.embed_tokens.weight", sum(emb, make([]byte, (64-3)*16))},
		{p + "model.norm.weight", sum(norm)},
	} {
		if got[tt.key] != tt.want {
			t.Errorf("Expected[%s] = %s, want %s", tt.key, got[tt.key], tt.want)
		}
	}
	if strings.Join(skipped, ",") != "dp0:pp0:pcp0:tp1:model.norm.weight,"+p+"missing.weight" {
		t.Errorf("skipped %v, want the other rank and the missing tensor", skipped)
	}
	// Compare names what differs.
	other := t.TempDir()
	if err := weights.WriteFile(filepath.Join(other, "model.safetensors"), []weights.Written{
		{Name: "model.norm.weight", DType: "F32", Shape: []int64{5}, Data: bytesOf(20, 0)},
	}); err != nil {
		t.Fatal(err)
	}
	g2, _ := weights.Read(other)
	err = weights.CheckSame(f, g2)
	if err == nil || !strings.Contains(err.Error(), "model.norm.weight: F32 [5], want F32 [4]") || !strings.Contains(err.Error(), "l.q_proj.weight: missing") {
		t.Errorf("CheckSame = %v, want the shape and the missing tensors named", err)
	}
	if sum() != weights.EmptyDigest {
		t.Errorf("EmptyDigest %s is not sha256 of nothing", weights.EmptyDigest)
	}
}
