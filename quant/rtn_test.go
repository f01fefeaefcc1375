package quant

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"forge/lut"
	"forge/tensor"
)

// Nearest is a Quantizer.
var _ Quantizer = Nearest{}

// gaussian returns an out×in matrix of N(0, σ²) values, σ varying by row
// when rowScale (so that per-channel scales matter), from seed.
func gaussian(out, in int, rowScale bool, seed uint64) *tensor.Matrix {
	r := rand.New(rand.NewPCG(seed, 0x9a55))
	w := tensor.New(out, in)
	for o := range out {
		sigma := 1.0
		if rowScale {
			sigma = math.Exp(r.NormFloat64())
		}
		for j := range in {
			w.Data[o*in+j] = float32(sigma * r.NormFloat64())
		}
	}
	return w
}

func mustFormat(t testing.TB, s string) lut.Format {
	t.Helper()
	f, err := lut.ParseFormat(s)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func dequant(m *lut.Matrix) *tensor.Matrix {
	out, in := m.Dims()
	w := tensor.New(out, in)
	m.Dequantize(w)
	return w
}

var allFormats = []string{
	"LUT1 per-tensor + pcs", "LUT2 per-tensor + pcs", "LUT3 per-tensor + pcs",
	"LUT4 per-tensor + pcs", "LUT6 per-tensor + pcs", "LUT8 per-tensor + pcs",
	"LUT4 g16 + pcs", "LUT2 g5 + pcs", "vector 2x16 + pcs", "vector 2x4 + pcs",
	"vector 4x16 + pcs", "vector 2x16 g8 + pcs", "INT8 per-channel", "bf16", "fp16",
}

// TestRTNRoundTrip quantizes into every format and checks, from the stored
// arrays alone: packed codes unpack to codes that pack back to the same
// bytes; every dequantized weight is exactly fp16(scale)·fp16(entry) (or
// scale·code for INT8, the rounded weight for bf16/fp16); each weight's
// code is its nearest entry; New rebuilds an identical matrix from the
// arrays; and the byte accounting equals the sum of the stored arrays.
func TestRTNRoundTrip(t *testing.T) {
	w := gaussian(48, 40, true, 1)
	for _, name := range allFormats {
		f := mustFormat(t, name)
		m, err := RTN(w, f, Options{Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		p := m.Parts()
		wq := dequant(m)
		sz := m.Size()
		stored := int64(len(p.Index)) + 2*int64(len(p.LUT)+len(p.Scale)+len(p.Weight))
		if sz.Total() != stored || m.Bytes() != stored {
			t.Errorf("%s: Size %+v = %d, Bytes %d, stored arrays %d", name, sz, sz.Total(), m.Bytes(), stored)
		}
		m2, err := lut.New(f, 48, 40, p)
		if err != nil {
			t.Fatalf("%s: rebuild: %v", name, err)
		}
		if !slices.Equal(dequant(m2).Data, wq.Data) {
			t.Errorf("%s: rebuilt matrix dequantizes differently", name)
		}
		switch f.Kind {
		case lut.BF16, lut.FP16:
			for i, v := range w.Data {
				want := tensor.BF16ToF32(tensor.F32ToBF16(v))
				if f.Kind == lut.FP16 {
					want = tensor.F16ToF32(tensor.F32ToF16(v))
				}
				if wq.Data[i] != want {
					t.Fatalf("%s: weight %d = %v, want %v", name, i, wq.Data[i], want)
				}
			}
			continue
		}
		codes := make([]uint8, f.IndexRows(48)*40)
		m.Codes(codes)
		repacked := make([]byte, len(p.Index))
		lut.Pack(repacked, codes, f.Bits)
		if !slices.Equal(repacked, p.Index) {
			t.Errorf("%s: codes do not pack back to the stored bytes", name)
		}
		checkExactAndNearest(t, name, f, w, wq, codes, p)
	}
}

// checkExactAndNearest checks Ŵ = s·entry exactly and that each code is
// the nearest entry to the normalized weight (vector) it codes.
func checkExactAndNearest(t *testing.T, name string, f lut.Format, w, wq *tensor.Matrix, codes []uint8, p lut.Parts) {
	t.Helper()
	out, in := w.Rows, w.Cols
	d, k := f.Dim, f.Entries()
	for o := range out {
		s := tensor.F16ToF32(p.Scale[o])
		for j := range in {
			var want float32
			c := codes[(o/d)*in+j]
			if f.Kind == lut.Int8 {
				want = s * float32(int8(c))
				if q := math.RoundToEven(float64(w.Data[o*in+j]) / float64(s)); math.Abs(q) <= 127 && float64(int8(c)) != q {
					t.Fatalf("%s: [%d][%d] code %d, want %v", name, o, j, int8(c), q)
				}
			} else {
				g := 0
				if f.Group > 0 {
					g = o / f.Group
				}
				want = s * tensor.F16ToF32(p.LUT[(g*k+int(c))*d+o%d])
			}
			if wq.Data[o*in+j] != want {
				t.Fatalf("%s: Ŵ[%d][%d] = %v, want s·entry = %v", name, o, j, wq.Data[o*in+j], want)
			}
		}
	}
	if f.Kind == lut.Int8 {
		return
	}
	// Nearest: no entry of the row's codebook is strictly closer.
	for r := range f.IndexRows(out) {
		g := 0
		if f.Group > 0 {
			g = r * d / f.Group
		}
		for j := range in {
			dist := func(c int) float64 {
				var e float64
				for t := range d {
					o := r*d + t
					x := float64(w.Data[o*in+j]) / float64(tensor.F16ToF32(p.Scale[o]))
					e += math.Pow(x-float64(tensor.F16ToF32(p.LUT[(g*k+c)*d+t])), 2)
				}
				return e
			}
			got := dist(int(codes[r*in+j]))
			for c := range k {
				if dist(c) < got {
					t.Fatalf("%s: vector (%d, %d) coded %d at %g; entry %d is at %g", name, r, j, codes[r*in+j], got, c, dist(c))
				}
			}
		}
	}
}

// TestPCSAndINT8Scales checks the scale formulas of docs/quantization.md §1 on
// hand-made rows, including an all-zero row (scale 1) and clipping.
func TestPCSAndINT8Scales(t *testing.T) {
	w := tensor.FromSlice(3, 4, []float32{
		3, -4, 0, 0, // mean square 25/4: pcs 2.5; max 4: int8 scale 4/127
		0, 0, 0, 0, // zero row: both scales 1
		1e-3, 2e-3, -1e-3, 0,
	})
	pcs, err := PCS(w)
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{2.5, 1, math.Sqrt(6e-6 / 4)}
	for o, h := range pcs {
		if got, w := tensor.F16ToF32(h), tensor.F16ToF32(tensor.F32ToF16(float32(want[o]))); got != w {
			t.Errorf("pcs[%d] = %v, want %v", o, got, w)
		}
	}
	m, err := RTN(w, lut.INT8, Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := m.Parts()
	if s := tensor.F16ToF32(p.Scale[0]); s != tensor.F16ToF32(tensor.F32ToF16(4.0/127)) {
		t.Errorf("int8 scale[0] = %v", s)
	}
	if s := tensor.F16ToF32(p.Scale[1]); s != 1 {
		t.Errorf("int8 scale of a zero row = %v, want 1", s)
	}
	for j, c := range p.Index[:4] {
		if int8(c) == -128 { // int8 holds −128 … 127; the codes stay in [−127, 127]
			t.Errorf("code %d = %d out of range", j, int8(c))
		}
	}
	if int8(p.Index[1]) != -127 { // −4 / fp16(4/127) rounds to −127 (or beyond, clipped)
		t.Errorf("code of the row maximum = %d, want -127", int8(p.Index[1]))
	}
}

// TestRTNDeterministic: the same seed gives identical arrays; the result
// does not depend on GOMAXPROCS either.
func TestRTNDeterministic(t *testing.T) {
	w := gaussian(64, 96, true, 2)
	for _, name := range []string{"vector 2x16 + pcs", "LUT3 g16 + pcs"} {
		f := mustFormat(t, name)
		opt := Options{Seed: 11, MaxSamples: 2000}
		a, err := RTN(w, f, opt)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := RTN(w, f, opt)
		if !slices.Equal(a.Parts().LUT, b.Parts().LUT) || !slices.Equal(a.Parts().Index, b.Parts().Index) {
			t.Errorf("%s: same seed, different result", name)
		}
	}
}

func TestRTNErrors(t *testing.T) {
	w := gaussian(6, 8, false, 1)
	nan := gaussian(6, 8, false, 1)
	nan.Data[13] = float32(math.NaN())
	big := gaussian(6, 8, false, 1)
	big.Data[0] = 3e38 // pcs scale overflows fp16
	cases := []struct {
		name string
		w    *tensor.Matrix
		f    string
		opt  Options
		is   error
	}{
		{"vector-3-rows", gaussian(4, 8, false, 1), "vector 3x16 + pcs", Options{}, lut.ErrFormat},
		{"nan", nan, "LUT4 per-tensor + pcs", Options{}, ErrInput},
		{"overflow", big, "LUT4 per-tensor + pcs", Options{}, ErrInput},
		{"importance-length", w, "LUT4 per-tensor + pcs", Options{Importance: []float64{1, 2}}, ErrInput},
		{"importance-negative", w, "LUT4 per-tensor + pcs", Options{Importance: []float64{1, 1, 1, -1, 1, 1, 1, 1}}, ErrInput},
		{"importance-zero", w, "vector 2x16 + pcs", Options{Importance: make([]float64, 8)}, ErrInput},
	}
	for _, c := range cases {
		_, err := RTN(c.w, mustFormat(t, c.f), c.opt)
		if !errors.Is(err, c.is) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.is)
		}
	}
	if _, err := (Nearest{Format: lut.LUT4, AW: true}).Quantize(w, nil); !errors.Is(err, ErrInput) {
		t.Errorf("AW without a Hessian: err = %v", err)
	}
}
