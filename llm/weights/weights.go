// Package weights reads a folder of full model weights as the trainer
// writes them and vLLM loads them (safetensors files, one or sharded, with
// an optional model.safetensors.index.json): the tensors' names, dtypes
// and shapes, a check that two folders hold the same tensors with the
// same shapes (a folder vLLM would refuse kills its engine, so it is
// checked before any reload), and the digests vLLM's /weight_checker
// reports for them.
//
// vLLM's checksum of a runtime parameter is sha256 over its bytes as the
// engine holds it (vllm/model_executor/model_loader/weight_checksum.py).
// Those parameters are not always the checkpoint's tensors: vLLM fuses
// q_proj, k_proj and v_proj into qkv_proj and gate_proj and up_proj into
// gate_up_proj (concatenated along the first dimension, so their bytes
// follow each other), pads the vocabulary rows of embed_tokens and
// lm_head with zeros to a multiple of 64, shards them across tensor
// parallel ranks and, on some platforms, repacks linear weights into a
// kernel layout. Expected computes a digest only where the runtime
// parameter is one of the first three cases at tensor parallel size 1,
// and says which runtime parameters it could not reproduce.
package weights

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// IndexFile is the index of a sharded safetensors checkpoint.
const IndexFile = "model.safetensors.index.json"

// maxHeader bounds a safetensors header (the format's own limit is 100 MB).
const maxHeader = 100 << 20

// Tensor is one tensor of a folder: where its bytes lie.
type Tensor struct {
	Name  string
	DType string // safetensors dtype: F32, BF16, F16, …
	Shape []int64
	File  string // the file's path
	Begin int64  // absolute offset of its first byte in File
	End   int64  // absolute offset after its last byte
}

// Folder is the tensors of one weights folder, by name.
type Folder struct {
	Dir     string
	Tensors map[string]Tensor
}

