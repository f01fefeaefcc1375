package lut

import (
	"fmt"
	"sync"

	"forge/tensor"
)

// family names the fast kernel family that can run a matrix; the portable
// kernels (mulGo) run every matrix.
type family uint8

const (
	famGo   family = iota // no fast kernel: 3-, 6-, 8-bit LUTs, other vector lengths, unaligned rows
	famLUT                // scalar LUT, 1/2/4-bit codes, byte-aligned rows
	famVec2               // vector 2xK, K ∈ {2, 4, 16}, byte-aligned rows
	famInt8               // INT8 per-channel
)

// chooseFamily picks the fast kernel family for format f with in columns.
// The fast kernels need every index row to start on a byte (in·Bits a
// multiple of 8) and at most 16 codebook entries (one vector register of
// table), or INT8.
func chooseFamily(f Format, in int) family {
	if in*f.Bits%8 != 0 {
		return famGo
	}
	switch {
	case f.Kind == Int8:
		return famInt8
	case f.Bits == 3 || f.Bits > 4:
		return famGo
	case f.Kind == Scalar:
		return famLUT
	case f.Kind == Vector && f.Dim == 2:
		return famVec2
	}
	return famGo
}

// useFast lets tests force the portable kernels in a build that has fast
// ones; fastReady is set by kernel_simd.go when the CPU has AVX-512.
var useFast = true

// Mul sets dst = x'·Ŵᵀ (+ (x'·Bᵀ)·Aᵀ) for x [T, in] and dst [T, out], with
// x' = x·M when the matrix has a Rotation, that is
//
//	dst[t][o] = scale[o] · Σ_j book(o)[code(o,j)][o mod d] · x'[t][j]  (+ low rank)
//
// straight from the packed indices: the dense Ŵ is never formed. Sums are
// float32 (summation order differs from a plain loop, so results agree
// with the reference to float32 rounding). The index rows are split over
// the worker pool (tensor.ParallelGrain) and each is read from memory once
// per call for up to tileT rows of x, so a T = 8 call costs far less than
// eight T = 1 calls. Mul allocates nothing after warm-up. dst must not
// overlap x. Mul panics if the shapes do not match.
func (m *Matrix) Mul(dst, x *tensor.Matrix) {
	if x.Cols != m.in || dst.Rows != x.Rows || dst.Cols != m.out {
		panic(fmt.Sprintf("lut.Matrix.Mul: W %dx%d, x %dx%d, dst %dx%d",
			m.out, m.in, x.Rows, x.Cols, dst.Rows, dst.Cols))
	}
	if x.Rows == 0 {
		return
	}
	j := mulJobs.Get().(*mulJob)
	defer mulJobs.Put(j)
	m.mulRotated(j, dst, m.rotate(j, x))
}

// mulRotated is Mul on x' (the input already rotated).
func (m *Matrix) mulRotated(j *mulJob, dst, x *tensor.Matrix) {
	if m.dense != nil {
		m.dense.Mul(dst, x)
	} else {
		m.mulIndexed(j, dst, x)
	}
	if m.rank > 0 {
		j.u.Resize(x.Rows, m.rank)
		j.v.Resize(x.Rows, m.out)
		m.lrB.Mul(&j.u, x)
		m.lrA.Mul(&j.v, &j.u)
		for i, v := range j.v.Data {
			dst.Data[i] += v
		}
	}
}

// MulRows sets the columns of dst of outputs [lo, hi) to those of
// Mul(dst, x), computed on the calling goroutine: no worker pool, so a
// caller can split several products of one input over the pool in one
// call. A d-vector code gives d outputs at once, so lo and hi are first
// rounded down to multiples of the vector length d (hi = out stays):
// calls on consecutive ranges still cover every output once. Other
// columns of dst are not touched; x is rotated and laid out for the
// kernels (and B·x' formed) anew at every call. The values are bit for
// bit Mul's when lo and hi are multiples of 32 (or hi = out): Mul splits
// on multiples of 16 index rows, and the kernels group rows from the
// start of a split. MulRows allocates nothing after warm-up and panics
// if the shapes or the range do not fit.
func (m *Matrix) MulRows(dst, x *tensor.Matrix, lo, hi int) {
	if x.Cols != m.in || dst.Rows != x.Rows || dst.Cols != m.out || lo < 0 || lo > hi || hi > m.out {
		panic(fmt.Sprintf("lut.Matrix.MulRows: W %dx%d, x %dx%d, dst %dx%d, rows [%d, %d)",
			m.out, m.in, x.Rows, x.Cols, dst.Rows, dst.Cols, lo, hi))
	}
	lo, hi = m.vecRange(lo, hi)
	if x.Rows == 0 || lo == hi {
		return
	}
	j := mulJobs.Get().(*mulJob)
	defer mulJobs.Put(j)
	m.mulRowsRotated(j, dst, m.rotate(j, x), lo, hi)
}

// vecRange rounds an output range down to multiples of the vector length
// (hi = out stays), so that consecutive ranges cover every output once.
func (m *Matrix) vecRange(lo, hi int) (int, int) {
	d := max(m.f.Dim, 1)
	lo = lo / d * d
	if hi < m.out {
		hi = hi / d * d
	}
	return lo, hi
}

