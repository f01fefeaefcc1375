package tensor

// kernels is one weight dtype's set of dot-product kernels. Each returns the
// float32 dot products Σ_{j<len(x)} w[j]·x[j] of several weight rows with
// several rows of x at once, so that a weight vector loaded into a register
// is used for every x row (register blocking) and several weight rows
// stream from memory at once. The multi-row kernels take weight row r as
// w[r·ldw:][:len(x)]; all x rows of one call have the same length. Result
// sRT is weight row R with x row T.
type kernels[W uint16 | float32] struct {
	d1x1 func(w []W, x []float32) float32
	d8x1 func(w []W, ldw int, x []float32) (s00, s10, s20, s30, s40, s50, s60, s70 float32)
	d4x2 func(w []W, ldw int, x0, x1 []float32) (s00, s01, s10, s11, s20, s21, s30, s31 float32)
}

// kernelSet is the kernels for every vector-widened dtype (F16 goes
// through f32, see Dense.mulF16).
type kernelSet struct {
	name string
	// rowsExact: d8x1 and d4x2 give each (weight row, x row) product the
	// same bits (Dense.RowsExact; checked by TestDenseRowsExact).
	rowsExact bool
	f32       kernels[float32]
	bf16      kernels[uint16]
	gemm      *gemmKernels // prefill (gemm.go)
}

// kern is the kernel set in use: the best this CPU and build support,
// chosen at init (dense_simd.go, dense_nosimd.go). Tests swap it.
var kern *kernelSet

// goKernels is the portable set, used when no vector set applies.
var goKernels = kernelSet{
	name: "go",
	f32:  kernels[float32]{dot1x1F32Go, dot8x1F32Go, dot4x2F32Go},
	bf16: kernels[uint16]{dot1x1BF16Go, dot8x1BF16Go, dot4x2BF16Go},
	gemm: &gemmGo,
}

// block is a piece of a Mul: output rows [lo, hi), x rows [t0, t1) and
// columns [j0, j1). add: add the partial sums to dst instead of storing.
type block struct {
	lo, hi, t0, t1, j0, j1 int
	add                    bool
}

// mulBlock computes, for lo ≤ o < hi and t0 ≤ t < t1,
//
//	dst[t][o] (+)= Σ_{j0 ≤ j < j1} x[t][j] · w[(o-lo)·ldw + j-j0]
//
// that is, w holds weight rows [lo, hi) restricted to columns [j0, j1),
// with a row stride of ldw. Weight rows are taken rowBlock (8) at a time and
// each block is used for all x rows before moving on: it streams from
// memory once (8 rows at a time for one x row, 4 rows for pairs of x rows)
// and is re-read from L1/L2 for the other x rows. Rows past the last whole
// block (only at the end of W) go four, then one, at a time. Each kernel
// call is followed by ClearUpper: the scalar code that stores its sums
// would otherwise run in the slow dirty-upper state (upper_simd.go).
func mulBlock[W uint16 | float32](k *kernels[W], w []W, ldw int, dst, x *Matrix, b block) {
	n := b.j1 - b.j0
	wr := func(o int) []W { return w[(o-b.lo)*ldw:] } // rows o, o+1, … at stride ldw
	xr := func(t int) []float32 { return x.Data[t*x.Cols+b.j0:][:n] }
	out := blockOut{dst, b.add}
	o := b.lo
	for ; o+8 <= b.hi; o += 8 {
		t := b.t0
		for ; t+2 <= b.t1; t += 2 {
			a0, a1, b0, b1, c0, c1, d0, d1 := k.d4x2(wr(o), ldw, xr(t), xr(t+1))
			ClearUpper()
			out.quad2(t, o, a0, a1, b0, b1, c0, c1, d0, d1)
			a0, a1, b0, b1, c0, c1, d0, d1 = k.d4x2(wr(o+4), ldw, xr(t), xr(t+1))
			ClearUpper()
			out.quad2(t, o+4, a0, a1, b0, b1, c0, c1, d0, d1)
		}
		if t < b.t1 {
			s0, s1, s2, s3, s4, s5, s6, s7 := k.d8x1(wr(o), ldw, xr(t))
			ClearUpper()
			out.row4(t, o, s0, s1, s2, s3)
			out.row4(t, o+4, s4, s5, s6, s7)
		}
	}
	for ; o+4 <= b.hi; o += 4 {
		t := b.t0
		for ; t+2 <= b.t1; t += 2 {
			a0, a1, b0, b1, c0, c1, d0, d1 := k.d4x2(wr(o), ldw, xr(t), xr(t+1))
			ClearUpper()
			out.quad2(t, o, a0, a1, b0, b1, c0, c1, d0, d1)
		}
		if t < b.t1 {
			for r := o; r < o+4; r++ {
				v := k.d1x1(wr(r)[:n], xr(t))
				ClearUpper()
				out.put(t, r, v)
			}
		}
	}
	for ; o < b.hi; o++ {
		for t := b.t0; t < b.t1; t++ {
			v := k.d1x1(wr(o)[:n], xr(t))
			ClearUpper()
			out.put(t, o, v)
		}
	}
}

// blockOut stores (or, with add, accumulates) kernel results into dst.
type blockOut struct {
	dst *Matrix
	add bool
}

func (b blockOut) put(t, o int, s float32) {
	p := &b.dst.Data[t*b.dst.Cols+o]
	if b.add {
		s += *p
	}
	*p = s
}

// row4 writes dst[t][o … o+3].
func (b blockOut) row4(t, o int, s0, s1, s2, s3 float32) {
	b.put(t, o, s0)
	b.put(t, o+1, s1)
	b.put(t, o+2, s2)
	b.put(t, o+3, s3)
}

// quad2 writes d4x2's results: dst[t … t+1][o … o+3].
func (b blockOut) quad2(t, o int, s00, s01, s10, s11, s20, s21, s30, s31 float32) {
	b.row4(t, o, s00, s10, s20, s30)
	b.row4(t+1, o, s01, s11, s21, s31)
}
