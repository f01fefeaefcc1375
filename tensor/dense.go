package tensor

import (
	"fmt"
	"sync"
)

// dtype is the element type a Dense keeps its weights in.
type dtype uint8

const (
	dtF32 dtype = iota
	dtBF16
	dtF16
)

// Dense is a weight matrix W [out, in] kept in the dtype it was stored in
// (float32, bfloat16 or IEEE binary16) and widened to float32 on the fly by
// its kernels. It implements model.Linear:
//
//	dst[t][o] = Σ_j x[t][j] · W[o][j]   (x [T, in], dst [T, out])
//
// accumulated in float32. A Dense never copies or modifies its weights (the
// slice may alias a read-only mmap'd file) and is safe for concurrent use.
type Dense struct {
	out, in int
	dt      dtype
	w16     []uint16  // [out][in] bf16 or f16 bit patterns (dtBF16, dtF16)
	w32     []float32 // [out][in] (dtF32)
}

// DenseF32 wraps w (not copied) as an out×in float32 weight matrix.
func DenseF32(out, in int, w []float32) *Dense {
	checkDenseShape("DenseF32", out, in, len(w))
	return &Dense{out: out, in: in, dt: dtF32, w32: w[:out*in]}
}

// DenseBF16 wraps w (bfloat16 bit patterns, not copied) as an out×in
// weight matrix.
func DenseBF16(out, in int, w []uint16) *Dense {
	checkDenseShape("DenseBF16", out, in, len(w))
	return &Dense{out: out, in: in, dt: dtBF16, w16: w[:out*in]}
}

// DenseF16 wraps w (IEEE binary16 bit patterns, not copied) as an out×in
// weight matrix. F16 has no vector widening here (archsimd exposes no
// VCVTPH2PS), so it is converted by table in chunks: correct but slower
// than BF16 and F32.
func DenseF16(out, in int, w []uint16) *Dense {
	checkDenseShape("DenseF16", out, in, len(w))
	return &Dense{out: out, in: in, dt: dtF16, w16: w[:out*in]}
}

func checkDenseShape(fn string, out, in, n int) {
	if out < 0 || in < 0 || n < out*in {
		panic(fmt.Sprintf("tensor.%s: %d values for %dx%d", fn, n, out, in))
	}
}

// Dims returns W's shape: out rows (outputs) of in columns (inputs).
func (d *Dense) Dims() (out, in int) { return d.out, d.in }

// Bytes returns the size of the weights in their stored dtype: what one
// Mul reads from memory.
func (d *Dense) Bytes() int64 {
	if d.dt == dtF32 {
		return int64(d.out) * int64(d.in) * 4
	}
	return int64(d.out) * int64(d.in) * 2
}

// Row widens row o of W into dst[:in] (an embedding lookup).
func (d *Dense) Row(o int, dst []float32) {
	if o < 0 || o >= d.out || len(dst) < d.in {
		panic(fmt.Sprintf("tensor.Dense.Row: row %d of %dx%d into %d values", o, d.out, d.in, len(dst)))
	}
	lo, hi := o*d.in, (o+1)*d.in
	switch d.dt {
	case dtF32:
		copy(dst, d.w32[lo:hi])
	case dtBF16:
		BF16ToF32Slice(dst, d.w16[lo:hi])
	case dtF16:
		F16ToF32Slice(dst, d.w16[lo:hi])
	}
}

