package tensor

// kernels is one weight dtype's set of dot-product kernels. Each returns the
// float32 dot products Σ_{j<len(x)} w[j]·x[j] of several weight rows with
// several rows of x at once, so that a weight vector loaded into a register
// is used for every x row (register blocking). Weight rows have at least
// len(x) elements; all x rows of one call have the same length. Result
// sRT is weight row R with x row T.
type kernels[W uint16 | float32] struct {
	d1x1 func(w []W, x []float32) float32
	d1x4 func(w []W, x0, x1, x2, x3 []float32) (s00, s01, s02, s03 float32)
	// d8x1 takes eight weight rows w[r·ldw:][:len(x)], r = 0…7.
	d8x1 func(w []W, ldw int, x []float32) (s00, s10, s20, s30, s40, s50, s60, s70 float32)
	d2x4 func(w0, w1 []W, x0, x1, x2, x3 []float32) (s00, s01, s02, s03, s10, s11, s12, s13 float32)
}

// kernelSet is the kernels for every vector-widened dtype (F16 goes
// through f32, see Dense.mulF16).
type kernelSet struct {
	name string
	f32  kernels[float32]
	bf16 kernels[uint16]
}

// kern is the kernel set in use: the best this CPU and build support,
// chosen at init (dense_simd.go, dense_nosimd.go). Tests swap it.
var kern *kernelSet

// goKernels is the portable set, used when no vector set applies.
var goKernels = kernelSet{
	name: "go",
	f32:  kernels[float32]{dot1x1F32Go, dot1x4F32Go, dot8x1F32Go, dot2x4F32Go},
	bf16: kernels[uint16]{dot1x1BF16Go, dot1x4BF16Go, dot8x1BF16Go, dot2x4BF16Go},
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
// with a row stride of ldw. Weight rows are taken rowBlock at a time and
// each block is used for all x rows before moving on: it is read from
// memory once and from L1/L2 for the other x rows. Rows past the last
// whole block (fewer than rowBlock, only at the end of W) go one by one.
func mulBlock[W uint16 | float32](k *kernels[W], w []W, ldw int, dst, x *Matrix, b block) {
	n := b.j1 - b.j0
	wr := func(o int) []W { return w[(o-b.lo)*ldw:][:n] }
	xr := func(t int) []float32 { return x.Data[t*x.Cols+b.j0:][:n] }
	out := blockOut{dst, b.add}
	o := b.lo
	for ; o+8 <= b.hi; o += 8 {
		t := b.t0
		if d4x2Hook != nil && any(w) != nil {
			if wb, ok := any(w).([]uint16); ok {
				for ; t+2 <= b.t1; t += 2 {
					for r := o; r < o+8; r += 4 {
						s00, s01, s10, s11, s20, s21, s30, s31 := d4x2Hook(wb[(r-b.lo)*ldw:], ldw, xr(t), xr(t+1))
						out.row4(t, r, s00, s10, s20, s30)
						out.row4(t+1, r, s01, s11, s21, s31)
					}
				}
			}
		}
		for ; t+4 <= b.t1; t += 4 {
			x0, x1, x2, x3 := xr(t), xr(t+1), xr(t+2), xr(t+3)
			for r := o; r < o+8; r += 2 {
				a0, a1, a2, a3, c0, c1, c2, c3 := k.d2x4(wr(r), wr(r+1), x0, x1, x2, x3)
				out.col4(t, r, a0, a1, a2, a3)
				out.col4(t, r+1, c0, c1, c2, c3)
			}
		}
		for ; t < b.t1; t++ {
			s0, s1, s2, s3, s4, s5, s6, s7 := k.d8x1(w[(o-b.lo)*ldw:], ldw, xr(t))
			out.row4(t, o, s0, s1, s2, s3)
			out.row4(t, o+4, s4, s5, s6, s7)
		}
	}
	for ; o < b.hi; o++ {
		w0 := wr(o)
		t := b.t0
		for ; t+4 <= b.t1; t += 4 {
			s0, s1, s2, s3 := k.d1x4(w0, xr(t), xr(t+1), xr(t+2), xr(t+3))
			out.col4(t, o, s0, s1, s2, s3)
		}
		for ; t < b.t1; t++ {
			out.put(t, o, k.d1x1(w0, xr(t)))
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

// col4 writes dst[t … t+3][o].
func (b blockOut) col4(t, o int, s0, s1, s2, s3 float32) {
	b.put(t, o, s0)
	b.put(t+1, o, s1)
	b.put(t+2, o, s2)
	b.put(t+3, o, s3)
}

var d4x2Hook func(w []uint16, ldw int, x0, x1 []float32) (s00, s01, s10, s11, s20, s21, s30, s31 float32)
