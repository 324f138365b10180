package jsonfast

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// checkFloat32 reads s (followed by a comma, as in an array) and compares
// the value and the reader's position with strconv.ParseFloat(s, 32).
func checkFloat32(t *testing.T, s string) {
	t.Helper()
	r := NewReader([]byte(s + ","))
	got, err := r.Float32()
	want, werr := strconv.ParseFloat(s, 32)
	if werr != nil {
		if err == nil {
			t.Errorf("Float32(%q) = %v, want an error (%v)", s, got, werr)
		}
		return
	}
	if err != nil || math.Float32bits(got) != math.Float32bits(float32(want)) || r.Pos() != len(s) {
		t.Errorf("Float32(%q) = %v (bits %#x), %v, at %d; want %v (bits %#x) at %d", s, got, math.Float32bits(got), err, r.Pos(),
			float32(want), math.Float32bits(float32(want)), len(s))
	}
}

// TestFloat32MatchesStrconv: the fast path rounds as strconv does, on
// hand-picked cases (float32 rounding boundaries, exponents, the edges of
// float32's range) and on random logprob-like numbers in the forms servers
// write them: float32 shortest (serve-sim), float64 shortest (vLLM's
// Python floats) and random digit strings.
func TestFloat32MatchesStrconv(t *testing.T) {
	for _, s := range []string{
		"0", "-0", "0.0", "-0.0", "1", "-1", "0.5", "-1.2345678", "-0.00012345678", "-2.3841855067985307",
		"16777217", "16777219", "-16777217.0", "33554434", "33554438", "16777216.000000001", "16777216.99999999",
		"1e-3", "-1E+2", "-3.0517578125e-05", "1.5e-45", "1e-46", "1e-38", "1.1754942e-38", "1.1754944e-38",
		"3.4028235e+38", "340282356779733661637539395458142568447", "3.4028236e38", "1e39",
		"9999999999999999999", "99999999999999999999", "0.0000000000000000001", "123456789.0123456789",
		"170141173319264429905852091742258462720", "0.1", "0.2", "0.3", "-0.7", "-100.25",
	} {
		checkFloat32(t, s)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		f32 := -rng.ExpFloat64() * math.Pow(10, float64(rng.IntN(8)-4))
		checkFloat32(t, strconv.FormatFloat(f32, 'f', -1, 32))
		checkFloat32(t, strconv.FormatFloat(f32, 'g', -1, 64))
		checkFloat32(t, strconv.FormatFloat(f32, 'f', -1, 64))
		checkFloat32(t, strconv.FormatFloat(f32, 'f', rng.IntN(19), 64))
		// a float32 rounding boundary, to as many digits as fit
		mid := float64(float32(f32)) + math.Abs(float64(math.Nextafter32(float32(f32), 0))-float64(float32(f32)))/2
		checkFloat32(t, strconv.FormatFloat(mid, 'f', -1, 64))
		checkFloat32(t, strconv.FormatFloat(mid, 'g', 19, 64))
		checkFloat32(t, strconv.FormatFloat(mid, 'g', 17, 64))
	}
}

// FuzzFloat32: any input reads as strconv reads the same number.
func FuzzFloat32(f *testing.F) {
	for _, s := range []string{"-1.2345678", "16777217", "0.1", "-0", "1e5", "01", "-", "1.", ".5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r := NewReader([]byte(s + "]"))
		got, err := r.Float32()
		if err != nil {
			return
		}
		num := strings.TrimLeft(s[:r.Pos()], " \t\r\n")
		want, werr := strconv.ParseFloat(num, 32)
		if werr != nil || math.Float32bits(got) != math.Float32bits(float32(want)) {
			t.Errorf("Float32(%q) = %v, read %q; strconv: %v, %v", s, got, num, float32(want), werr)
		}
	})
}

func BenchmarkFloat32(b *testing.B) {
	in := []byte("[-1.2345678,-0.00012345678,-12.345678,-2.3841855067985307,-0.5,-0.0012893241]")
	var sink float32
	for b.Loop() {
		r := NewReader(in)
		_ = r.Array(func(int) error {
			v, err := r.Float32()
			sink += v
			return err
		})
	}
	_ = sink
}