// Mul sets dst[t][o] = Σ_j x[t][j]·W[o][j] for x [T, in] and dst [T, out],
// accumulating in float32 (summation order differs from a plain loop, so
// results agree with it to float32 rounding, not bit for bit). The output
// rows are split over the worker pool (Parallel), and every weight is read
// from memory once per call, so a T = 8 call costs far less than eight
// T = 1 calls. Small T (decode, verification) runs dot-product kernels
// (mulRows); from gemmKernels.minT rows (prefill) Mul widens each panel of
// weights once and runs an outer-product GEMM over it (gemm.go). Mul does
// not allocate (after warm-up). dst must not overlap x. Mul panics if the
// shapes do not match.
func (d *Dense) Mul(dst, x *Matrix) {
	if x.Cols != d.in || dst.Rows != x.Rows || dst.Cols != d.out {
		panic(fmt.Sprintf("tensor.Dense.Mul: W %dx%d, x %dx%d, dst %dx%d",
			d.out, d.in, x.Rows, x.Cols, dst.Rows, dst.Cols))
	}
	if x.Rows == 0 || d.out == 0 {
		return
	}
	if d.in == 0 {
		clear(dst.Data[:dst.Rows*dst.Cols])
		return
	}
	j := mulJobs.Get().(*mulJob)
	j.d, j.dst, j.x = d, dst, x
	if g := kern.gemm; x.Rows >= g.minT[d.dt] {
		// Prefill: the GEMM path (gemm.go), by panels of g.nr rows.
		j.g = g
		panels := (d.out + g.nr - 1) / g.nr
		grain := max(1, (1<<16)/(g.nr*d.in*x.Rows))
		ParallelGrain(panels, grain, j.runGEMM)
	} else {
		blocks := (d.out + rowBlock - 1) / rowBlock
		// At least ~64 Ki multiply-adds per chunk, so that small matrices
		// are not worth waking the workers for.
		grain := max(1, (1<<16)/(rowBlock*d.in*min(x.Rows, tileT)))
		ParallelGrain(blocks, grain, j.run)
	}
	j.d, j.dst, j.x, j.g = nil, nil, nil, nil
	mulJobs.Put(j)
}

// MulRows sets columns [lo, hi) of dst (outputs lo…hi−1) to those of
// Mul(dst, x), computed on the calling goroutine: no worker pool, so a
// caller can split several products of one input over the pool in one
// call. Other columns of dst are not touched. The values are bit for bit
// Mul's when lo and hi are multiples of 32 (or hi = out): the kernels
// group rows from lo, and Mul splits on multiples of 8 (small T) or of
// the GEMM panel width (32, 16 or 8). It does not allocate (after
// warm-up) and panics if the shapes or the range do not fit.
func (d *Dense) MulRows(dst, x *Matrix, lo, hi int) {
	if x.Cols != d.in || dst.Rows != x.Rows || dst.Cols != d.out || lo < 0 || lo > hi || hi > d.out {
		panic(fmt.Sprintf("tensor.Dense.MulRows: W %dx%d, x %dx%d, dst %dx%d, rows [%d, %d)",
			d.out, d.in, x.Rows, x.Cols, dst.Rows, dst.Cols, lo, hi))
	}
	if x.Rows == 0 || lo == hi {
		return
	}
	switch g := kern.gemm; {
	case d.in == 0:
		for t := range x.Rows {
			clear(dst.Row(t)[lo:hi])
		}
	case x.Rows >= g.minT[d.dt]:
		d.gemmRows(g, dst, x, lo, hi)
	default:
		d.mulRows(dst, x, lo, hi)
	}
}

// rowBlock is the number of weight rows the kernels take at a time; the
// pool splits the output rows on multiples of it.
const rowBlock = 8

// mulJob carries one Mul's operands to the pool's workers. run and runGEMM
// are the method values j.rows and j.panels, built once per job so that Mul
// does not allocate.
type mulJob struct {
	d       *Dense
	dst, x  *Matrix
	g       *gemmKernels // the GEMM path's kernels (runGEMM)
	run     func(lo, hi int)
	runGEMM func(lo, hi int)
}

var mulJobs = sync.Pool{New: func() any {
	j := new(mulJob)
	j.run = j.rows
	j.runGEMM = j.panels
	return j
}}

// rows computes output rows [lo·rowBlock, hi·rowBlock) ∩ [0, out).
func (j *mulJob) rows(lo, hi int) {
	j.d.mulRows(j.dst, j.x, lo*rowBlock, min(hi*rowBlock, j.d.out))
}

