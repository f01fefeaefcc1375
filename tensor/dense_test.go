package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// Dense meets model.Linear structurally (tensor cannot import model).
var _ interface {
	Mul(dst, x *Matrix)
	Dims() (out, in int)
} = (*Dense)(nil)

// mulRef is Dense.Mul's reference twin: the plain triple loop
// dst[t][o] = Σ_j x[t][j]·W[o][j], accumulated in float64 with W widened
// through Row. It also returns bound[t][o] = Σ_j |x[t][j]|·|W[o][j]|, the
// scale that float32 rounding errors are measured against.
func mulRef(d *Dense, x *Matrix) (dst, bound []float64) {
	out, in := d.Dims()
	dst = make([]float64, x.Rows*out)   // [T][out]
	bound = make([]float64, x.Rows*out) // [T][out]
	w := make([]float32, in)
	for o := range out {
		d.Row(o, w)
		for t := range x.Rows {
			var s, b float64
			for j, xj := range x.Row(t) {
				s += float64(xj) * float64(w[j])
				b += math.Abs(float64(xj) * float64(w[j]))
			}
			dst[t*out+o], bound[t*out+o] = s, b
		}
	}
	return dst, bound
}

// denseCase builds a random out×in Dense of the named dtype and a random
// x [T, in], from seed. The weight slice is padded with NaNs past its end so
// that a kernel reading beyond a row's last column gives NaN.
func denseCase(dt string, out, in, T int, seed uint64) (*Dense, *Matrix) {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	x := New(T, in)
	for i := range x.Data {
		x.Data[i] = float32(r.NormFloat64())
	}
	wf := func() float32 { return float32(r.NormFloat64() * math.Exp(r.NormFloat64())) }
	if dt == "f32" {
		w := make([]float32, out*in+64)
		for i := range w {
			w[i] = wf()
		}
		for i := out * in; i < len(w); i++ {
			w[i] = float32(math.NaN())
		}
		return DenseF32(out, in, w[:out*in]), x
	}
	w := make([]uint16, out*in+64)
	for i := range w {
		if i >= out*in {
			w[i] = 0x7fc0 // a NaN both as bf16 and as f16
		} else if dt == "bf16" {
			w[i] = F32ToBF16(wf())
		} else {
			w[i] = F32ToF16(wf())
		}
	}
	if dt == "bf16" {
		return DenseBF16(out, in, w[:out*in]), x
	}
	return DenseF16(out, in, w[:out*in]), x
}

// checkMul compares d.Mul with mulRef. Tolerance: a float32 dot product of
// n terms carries a rounding error bounded by n·ε·Σ|x||w| (ε = 2⁻²⁴) in the
// worst case and behaving like √n·ε·Σ|x||w| for these random, independent
// roundings; blocked FMA summation (lanes, tiles) only lowers it. We allow
// 4·√(n+1)·ε·Σ|x||w|, plus a tiny absolute term for Σ|x||w| = 0. The
// weights themselves are exact (widening bf16/f16 is exact), so nothing
// else separates the two results.
func checkMul(t testing.TB, d *Dense, x *Matrix) {
	t.Helper()
	out, in := d.Dims()
	dst := New(x.Rows, out)
	for i := range dst.Data {
		dst.Data[i] = float32(math.NaN()) // Mul must overwrite every element
	}
	d.Mul(dst, x)
	want, bound := mulRef(d, x)
	const eps = 1.0 / (1 << 24)
	for i, w := range want {
		tol := 4*math.Sqrt(float64(in+1))*eps*bound[i] + 1e-30
		if got := float64(dst.Data[i]); !(math.Abs(got-w) <= tol) {
			t.Fatalf("%s (gemm from T=%d) %dx%d T=%d: dst[%d][%d] = %g, want %g ± %g",
				kern.name, kern.gemm.minT[d.dt], out, in, x.Rows, i/max(out, 1), i%max(out, 1), got, w, tol)
		}
	}
}

