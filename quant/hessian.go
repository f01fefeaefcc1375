package quant

import (
	"fmt"
	"sync"

	"forge/tensor"
)

// hessChunk is the number of consecutive rows whose products a backend
// sums (in float32 in the pure-Go one) before the chunk is added into the
// float64 totals.
const hessChunk = 128

// Hessian accumulates the input statistics of one Linear: H = XᵀX/N over
// the N calibration rows X [N, in] it has seen (docs/quantization.md §3), the
// full symmetric matrix that GPTQ factorizes and OutputSNR weighs errors
// with, or (DiagOnly) just its diagonal, all AW codebooks need. The zero
// value is an empty full Hessian ready for Add. Add and Merge must not run
// concurrently with anything else; once the rows are in, readers (Diag,
// Matrix, GPTQ.Quantize, OutputSNR) may share a Hessian concurrently.
//
// Accumulation:
//
//   - diag(H) is summed row by row in float64 (exact products), so Diag
//     is the same in every build.
//   - The off-diagonal entries are summed per chunk of hessChunk = 128
//     consecutive rows Xc [128, in], and each chunk's XcᵀXc is added into
//     float64 totals. The default (pure-Go) backend computes XcᵀXc with
//     forge's float32 GEMM (tensor.Dense: x = Xcᵀ [in, 128] times
//     W = Xcᵀ gives Xcᵀ·Xc, lower triangle only): products and chunk sums
//     in float32 (each product is exact inside an FMA of the SIMD kernels,
//     rounded to float32 in the plain-Go ones), totals in float64, so an
//     entry is off by at most ≈ 129·2⁻²⁴ ≈ 8·10⁻⁶ of Σ_t |x[t][i]·x[t][j]|.
//     The openblas backend widens each chunk to float64 and uses
//     cblas_dsyrk: exact products, float64 sums.
//   - Rows are buffered into chunks, so H depends only on the rows and
//     their order, not on how they are split among Add calls.
//
// Memory: 8·in² bytes for the full matrix (210 MB at in = 5120, 2.4 GB at
// in = 17408); time ≈ N·in² multiply-adds.
type Hessian struct {
	// DiagOnly, set before the first Add, keeps only diag(H): O(in)
	// memory and time per row, enough for AW codebooks (Nearest) but not
	// for GPTQ or OutputSNR.
	DiagOnly bool

	diag []float64 // [in] Σ_t x[t][j]², float64, in row order
	// low holds Σ_t x[t][i]·x[t][j] for j ≤ i in its lower triangle
	// (row-major [in][in]; the diagonal is a copy of diag after each
	// flush, the strict upper triangle is zero). nil when DiagOnly or for
	// a DiagHessian.
	low   []float64
	pend  []float32  // [hessChunk][in] rows not yet added into low
	np    int        // rows in pend
	n     int        // rows added
	exact bool       // a DiagHessian: H is exactly diagonal
	mu    sync.Mutex // serializes flush, which readers call
}

// DiagHessian returns a Hessian that is exactly the diagonal matrix diag(d)
// (d copied), as if from one row: for statistics computed elsewhere and
// for tests. It takes no further rows (Add panics).
func DiagHessian(d []float64) *Hessian {
	return &Hessian{diag: append([]float64(nil), d...), n: 1, exact: true}
}

// Add accumulates the rows of x [T, in]. It panics if in differs from
// earlier calls, if h is a DiagHessian, or if DiagOnly changed since the
// first Add (programmer errors).
func (h *Hessian) Add(x *tensor.Matrix) {
	in := x.Cols
	h.init(in)
	for t := range x.Rows {
		row := x.Row(t)
		for j, v := range row {
			h.diag[j] += float64(v) * float64(v)
		}
		if h.DiagOnly {
			continue
		}
		copy(h.pend[h.np*in:(h.np+1)*in], row)
		if h.np++; h.np == hessChunk {
			h.flush()
		}
	}
	h.n += x.Rows
}

// init prepares h for rows of width in.
func (h *Hessian) init(in int) {
	switch {
	case h.exact:
		panic("quant.Hessian.Add: a DiagHessian takes no rows")
	case h.diag == nil:
		h.diag = make([]float64, in)
		if !h.DiagOnly {
			h.low = make([]float64, in*in)
			h.pend = make([]float32, hessChunk*in)
		}
	case in != len(h.diag):
		panic(fmt.Sprintf("quant.Hessian.Add: %d columns, want %d", in, len(h.diag)))
	case h.DiagOnly != (h.low == nil):
		panic("quant.Hessian.Add: DiagOnly changed after the first Add")
	}
}

// flush adds the buffered rows into low and refreshes its diagonal.
func (h *Hessian) flush() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.np == 0 {
		return
	}
	in := len(h.diag)
	la.syrk(h.low, h.pend[:h.np*in], h.np, in)
	h.np = 0
	for i, d := range h.diag {
		h.low[i*in+i] = d
	}
}

// Rows returns the number of rows accumulated.
func (h *Hessian) Rows() int { return h.n }

// dim returns the input width (0 before the first Add).
func (h *Hessian) dim() int { return len(h.diag) }

// full reports whether h holds the whole matrix: rows added, and not
// DiagOnly (a DiagHessian is whole: its off-diagonal entries are zero).
func (h *Hessian) full() bool { return h.n > 0 && (h.exact || h.low != nil) }

// Diag returns diag(H)[j] = Σ_t x[t][j]² / N (a new slice; nil when no
// rows have been added).
func (h *Hessian) Diag() []float64 {
	if h.n == 0 {
		return nil
	}
	d := make([]float64, len(h.diag))
	for j, s := range h.diag {
		d[j] = s / float64(h.n)
	}
	return d
}

// Matrix returns H = XᵀX/N as a new symmetric [in][in] slice (row-major,
// both triangles filled), or nil when no rows have been added or h is
// DiagOnly.
func (h *Hessian) Matrix() []float64 {
	if !h.full() {
		return nil
	}
	h.flush()
	n, rows := len(h.diag), float64(h.n)
	m := make([]float64, n*n)
	for i := range n {
		if h.exact {
			m[i*n+i] = h.diag[i] / rows
			continue
		}
		for j, v := range h.low[i*n : i*n+i+1] {
			m[i*n+j], m[j*n+i] = v/rows, v/rows
		}
	}
	return m
}

// Merge adds o's rows to h, as if h had also been given them by Add
// (after its own; up to rounding, since o's chunks are summed
// separately). An empty h takes o's width and mode. It panics if the
// widths or DiagOnly differ, or if either is a DiagHessian.
func (h *Hessian) Merge(o *Hessian) {
	if o.n == 0 {
		return
	}
	if h.exact || o.exact {
		panic("quant.Hessian.Merge: a DiagHessian takes no rows")
	}
	if h.diag == nil {
		h.DiagOnly = o.DiagOnly
	} else if h.DiagOnly != o.DiagOnly {
		panic("quant.Hessian.Merge: DiagOnly differs")
	}
	h.init(len(o.diag))
	h.flush()
	o.flush()
	for j, v := range o.diag {
		h.diag[j] += v
	}
	if h.low != nil {
		for i, v := range o.low {
			h.low[i] += v
		}
		for i, d := range h.diag { // keep the diagonal an exact copy
			h.low[i*len(h.diag)+i] = d
		}
	}
	h.n += o.n
}
