package lut

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"

	"forge/tensor"
)

var _ Rotation = (*Hadamard)(nil)

// hdUnit is the unit roundoff of float32, 2⁻²⁴.
const hdUnit = 0x1p-24

// sylvester returns H_n [n][n] built by the recursion H₁ = [1],
// H₂ₙ = [[Hₙ, Hₙ], [Hₙ, −Hₙ]] (n a power of two).
func sylvester(n int) [][]float64 {
	h := [][]float64{{1}}
	for len(h) < n {
		m := len(h)
		g := make([][]float64, 2*m)
		for i := range g {
			g[i] = make([]float64, 2*m)
		}
		for i := range m {
			for j := range m {
				v := h[i][j]
				g[i][j], g[i][j+m], g[i+m][j], g[i+m][j+m] = v, v, v, -v
			}
		}
		h = g
	}
	return h
}

// hadamardSigns derives d_j from the seed exactly as the Hadamard doc
// comment states, written independently of NewHadamard.
func hadamardSigns(width int, seed uint64) []float64 {
	g := rand.New(rand.NewPCG(seed, 0x484144414D415244))
	d := make([]float64, width)
	var w uint64
	for j := range d {
		if j%64 == 0 {
			w = g.Uint64()
		}
		d[j] = 1 - 2*float64(w>>(j%64)&1)
	}
	return d
}

// hadamardRef is Rotate's reference twin: it builds each block
// M_b = D_b·H_n/√n explicitly in float64 from the definitions and returns
// x·M [T][width].
func hadamardRef(width int, seed uint64, x *tensor.Matrix) [][]float64 {
	return hadamardRefT(width, seed, x, false)
}

// hadamardRefT is hadamardRef, or with transpose x·Mᵀ (M_b[k][i] in place
// of M_b[i][k]): the reference twin of RotateTranspose as well.
func hadamardRefT(width int, seed uint64, x *tensor.Matrix, transpose bool) [][]float64 {
	return hadamardRefD(hadamardSigns(width, seed), x, transpose)
}

// hadamardRefD is hadamardRefT for the signs d [width].
func hadamardRefD(d []float64, x *tensor.Matrix, transpose bool) [][]float64 {
	width := len(d)
	n := HadamardBlock(width)
	hn := sylvester(n)
	inv := 1 / math.Sqrt(float64(n))
	y := make([][]float64, x.Rows)
	for t := range y {
		y[t] = make([]float64, width)
		row := x.Row(t)
		for b := 0; b < width; b += n {
			for k := range n { // y[b+k] = Σ_i x[b+i]·M_b[i][k], M_b[i][k] = d[b+i]·H[i][k]/√n
				var s float64
				for i := range n {
					if transpose {
						s += float64(row[b+i]) * d[b+k] * hn[k][i] * inv
					} else {
						s += float64(row[b+i]) * d[b+i] * hn[i][k] * inv
					}
				}
				y[t][b+k] = s
			}
		}
	}
	return y
}

func hdNormal(rows, cols int, seed uint64) *tensor.Matrix {
	r := rand.New(rand.NewPCG(seed, 0x4ad))
	m := tensor.New(rows, cols)
	for i := range m.Data {
		m.Data[i] = float32(r.NormFloat64())
	}
	return m
}