// mulPaths are the ways Mul can run a product: the dot-product kernels
// (mulRows) or the GEMM path (gemmRows), forced for every T by setting the
// kernel set's gemm threshold.
var mulPaths = []struct {
	name string
	minT int
}{{"dot", 1 << 30}, {"gemm", 1}}

// forEachKernel calls fn with each kernel set this build and CPU offer in
// use, once per path (mulPaths), and restores the defaults afterwards.
func forEachKernel(fn func(name string)) {
	saved := kern
	defer func() { kern = saved }()
	for _, ks := range kernelSets() {
		kern = ks
		minT := ks.gemm.minT
		for _, p := range mulPaths {
			ks.gemm.minT = [3]int{p.minT, p.minT, p.minT}
			fn(ks.name + "/" + p.name)
		}
		ks.gemm.minT = minT
	}
}

// forEachKernelSet runs fn as a subtest with each kernel set and path.
func forEachKernelSet(t *testing.T, fn func(t *testing.T)) {
	forEachKernel(func(name string) { t.Run(name, fn) })
}

var dtypes = []string{"f32", "bf16", "f16"}

func TestDenseMulShapes(t *testing.T) {
	cases := []struct {
		name       string
		out, in, T int
	}{
		{"1x1", 1, 1, 1},
		{"vector-tail", 5, 17, 3},
		{"lanes", 8, 64, 4},
		{"odd", 13, 33, 7},
		{"parallel", 70, 300, 17},
		{"tall", 131, 96, 1},
		{"column-tiles", 9, 4000, 17},
		{"row-tiles", 6, 45, 70},
		{"panel-edge", 37, 75, 19},     // out not a multiple of any panel width, T mod 4 = 3
		{"panels", 100, 130, 22},       // several panels per worker, T mod 4 = 2
		{"narrow-in", 70, 7, 65},       // in < 8: no whole 8×8 pack blocks
		{"column-blocks", 33, 4100, 6}, // in > gemmKC: partial sums added into dst
		{"prefill", 96, 256, 129},      // T mod 4 = 1, panels of every width whole
		{"empty-in", 3, 0, 2},
		{"empty-out", 0, 5, 2},
		{"empty-T", 4, 5, 0},
	}
	forEachKernelSet(t, func(t *testing.T) {
		for _, c := range cases {
			for _, dt := range dtypes {
				d, x := denseCase(dt, c.out, c.in, c.T, 1)
				checkMul(t, d, x)
			}
		}
	})
}

func TestDenseMulRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	forEachKernelSet(t, func(t *testing.T) {
		for i := range 60 {
			out, in, T := 1+r.IntN(70), 1+r.IntN(300), 1+r.IntN(17)
			d, x := denseCase(dtypes[i%3], out, in, T, uint64(i))
			checkMul(t, d, x)
		}
	})
}

func FuzzDenseMul(f *testing.F) {
	f.Add(uint64(1), uint16(7), uint16(33), uint8(3), uint8(1))
	f.Add(uint64(2), uint16(64), uint16(256), uint8(17), uint8(0))
	f.Add(uint64(3), uint16(5), uint16(1000), uint8(1), uint8(2))
	f.Add(uint64(4), uint16(37), uint16(75), uint8(19), uint8(1))
	f.Add(uint64(5), uint16(33), uint16(2100), uint8(6), uint8(0))
	f.Fuzz(func(t *testing.T, seed uint64, out, in uint16, T, dt uint8) {
		d, x := denseCase(dtypes[int(dt)%3], int(out)%80, int(in)%2200, int(T)%40, seed)
		forEachKernel(func(string) { checkMul(t, d, x) })
	})
}

func TestDenseRowBytes(t *testing.T) {
	for _, dt := range dtypes {
		d, _ := denseCase(dt, 3, 21, 0, 7)
		row := make([]float32, 21)
		d.Row(2, row)
		for j, v := range row {
			var want float32
			switch dt {
			case "f32":
				want = d.w32[2*21+j]
			case "bf16":
				want = BF16ToF32(d.w16[2*21+j])
			case "f16":
				want = F16ToF32(d.w16[2*21+j])
			}
			if v != want {
				t.Errorf("%s: Row(2)[%d] = %v, want %v", dt, j, v, want)
			}
		}
		if want := int64(3 * 21 * map[string]int{"f32": 4, "bf16": 2, "f16": 2}[dt]); d.Bytes() != want {
			t.Errorf("%s: Bytes = %d, want %d", dt, d.Bytes(), want)
		}
	}
}