// mulRowsRotated is MulRows on x' (the input already rotated) for outputs
// [lo, hi), lo and hi already rounded to the vector length.
func (m *Matrix) mulRowsRotated(j *mulJob, dst, x *tensor.Matrix, lo, hi int) {
	d := max(m.f.Dim, 1)
	if m.dense != nil {
		m.dense.MulRows(dst, x, lo, hi)
	} else {
		j.m, j.dst, j.x = m, dst, x
		j.setKernels()
		j.indexRows(lo/d, hi/d)
		j.m, j.dst, j.x = nil, nil, nil
	}
	if m.rank > 0 {
		m.addLowRankRows(j, dst, x, lo, hi)
	}
}

// addLowRankRows adds outputs [lo, hi) of A·(B·x') to dst, x' [T, in].
func (m *Matrix) addLowRankRows(j *mulJob, dst, x *tensor.Matrix, lo, hi int) {
	j.u.Resize(x.Rows, m.rank)
	j.v.Resize(x.Rows, m.out)
	m.lrB.MulRows(&j.u, x, 0, m.rank)
	m.lrA.MulRows(&j.v, &j.u, lo, hi)
	for t := range x.Rows {
		y, v := dst.Row(t)[lo:hi], j.v.Row(t)[lo:hi]
		for i := range y {
			y[i] += v[i]
		}
	}
}

// rotate returns x' = x·M in j's scratch when the matrix has a Rotation,
// else x.
func (m *Matrix) rotate(j *mulJob, x *tensor.Matrix) *tensor.Matrix {
	if m.p.Rotation == nil {
		return x
	}
	j.xr.Resize(x.Rows, m.in)
	m.p.Rotation.Rotate(&j.xr, x)
	return &j.xr
}

// mulIndexed runs the kernels over the index rows on the worker pool.
func (m *Matrix) mulIndexed(j *mulJob, dst, x *tensor.Matrix) {
	j.m, j.dst, j.x = m, dst, x
	j.setKernels()
	rows := m.f.IndexRows(m.out)
	blocks := (rows + rowBlock - 1) / rowBlock
	// At least ~64 Ki codes per chunk, so that small matrices are not
	// worth waking the workers for.
	grain := max(1, (1<<16)/(rowBlock*m.in))
	tensor.ParallelGrain(blocks, grain, j.run)
	j.m, j.dst, j.x = nil, nil, nil
}

// setKernels picks the kernels of the job's matrix and x (j.m, j.x) and
// lays x out for them: the AVX-512 ones (j.fast), else the AVX2 float
// ones for T ≤ a2MaxT (j.a2), else the panels (T ≥ panelMinT) or the
// portable kernel.
func (j *mulJob) setKernels() {
	j.fast = fastReady && useFast && j.m.fam != famGo
	j.a2 = false
	if j.fast {
		j.prepare()
	} else {
		j.a2 = j.a2Prepare()
	}
}

// rowBlock is the number of index rows the pool splits on multiples of.
const rowBlock = 16

// tileBytes bounds the x rows one pass over the weights uses (they should
// stay in a core's L2): tileT(in) = tileBytes/(4·in) rows, a multiple of 4
// between 4 and 64.
const tileBytes = 256 << 10

func tileT(in int) int { return min(64, max(4, tileBytes/(4*in))&^3) }

// mulJob carries one Mul's operands and scratch to the pool's workers. run
// is the method value j.rows, built once per job so that Mul does not
// allocate.
type mulJob struct {
	m      *Matrix
	dst, x *tensor.Matrix
	fast   bool // the AVX-512 kernels run the job
	a2     bool // the AVX2 float kernels run the job (kernel_avx2.go)
	//lint:ignore U1000 empty without GOEXPERIMENT=simd; the simd build's kernels use it
	fastX // x in the fast kernels' layouts
	run   func(lo, hi int)

	xr, u, v tensor.Matrix // rotated x [T, in]; B·x' [T, r]; A·(B·x') [T, out]
}

var mulJobs = sync.Pool{New: func() any {
	j := new(mulJob)
	j.run = j.rows
	return j
}}

// rows computes the outputs of index rows [lo·rowBlock, hi·rowBlock) for
// every row of x, in tiles of tileT(in) rows of x.
func (j *mulJob) rows(lo, hi int) {
	j.indexRows(lo*rowBlock, min(hi*rowBlock, j.m.f.IndexRows(j.m.out)))
}

// indexRows computes the outputs of index rows [r0, r1) for every row of
// x, in tiles of tileT(in) rows of x.
func (j *mulJob) indexRows(r0, r1 int) {
	m := j.m
	if j.a2 {
		j.a2Rows(r0, r1)
		return
	}
	if !j.fast && useFast && j.x.Rows >= panelMinT {
		m.mulPanels(j.dst, j.x, r0, r1)
		return
	}
	tt := tileT(m.in)
	for t0 := 0; t0 < j.x.Rows; t0 += tt {
		t1 := min(t0+tt, j.x.Rows)
		if j.fast {
			j.fastRows(r0, r1, t0, t1)
		} else {
			m.mulGo(j.dst, j.x, r0, r1, t0, t1)
		}
	}
}