// panels computes output rows [lo·nr, hi·nr) ∩ [0, out) by GEMM.
func (j *mulJob) panels(lo, hi int) {
	nr := j.g.nr
	j.d.gemmRows(j.g, j.dst, j.x, lo*nr, min(hi*nr, j.d.out))
}

const (
	// tileT is the number of x rows multiplied per pass over the weights:
	// at T ≥ tileT the kernels are compute bound, so re-reading the
	// weights once per tile costs little, and a tile of x stays in cache.
	// (Mul sends such T to the GEMM path, which reads them once.)
	tileT = 64
	// tileJ is the column tile used when tileT rows of x would not fit in
	// a core's L2 (tileBytes); partial sums are then added into dst.
	tileJ     = 1024
	tileBytes = 256 << 10
)

// mulRows computes output rows [lo, hi) for all rows of x, tiled over rows
// of x (tileT) and, when a tile of x is large, over columns (tileJ).
func (d *Dense) mulRows(dst, x *Matrix, lo, hi int) {
	for t0 := 0; t0 < x.Rows; t0 += tileT {
		t1 := min(t0+tileT, x.Rows)
		jb := d.in
		if (t1-t0)*d.in*4 > tileBytes {
			jb = tileJ
		}
		for j0 := 0; j0 < d.in; j0 += jb {
			b := block{lo: lo, hi: hi, t0: t0, t1: t1, j0: j0, j1: min(j0+jb, d.in), add: j0 > 0}
			switch d.dt {
			case dtF32:
				mulBlock(&kern.f32, d.w32[lo*d.in+j0:], d.in, dst, x, b)
			case dtBF16:
				mulBlock(&kern.bf16, d.w16[lo*d.in+j0:], d.in, dst, x, b)
			case dtF16:
				d.mulF16(dst, x, b)
			}
		}
	}
}

// f16Chunk is the number of columns of F16 weights widened at a time.
const f16Chunk = 256

// f16Bufs holds scratch buffers for mulF16 (a stack array would escape
// through the kernels' function values).
var f16Bufs = sync.Pool{New: func() any { return new([rowBlock * f16Chunk]float32) }}

// mulF16 is mulBlock for F16 weights: it widens rowBlock×f16Chunk pieces
// of W into a scratch buffer by table and runs the float32 kernels on them.
func (d *Dense) mulF16(dst, x *Matrix, b block) {
	buf := f16Bufs.Get().(*[rowBlock * f16Chunk]float32) // [rowBlock][f16Chunk] widened W
	defer f16Bufs.Put(buf)
	for o := b.lo; o < b.hi; o += rowBlock {
		r := min(rowBlock, b.hi-o)
		for j := b.j0; j < b.j1; j += f16Chunk {
			c := min(f16Chunk, b.j1-j)
			for i := range r {
				F16ToF32Slice(buf[i*f16Chunk:][:c], d.w16[(o+i)*d.in+j:][:c])
			}
			sub := block{lo: o, hi: o + r, t0: b.t0, t1: b.t1, j0: j, j1: j + c, add: b.add || j > b.j0}
			mulBlock(&kern.f32, buf[:], f16Chunk, dst, x, sub)
		}
	}
}

// RowsExact reports whether Mul and MulRows with T rows of x give every
// row the bits a call with that row alone gives. That holds below the
// GEMM path's threshold, with a tile of T rows of x small enough that no
// column split adds partial sums, for vector kernels whose eight-row and
// two-by-four kernels sum each dot product with the same lanes in the same
// order, and when no group of four output rows is left after the groups
// of eight (a lone row takes another kernel there): TestDenseRowsExact.
// A verify block of speculative decoding multiplies its rows together
// only then, so that each row is a decode step's.
func (d *Dense) RowsExact(T int) bool {
	return kern.rowsExact && d.out%8 < 4 && T < kern.gemm.minT[d.dt] && T*d.in*4 <= tileBytes
}