func TestDenseMulPanicsOnShape(t *testing.T) {
	d, x := denseCase("bf16", 4, 8, 2, 1)
	for name, dst := range map[string]*Matrix{"rows": New(3, 4), "cols": New(2, 5)} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s mismatch: no panic", name)
				}
			}()
			d.Mul(dst, x)
		}()
	}
}

// TestDenseMulNoAlloc checks that decode-, verify- and prefill-sized calls,
// split over the pool, allocate nothing.
func TestDenseMulNoAlloc(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items under the race detector")
	}
	for _, dt := range dtypes {
		for _, T := range []int{1, 8, 17, 64} {
			d, x := denseCase(dt, 512, 1024, T, 1)
			dst := New(T, 512)
			d.Mul(dst, x)
			if a := testing.AllocsPerRun(20, func() { d.Mul(dst, x) }); a != 0 {
				t.Errorf("%s T=%d: Mul allocates %v times per call", dt, T, a)
			}
		}
	}
}

// TestDenseMulConcurrent runs one Dense from several goroutines at once
// (Mul calls that find the pool busy run inline) and checks every result.
func TestDenseMulConcurrent(t *testing.T) {
	for _, T := range []int{5, 40} { // dot-product and GEMM paths
		testDenseMulConcurrent(t, T)
	}
}

