package recon

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"forge/lut"
	"forge/tensor"
)

// randomLUT builds a random quantized lut.Matrix of format f, out×in, with
// rank-r factors and, if rot, a Hadamard rotation: codebook values in
// [−1, 1], scales in [0.5, 1.5], factors in [−0.1, 0.1], all fp16.
func randomLUT(t *testing.T, rng *rand.Rand, f lut.Format, out, in, r int, rot bool) *lut.Matrix {
	t.Helper()
	h := func(n int, lo, hi float64) []uint16 {
		v := make([]uint16, n)
		for i := range v {
			v[i] = tensor.F32ToF16(float32(lo + (hi-lo)*rng.Float64()))
		}
		return v
	}
	var p lut.Parts
	rows := f.IndexRows(out)
	codes := make([]uint8, rows*in)
	for i := range codes {
		if f.Kind == lut.Int8 {
			codes[i] = uint8(int8(rng.IntN(255) - 127))
		} else {
			codes[i] = uint8(rng.IntN(f.Entries()))
		}
	}
	p.Index = make([]byte, lut.PackedLen(len(codes), f.Bits))
	lut.Pack(p.Index, codes, f.Bits)
	if f.Kind != lut.Int8 {
		p.LUT = h(f.Groups(out)*f.Entries()*f.Dim, -1, 1)
	}
	sc := 1.0
	if f.Kind == lut.Int8 {
		sc = 1.0 / 127
	}
	p.Scale = h(out, 0.5*sc, 1.5*sc)
	if r > 0 {
		p.LowRankA, p.LowRankB = h(out*r, -0.1, 0.1), h(r*in, -0.1, 0.1)
	}
	if rot {
		p.Rotation = lut.NewHadamard(in, 7)
	}
	m, err := lut.New(f, out, in, p)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

var testFormats = []struct {
	name string
	f    lut.Format
}{
	{"LUT4", lut.LUT4},
	{"LUT3 g4", lut.LUTFormat(3, 4)},
	{"vector 2x16", lut.Vec2x16},
	{"INT8", lut.INT8},
}

// TestMatrixIsTheLUTProduct checks that the trainable twin of a lut.Matrix
// computes its product (rotation and factors included) and that exporting
// the untouched parameters gives back the stored arrays bit for bit.
func TestMatrixIsTheLUTProduct(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const out, in, T = 12, 32, 5
	for _, tc := range testFormats {
		for _, rot := range []bool{false, true} {
			lm := randomLUT(t, rng, tc.f, out, in, 2, rot)
			m, err := NewMatrix(lm)
			if err != nil {
				t.Fatal(err)
			}
			x := tensor.New(T, in)
			x64 := fdRand(rng, T*in, 1)
			for i, v := range x64 {
				x.Data[i] = float32(v)
				x64[i] = float64(x.Data[i])
			}
			want := tensor.New(T, out)
			lm.Mul(want, x)
			got := make([]float64, T*out)
			m.Forward(got, x64, T)
			// The lut kernels run in float32 (products of fp16 values exact,
			// sums rounded): ~1e-6 of the row's magnitude, here ≤ 1e-4 absolute
			// for outputs of size ~√32·|x|·|w| ≈ 5.
			for i, v := range got {
				if math.Abs(v-float64(want.Data[i])) > 1e-4 {
					t.Fatalf("%s rot=%v: y[%d] = %v, lut.Matrix gives %v", tc.name, rot, i, v, want.Data[i])
				}
			}
			if err := m.Round(); err != nil {
				t.Fatal(err)
			}
			ex, err := m.Export()
			if err != nil {
				t.Fatal(err)
			}
			a, b := lm.Parts(), ex.Parts()
			for _, pair := range [][2][]uint16{{a.LUT, b.LUT}, {a.Scale, b.Scale}, {a.LowRankA, b.LowRankA}, {a.LowRankB, b.LowRankB}} {
				if !slices.Equal(pair[0], pair[1]) {
					t.Fatalf("%s rot=%v: an exported array differs from the stored one", tc.name, rot)
				}
			}
		}
	}
}

// TestMatrixGradients checks dL/dθ of L = Σ y⊙r for every parameter of
// the trainable Matrix (codebook values, log-scales, both factors) and
// dL/dx against central differences in float64. L is a polynomial of
// degree ≤ 2 in each parameter but the log-scale (exp), so the central
// difference is exact up to rounding for the others. With step 1e-5 the
// rounding is ~ε₆₄·|L|/h ≈ 1e-10 absolute; relative to max(|g|, 1e-2 of
// the largest gradient) that stays below 1e-6, the bound asserted.
func TestMatrixGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const out, in, T = 8, 16, 3
	for _, tc := range testFormats {
		lm := randomLUT(t, rng, tc.f, out, in, 2, true)
		m, err := NewMatrix(lm)
		if err != nil {
			t.Fatal(err)
		}
		for i := range m.LogScale {
			m.LogScale[i] = 0.1 * (2*rng.Float64() - 1)
		}
		m.Refresh()
		x := fdRand(rng, T*in, 1)
		r := fdRand(rng, T*out, 1)
		y := make([]float64, T*out)
		f := func() float64 {
			m.Refresh()
			m.Forward(y, x, T)
			return fdDot(y, r)
		}
		f()
		m.ZeroGrads()
		dx := make([]float64, T*in)
		m.Backward(dx, x, r, T)
		m.Grads()
		for _, p := range []struct {
			name string
			v, g []float64
		}{{"codebook", m.Book, m.GBook}, {"log-scale", m.LogScale, m.GLogScale}, {"A", m.A, m.GA}, {"B", m.B, m.GB}, {"x", x, dx}} {
			floor := 1e-2 * fdMaxAbs(p.g)
			for _, i := range fdSample(rng, len(p.v), 40) {
				num := fdCentral(f, p.v, i, 1e-5)
				if e := fdErr(p.g[i], num, floor); e > 1e-6 {
					t.Errorf("%s: d/d%s[%d] = %.10g, finite difference %.10g (rel %.2g)", tc.name, p.name, i, p.g[i], num, e)
				}
			}
		}
	}
}