// Names returns the folder's tensor names, sorted.
func (f Folder) Names() []string {
	out := make([]string, 0, len(f.Tensors))
	for n := range f.Tensors {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// ErrNoWeights means a folder holds no safetensors file.
var ErrNoWeights = errors.New("no *.safetensors file")

// Read reads the headers of dir's safetensors files (those the index
// names, when there is one; else every *.safetensors file in dir).
func Read(dir string) (Folder, error) {
	files, err := weightFiles(dir)
	if err != nil {
		return Folder{}, fmt.Errorf("weights.Read %s: %w", dir, err)
	}
	f := Folder{Dir: dir, Tensors: map[string]Tensor{}}
	for _, path := range files {
		ts, err := readHeader(path)
		if err != nil {
			return Folder{}, fmt.Errorf("weights.Read: %w", err)
		}
		for _, t := range ts {
			if prev, dup := f.Tensors[t.Name]; dup {
				return Folder{}, fmt.Errorf("weights.Read %s: tensor %s is in both %s and %s", dir, t.Name, filepath.Base(prev.File), filepath.Base(path))
			}
			f.Tensors[t.Name] = t
		}
	}
	return f, nil
}

// weightFiles lists the safetensors files of dir.
func weightFiles(dir string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(dir, IndexFile))
	if err == nil {
		var idx struct {
			WeightMap map[string]string `json:"weight_map"`
		}
		if err := json.Unmarshal(b, &idx); err != nil {
			return nil, fmt.Errorf("%s: %w", IndexFile, err)
		}
		var files []string
		for _, name := range idx.WeightMap {
			if strings.ContainsAny(name, `/\`) {
				return nil, fmt.Errorf("%s names the file %q outside the folder", IndexFile, name)
			}
			p := filepath.Join(dir, name)
			if !slices.Contains(files, p) {
				files = append(files, p)
			}
		}
		sort.Strings(files)
		if len(files) == 0 {
			return nil, fmt.Errorf("%s names no file", IndexFile)
		}
		return files, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, ErrNoWeights
	}
	sort.Strings(files)
	return files, nil
}

// readHeader reads one safetensors file's header.
func readHeader(path string) ([]Tensor, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	var n uint64
	if err := binary.Read(fh, binary.LittleEndian, &n); err != nil {
		return nil, fmt.Errorf("%s: not a safetensors file: %w", path, err)
	}
	if n == 0 || n > maxHeader || int64(n)+8 > st.Size() {
		return nil, fmt.Errorf("%s: not a safetensors file (header length %d of a %d-byte file)", path, n, st.Size())
	}
	hb := make([]byte, n)
	if _, err := io.ReadFull(fh, hb); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(hb, &raw); err != nil {
		return nil, fmt.Errorf("%s: header: %w", path, err)
	}
	base := 8 + int64(n)
	var out []Tensor
	for name, v := range raw {
		if name == "__metadata__" {
			continue
		}
		var h struct {
			DType   string   `json:"dtype"`
			Shape   []int64  `json:"shape"`
			Offsets [2]int64 `json:"data_offsets"`
		}
		if err := json.Unmarshal(v, &h); err != nil {
			return nil, fmt.Errorf("%s: tensor %s: %w", path, name, err)
		}
		t := Tensor{Name: name, DType: h.DType, Shape: h.Shape, File: path, Begin: base + h.Offsets[0], End: base + h.Offsets[1]}
		if t.Begin > t.End || t.End > st.Size() {
			return nil, fmt.Errorf("%s: tensor %s lies outside the file (bytes %d to %d of %d): a torn or truncated write", path, name, t.Begin, t.End, st.Size())
		}
		out = append(out, t)
	}
	return out, nil
}

// Mismatch is one difference between a folder and the folder it must
// match.
type Mismatch struct {
	Name       string
	Want, Got  string // "F32 [128 64]", or "missing"
	Unexpected bool   // Got has a tensor Want has not
}

// Compare lists how got differs from want: tensors missing, extra, or of
// another dtype or shape. It returns nil when they hold the same tensors.
func Compare(want, got Folder) []Mismatch {
	var out []Mismatch
	for _, name := range want.Names() {
		w := want.Tensors[name]
		g, ok := got.Tensors[name]
		switch {
		case !ok:
			out = append(out, Mismatch{Name: name, Want: describe(w), Got: "missing"})
		case g.DType != w.DType || !slices.Equal(g.Shape, w.Shape):
			out = append(out, Mismatch{Name: name, Want: describe(w), Got: describe(g)})
		}
	}
	for _, name := range got.Names() {
		if _, ok := want.Tensors[name]; !ok {
			out = append(out, Mismatch{Name: name, Want: "missing", Got: describe(got.Tensors[name]), Unexpected: true})
		}
	}
	return out
}

func describe(t Tensor) string { return fmt.Sprintf("%s %v", t.DType, t.Shape) }

// CheckSame returns an error naming the first differences of got from
// want (Compare), or nil.
func CheckSame(want, got Folder) error {
	ms := Compare(want, got)
	if len(ms) == 0 {
		return nil
	}
	// Other shapes first: they say most.
	sort.SliceStable(ms, func(i, j int) bool {
		return ms[i].Got != "missing" && ms[i].Want != "missing" && (ms[j].Got == "missing" || ms[j].Want == "missing")
	})
	var parts []string
	for i, m := range ms {
		if i == 5 {
			parts = append(parts, fmt.Sprintf("and %d more", len(ms)-i))
			break
		}
		parts = append(parts, fmt.Sprintf("%s: %s, want %s", m.Name, m.Got, m.Want))
	}
	return fmt.Errorf("the weights in %s do not match the served model's %s (%d tensors differ: %s)", got.Dir, want.Dir, len(ms), strings.Join(parts, "; "))
}

// Split cuts a /weight_checker key ("dp0:pp0:pcp0:tp0:model.norm.weight")
// into the parameter's name and whether the key is of the one layout
// Expected reproduces (every parallel rank 0).
func Split(key string) (name string, whole bool) {
	i := strings.LastIndexByte(key, ':')
	if i < 0 {
		return key, true
	}
	prefix := key[:i+1]
	return key[i+1:], prefix == "dp0:pp0:pcp0:tp0:"
}

// EmptyDigest is the sha256 of no bytes: vLLM's checksum of a parameter
// that holds none, as the CPU build leaves each linear layer's weight once
// it has repacked it for its kernels (measured on vLLM 0.32: every
// qkv_proj, o_proj, gate_up_proj and down_proj). Such a checksum says
// nothing about the weights and is not compared.
const EmptyDigest = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// VocabPadding is vLLM's DEFAULT_VOCAB_PADDING_SIZE: embed_tokens and
// lm_head hold their vocabulary rows padded with zeros to a multiple.
const VocabPadding = 64

// fusions are vLLM's fused parameters and the checkpoint tensors they
// concatenate, in order (the suffix of the runtime name → those of the
// checkpoint's).
var fusions = []struct {
	suffix string
	parts  []string
}{
	{".qkv_proj.weight", []string{".q_proj.weight", ".k_proj.weight", ".v_proj.weight"}},
	{".qkv_proj.bias", []string{".q_proj.bias", ".k_proj.bias", ".v_proj.bias"}},
	{".gate_up_proj.weight", []string{".gate_proj.weight", ".up_proj.weight"}},
}

// Expected computes, for each /weight_checker key of keys, the digest the
// server reports when it holds folder f: the sha256 of the checkpoint
// tensor of that name, of the fused tensors' bytes one after the other,
// or of a vocabulary matrix with its zero rows. Keys it cannot reproduce
// (another parallel rank, a tensor the folder lacks or holds in another
// layout) are returned in skipped.
func Expected(f Folder, keys []string) (digests map[string]string, skipped []string, err error) {
	digests = map[string]string{}
	for _, key := range keys {
		name, whole := Split(key)
		parts, pad := plan(f, name)
		if !whole || parts == nil {
			skipped = append(skipped, key)
			continue
		}
		d, err := digest(parts, pad)
		if err != nil {
			return nil, nil, fmt.Errorf("weights.Expected %s: %w", f.Dir, err)
		}
		digests[key] = d
	}
	return digests, skipped, nil
}

// plan finds the checkpoint tensors of runtime parameter name in f and
// the zero bytes that follow them (vocabulary padding); nil when f lacks
// them.
func plan(f Folder, name string) ([]Tensor, int64) {
	if t, ok := f.Tensors[name]; ok {
		return []Tensor{t}, vocabPad(name, t)
	}
	for _, fu := range fusions {
		stem, ok := strings.CutSuffix(name, fu.suffix)
		if !ok {
			continue
		}
		var out []Tensor
		for _, p := range fu.parts {
			t, ok := f.Tensors[stem+p]
			if !ok {
				return nil, 0
			}
			out = append(out, t)
		}
		return out, 0
	}
	return nil, 0
}

// vocabPad is the number of zero bytes vLLM adds after a vocabulary
// matrix (embed_tokens, lm_head) of t's shape.
func vocabPad(name string, t Tensor) int64 {
	if !strings.HasSuffix(name, "embed_tokens.weight") && !strings.HasSuffix(name, "lm_head.weight") {
		return 0
	}
	if len(t.Shape) != 2 || t.Shape[0] <= 0 {
		return 0
	}
	rows := t.Shape[0]
	padded := (rows + VocabPadding - 1) / VocabPadding * VocabPadding
	rowBytes := (t.End - t.Begin) / rows
	return (padded - rows) * rowBytes
}

// digest is the sha256 of the tensors' bytes, then pad zero bytes.
func digest(parts []Tensor, pad int64) (string, error) {
	h := sha256.New()
	for _, t := range parts {
		fh, err := os.Open(t.File)
		if err != nil {
			return "", err
		}
		_, err = io.Copy(h, io.NewSectionReader(fh, t.Begin, t.End-t.Begin))
		fh.Close()
		if err != nil {
			return "", fmt.Errorf("%s: tensor %s: %w", t.File, t.Name, err)
		}
	}
	if pad > 0 {
		if _, err := io.CopyN(h, zeros{}, pad); err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// zeros reads as an endless run of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// Written is a tensor to write with WriteFile: its dtype, shape and
// little-endian bytes.
type Written struct {
	Name  string
	DType string
	Shape []int64
	Data  []byte
}

// WriteFile writes ts as one safetensors file at path (tests and tools;
// the trainer writes with the safetensors library).
func WriteFile(path string, ts []Written) error {
	header := map[string]any{}
	var off int64
	for _, t := range ts {
		header[t.Name] = map[string]any{"dtype": t.DType, "shape": t.Shape, "data_offsets": []int64{off, off + int64(len(t.Data))}}
		off += int64(len(t.Data))
	}
	hb, err := json.Marshal(header)
	if err != nil {
		return fmt.Errorf("weights.WriteFile: %w", err)
	}
	for len(hb)%8 != 0 {
		hb = append(hb, ' ')
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(hb)))
	out = append(out, hb...)
	for _, t := range ts {
		out = append(out, t.Data...)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		return fmt.Errorf("weights.WriteFile: %w", err)
	}
	return nil
}