func testDenseMulConcurrent(t *testing.T, T int) {
	d, x := denseCase("bf16", 130, 200, T, 3)
	want := New(T, 130)
	d.Mul(want, x)
	done := make(chan error)
	for g := range 4 {
		go func() {
			dst := New(T, 130)
			for range 20 {
				d.Mul(dst, x)
				for i := range dst.Data {
					if dst.Data[i] != want.Data[i] {
						done <- fmt.Errorf("T=%d goroutine %d: dst[%d] = %v, want %v", T, g, i, dst.Data[i], want.Data[i])
						return
					}
				}
			}
			done <- nil
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

func ExampleDense_Mul() {
	w := []uint16{F32ToBF16(1), F32ToBF16(2), F32ToBF16(-1), F32ToBF16(0.5)} // [2 out][2 in]
	d := DenseBF16(2, 2, w)
	x := FromSlice(1, 2, []float32{3, 4}) // [T=1][in=2]
	dst := New(1, 2)                      // [T=1][out=2]
	d.Mul(dst, x)
	fmt.Println(dst.Data)
	// Output: [11 -1]
}

// TestGEMMThresholds checks that every kernel set sends T ≥ tileT to the
// GEMM path, so that no Mul reads the weights more than once.
func TestGEMMThresholds(t *testing.T) {
	for _, ks := range kernelSets() {
		for dt, m := range ks.gemm.minT {
			if m < 2 || m > tileT {
				t.Errorf("%s: dtype %d: GEMM from T = %d, want 2 ≤ T ≤ %d", ks.name, dt, m, tileT)
			}
		}
	}
}

// TestDenseMulRows: MulRows over splits at multiples of 32 rows gives
// Mul's result bit for bit (decode, small-T and GEMM paths), an odd range
// gives the right values (to float32 rounding) and touches no other
// column, and a range outside W panics.
func TestDenseMulRows(t *testing.T) {
	shapes := []struct{ out, in, T int }{{70, 300, 1}, {131, 96, 1}, {37, 75, 3}, {100, 130, 22}, {96, 256, 129}}
	forEachKernelSet(t, func(t *testing.T) {
		for _, c := range shapes {
			for _, dt := range dtypes {
				d, x := denseCase(dt, c.out, c.in, c.T, 2)
				want := New(c.T, c.out)
				d.Mul(want, x)
				got := New(c.T, c.out)
				for lo, size := 0, 32; lo < c.out; lo, size = lo+size, size+32 {
					d.MulRows(got, x, lo, min(lo+size, c.out))
				}
				for i, w := range want.Data {
					if math.Float32bits(got.Data[i]) != math.Float32bits(w) {
						t.Fatalf("%s %dx%d T=%d: MulRows [%d][%d] = %v, Mul %v", dt, c.out, c.in, c.T, i/c.out, i%c.out, got.Data[i], w)
					}
				}
				for i := range got.Data {
					got.Data[i] = float32(math.NaN())
				}
				d.MulRows(got, x, 5, 9)
				ref, bound := mulRef(d, x)
				for i, v := range got.Data {
					o := i % c.out
					if o < 5 || o >= 9 {
						if v == v {
							t.Fatalf("%s: MulRows [5, 9) wrote column %d", dt, o)
						}
						continue
					}
					if tol := 1e-5*bound[i] + 1e-30; !(math.Abs(float64(v)-ref[i]) <= tol) {
						t.Fatalf("%s: MulRows [5, 9) column %d = %v, want %v ± %g", dt, o, v, ref[i], tol)
					}
				}
			}
		}
	})
	d, x := denseCase("bf16", 8, 16, 1, 3)
	defer func() {
		if recover() == nil {
			t.Error("MulRows past the last row did not panic")
		}
	}()
	d.MulRows(New(1, 8), x, 4, 9)
}

// TestDenseRowsExact: where RowsExact says so, a product of T rows gives
// each row the bits of its one-row product, with every kernel set this
// build and CPU offer, every dtype, widths with and without a tail of
// fewer than 16 columns, and output counts that leave the groups of eight
// rows incomplete; and it does say so for the vector kernels at
// forge-tiny's shapes.
func TestDenseRowsExact(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	saved := kern
	defer func() { kern = saved }()
	for _, ks := range kernelSets() {
		kern = ks
		checked := 0
		for _, dt := range []string{"f32", "bf16", "f16"} {
			for _, in := range []int{1, 7, 16, 33, 100, 256, 1000, 3000} {
				for _, out := range []int{1, 3, 8, 13, 40} {
					d := randDense(r, dt, out, in)
					for T := 2; T <= 17; T++ {
						if !d.RowsExact(T) {
							continue
						}
						checkRowsExact(t, r, ks.name+"/"+dt, d, T)
						checked++
					}
				}
			}
		}
		if d := randDense(r, "bf16", 768, 256); ks.rowsExact != d.RowsExact(8) || ks.rowsExact && checked < 500 {
			t.Fatalf("%s: RowsExact(8) of a 768x256 bf16 matrix is %v, %d cases exact", ks.name, d.RowsExact(8), checked)
		}
	}
}

func randDense(r *rand.Rand, dt string, out, in int) *Dense {
	w := make([]float32, out*in)
	for i := range w {
		w[i] = float32(r.NormFloat64())
	}
	if dt == "f32" {
		return DenseF32(out, in, w)
	}
	h := make([]uint16, len(w))
	if dt == "bf16" {
		F32ToBF16Slice(h, w)
		return DenseBF16(out, in, h)
	}
	F32ToF16Slice(h, w)
	return DenseF16(out, in, h)
}

func checkRowsExact(t *testing.T, r *rand.Rand, name string, d *Dense, T int) {
	t.Helper()
	out, in := d.Dims()
	x := New(T, in)
	for i := range x.Data {
		x.Data[i] = float32(r.NormFloat64())
	}
	y, y1 := New(T, out), New(1, out)
	d.Mul(y, x)
	for row := range T {
		d.Mul(y1, FromSlice(1, in, x.Row(row)))
		for o := range out {
			if math.Float32bits(y1.Data[o]) != math.Float32bits(y.Row(row)[o]) {
				t.Fatalf("%s %dx%d, T=%d: row %d output %d: %v alone, %v among %d rows",
					name, out, in, T, row, o, y1.Data[o], y.Row(row)[o], T)
			}
		}
	}
}