func hdNorm(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

func TestHadamardBlock(t *testing.T) {
	for _, c := range []struct{ width, block int }{
		{4096, 1024}, {5120, 1024}, {5632, 512}, {17408, 1024}, {96, 32},
		{1024, 1024}, {2048, 1024}, {6, 2}, {1, 1}, {7, 1}, {248320, 512},
	} {
		if got := HadamardBlock(c.width); got != c.block {
			t.Errorf("HadamardBlock(%d) = %d, want %d", c.width, got, c.block)
		}
		h := NewHadamard(c.width, 1)
		if h.Width() != c.width || h.Block() != c.block || h.Seed() != 1 {
			t.Errorf("NewHadamard(%d, 1): width %d block %d seed %d", c.width, h.Width(), h.Block(), h.Seed())
		}
	}
}

// TestHadamardRef compares Rotate with the explicit float64 product. Each
// butterfly stage rounds every value once (relative 2⁻²⁴) and the later
// stages carry that error with the same gain (√2 per stage) as the signal,
// so each stage adds at most u·‖x‖ to the error of a row; the sign-scale
// product and the rounding of 1/√n add two more: (log₂n + 2)·u·‖x‖.
func TestHadamardRef(t *testing.T) {
	for _, width := range []int{1, 2, 6, 7, 8, 12, 96, 160, 2048, 5632} {
		x := hdNormal(3, width, uint64(width))
		h := NewHadamard(width, 1000+uint64(width))
		got := tensor.New(3, width)
		h.Rotate(got, x)
		want := hadamardRef(width, 1000+uint64(width), x)
		tol := float64(bits.Len(uint(h.Block()))+1) * hdUnit
		for r := range want {
			var e float64
			for j, w := range want[r] {
				e += (float64(got.Row(r)[j]) - w) * (float64(got.Row(r)[j]) - w)
			}
			if rel := math.Sqrt(e) / hdNorm(x.Row(r)); rel > tol {
				t.Errorf("width %d row %d: ‖Rotate − ref‖/‖x‖ = %.3g > %.3g", width, r, rel, tol)
			}
		}
	}
}

// TestHadamardOrthogonal checks M·Mᵀ = I: in float64 on the explicit
// matrix (exact up to float64 rounding), and on Rotate's output by undoing
// it (blocks times H_n/√n, then the signs) with the same (log₂n + 2)·u
// bound per direction.
func TestHadamardOrthogonal(t *testing.T) {
	const width = 96
	id := tensor.New(width, width)
	for j := range width {
		id.Data[j*width+j] = 1
	}
	m := hadamardRef(width, 7, id) // row i of I·M is row i of M
	for i := range width {
		for k := range width {
			var s float64
			for j := range width {
				s += m[i][j] * m[k][j]
			}
			if want := float64(hdBool(i == k)); math.Abs(s-want) > 1e-14 {
				t.Fatalf("(M·Mᵀ)[%d][%d] = %v", i, k, s)
			}
		}
	}
	for _, width := range []int{96, 5120, 5632} {
		h := NewHadamard(width, 3)
		x := hdNormal(2, width, 5)
		y := tensor.New(2, width)
		h.Rotate(y, x)
		d := hadamardSigns(width, 3)
		n := h.Block()
		inv := float32(1 / math.Sqrt(float64(n)))
		ones := make([]float32, n)
		for j := range ones {
			ones[j] = 1
		}
		tol := 2 * float64(bits.Len(uint(n))+1) * hdUnit
		for r := range 2 {
			back := append([]float32(nil), y.Row(r)...) // y·Mᵀ = (y_b·H_n/√n)·D_b per block
			for b := 0; b < width; b += n {
				fwhtScaled(back[b:b+n], back[b:b+n], ones)
			}
			var e float64
			for j, v := range back {
				diff := float64(v*inv)*d[j] - float64(x.Row(r)[j])
				e += diff * diff
			}
			if rel := math.Sqrt(e) / hdNorm(x.Row(r)); rel > tol {
				t.Errorf("width %d row %d: ‖x·M·Mᵀ − x‖/‖x‖ = %.3g > %.3g", width, r, rel, tol)
			}
		}
	}
}

func hdBool(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestHadamardInvariance checks the property the quantizer relies on:
// (x·M)·(W·M)ᵀ = x·Wᵀ for a float layer. Every output is compared with
// the float64 product, relative to ‖x‖·‖w_o‖ (an output can cancel to
// near zero, so relative to itself is meaningless); the requirement is
// 1e-5, and two float32 rotations plus a float64 dot product leave about
// 2·(log₂n + 2)·u ≈ 1.4e-6 in the worst case.
func TestHadamardInvariance(t *testing.T) {
	for _, width := range []int{96, 5120, 5632} {
		t.Run(fmt.Sprint(width), func(t *testing.T) {
			const out, T = 37, 4
			w := hdNormal(out, width, 11)
			x := hdNormal(T, width, 12)
			h := NewHadamard(width, 1000+uint64(width))
			wr := tensor.New(out, width)
			copy(wr.Data, w.Data)
			h.RotateWeights(wr)
			xr := tensor.New(T, width)
			h.Rotate(xr, x)
			var worst float64
			for ti := range T {
				for o := range out {
					var ref, rot float64
					for j := range width {
						ref += float64(x.Row(ti)[j]) * float64(w.Row(o)[j])
						rot += float64(xr.Row(ti)[j]) * float64(wr.Row(o)[j])
					}
					worst = max(worst, math.Abs(rot-ref)/(hdNorm(x.Row(ti))*hdNorm(w.Row(o))))
				}
			}
			if worst > 1e-5 {
				t.Errorf("max |x'·w'ᵀ − x·wᵀ|/(‖x‖‖w‖) = %.3g > 1e-5", worst)
			}
		})
	}
}

func TestHadamardSeeds(t *testing.T) {
	const width = 5120
	a, b, a2 := NewHadamard(width, 1000), NewHadamard(width, 2000), NewHadamard(width, 1000)
	want := hadamardSigns(width, 1000)
	diff, neg := 0, 0
	for j := range width {
		if a.scale[j] != a2.scale[j] {
			t.Fatalf("same seed, column %d: %v vs %v", j, a.scale[j], a2.scale[j])
		}
		if math.Signbit(float64(a.scale[j])) != (want[j] < 0) {
			t.Fatalf("column %d: sign differs from the documented derivation", j)
		}
		diff += hdBool(a.scale[j] != b.scale[j])
		neg += hdBool(a.scale[j] < 0)
	}
	// Independent fair signs: both fractions are ½ ± 0.007 (one standard
	// deviation at 5120 columns); 0.45–0.55 is a 7σ band.
	for name, c := range map[string]int{"differing between seeds": diff, "negative": neg} {
		if f := float64(c) / width; f < 0.45 || f > 0.55 {
			t.Errorf("fraction of signs %s = %.3f", name, f)
		}
	}
}

// TestHadamardParallel checks that a batch large enough to run on several
// cores gives each row bit for bit what a single-row call gives.
func TestHadamardParallel(t *testing.T) {
	const width, T = 5632, 64
	h := NewHadamard(width, 9)
	x := hdNormal(T, width, 13)
	all := tensor.New(T, width)
	h.Rotate(all, x)
	one := tensor.New(1, width)
	for r := range T {
		h.Rotate(one, tensor.FromSlice(1, width, x.Row(r)))
		for j, v := range one.Data {
			if all.Row(r)[j] != v {
				t.Fatalf("row %d col %d: batch %v, single %v", r, j, all.Row(r)[j], v)
			}
		}
	}
	inPlace := tensor.New(T, width)
	copy(inPlace.Data, x.Data)
	h.Rotate(inPlace, inPlace)
	for i, v := range inPlace.Data {
		if v != all.Data[i] {
			t.Fatalf("in place differs at %d", i)
		}
	}
}

func TestHadamardAllocs(t *testing.T) {
	h := NewHadamard(17408, 1)
	x, dst := hdNormal(1, 17408, 1), tensor.New(1, 17408)
	if n := testing.AllocsPerRun(50, func() { h.Rotate(dst, x) }); n != 0 {
		t.Errorf("Rotate T=1 allocates %v times", n)
	}
}

func TestHadamardShapePanics(t *testing.T) {
	h := NewHadamard(64, 1)
	for name, f := range map[string]func(){
		"width": func() { h.Rotate(tensor.New(1, 64), tensor.New(1, 32)) },
		"rows":  func() { h.Rotate(tensor.New(2, 64), tensor.New(1, 64)) },
		"zero":  func() { NewHadamard(0, 1) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

// BenchmarkHadamard times one decode-step rotation (T = 1); the GB/s is
// of x read (width·4 bytes).
func BenchmarkHadamard(b *testing.B) {
	for _, width := range []int{5120, 17408} {
		b.Run(fmt.Sprint(width), func(b *testing.B) {
			h := NewHadamard(width, 1)
			x, dst := hdNormal(1, width, 1), tensor.New(1, width)
			b.SetBytes(int64(4 * width))
			for b.Loop() {
				h.Rotate(dst, x)
			}
		})
	}
}
