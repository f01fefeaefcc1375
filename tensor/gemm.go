package tensor

import (
	"math"
	"sync"
)

// Prefill GEMM: Dense.Mul for many rows of x (T ≥ gemmKernels.minT).
//
// The dot-product kernels (mulBlock) re-widen every weight vector for each
// pair of x rows and end every dot product with a horizontal sum; at large
// T that widening, not memory, is the cost. The GEMM path instead widens
// each weight once per call into a packed panel and runs an outer-product
// microkernel over it:
//
//   - The output rows (rows of W) are split over the worker pool in
//     panels of nr rows (nr = 32 for AVX-512, 16 for AVX2, 8 in plain Go).
//   - For each panel and each column block [j0, j0+kc) of W, the panel is
//     widened (bf16 by shift, f16 by table, f32 as is) and transposed into
//     scratch as p[j][r] = W[o0+r][j0+j], zero-filled past the last row of
//     W, so that one vector load gives the weights of nr/lanes outputs at
//     one column. Every weight is read from memory exactly once per call.
//   - For every group of 4 rows of x the microkernel accumulates
//     dst[t][o0:o0+nr] += x[t][j] · p[j][:] over the block (broadcast x,
//     vector FMA, register accumulators) and stores the tile into dst
//     (adding to it for column blocks after the first). Rows left over
//     (T mod 4) go through a one-row kernel.
//
// x is re-read for every panel; at 4·nr flops per loaded x value it streams
// from L2/L3 well within their bandwidth.

// gemmKernels is one kernel set's GEMM: panel width, microkernels and
// panel packers.
type gemmKernels struct {
	// nr is the panel width: the number of output rows (columns of dst) a
	// microkernel computes.
	nr int
	// minT is the smallest T for which Mul takes the GEMM path.
	minT int
	// k4 computes a 4×nr tile: for m < 4 and r < nr,
	//	d[m·ldd + r] (+)= Σ_{j<kc} x[m·ldx + j] · p[j·nr + r]
	// storing when add is false and adding to d when it is true.
	k4 func(d []float32, ldd int, x []float32, ldx int, p []float32, kc int, add bool)
	// k1 is k4 for one row of x.
	k1 func(d []float32, x []float32, p []float32, kc int, add bool)
	// packBF16 and packF32 widen rows [0, rows) (rows ≤ nr) of w, columns
	// [0, kc), with row stride ldw, into p[j·nr + r], and zero p[j·nr + r]
	// for rows ≤ r < nr.
	packBF16 func(p []float32, nr int, w []uint16, ldw, rows, kc int)
	packF32  func(p []float32, nr int, w []float32, ldw, rows, kc int)
}

const (
	// gemmKC is the largest column block: a panel of nr×gemmKC float32
	// (32 KiB at nr = 32) stays in L1/L2 while every row of x passes over
	// it. Longer rows of W are split into equal blocks of at most gemmKC
	// columns (partial sums are added into dst).
	gemmKC = 2048
	// gemmMR is the number of x rows k4 takes.
	gemmMR = 4
)

// gemmScratch is one worker's packed panel and edge tile.
type gemmScratch struct {
	p    []float32 // [kc][nr] packed panel
	tile []float32 // [gemmMR][nr] output tile for a panel narrower than nr
}

var gemmKCVar = gemmKC

var gemmScratches = sync.Pool{New: func() any { return new(gemmScratch) }}

// gemmBlocks returns the column block size used for in columns: in split
// into equal blocks of at most gemmKC, rounded up to a multiple of 8.
func gemmBlocks(in int) int {
	n := (in + gemmKCVar - 1) / gemmKCVar
	kc := (in + n - 1) / n
	return min(in, (kc+7)&^7)
}

// gemmRows computes output rows [lo, hi) of dst = x·Wᵀ by panels of g.nr
// rows; lo is a multiple of g.nr.
func (d *Dense) gemmRows(g *gemmKernels, dst, x *Matrix, lo, hi int) {
	nr, in, T := g.nr, d.in, x.Rows
	kcMax := gemmBlocks(in)
	s := gemmScratches.Get().(*gemmScratch)
	defer gemmScratches.Put(s)
	if cap(s.p) < kcMax*nr {
		s.p = make([]float32, kcMax*nr)
	}
	if cap(s.tile) < gemmMR*nr {
		s.tile = make([]float32, gemmMR*nr)
	}
	p, tile := s.p[:kcMax*nr], s.tile[:gemmMR*nr]
	for o0 := lo; o0 < hi; o0 += nr {
		rows := min(nr, hi-o0)
		for j0 := 0; j0 < in; j0 += kcMax {
			kc := min(kcMax, in-j0)
			pk := p[:kc*nr]
			switch d.dt {
			case dtF32:
				g.packF32(pk, nr, d.w32[o0*in+j0:], in, rows, kc)
			case dtBF16:
				g.packBF16(pk, nr, d.w16[o0*in+j0:], in, rows, kc)
			case dtF16:
				packF16(pk, nr, d.w16[o0*in+j0:], in, rows, kc)
			}
			add := j0 > 0
			xs := x.Data[j0:]
			if rows == nr {
				ds := dst.Data[o0:]
				t := 0
				for ; t+gemmMR <= T; t += gemmMR {
					g.k4(ds[t*dst.Cols:], dst.Cols, xs[t*in:], in, pk, kc, add)
				}
				for ; t < T; t++ {
					g.k1(ds[t*dst.Cols:], xs[t*in:], pk, kc, add)
				}
				continue
			}
			// The last panel of W is narrower than nr: compute full
			// tiles into tile and copy the valid columns.
			for t := 0; t < T; t += gemmMR {
				m := min(gemmMR, T-t)
				if m == gemmMR {
					g.k4(tile, nr, xs[t*in:], in, pk, kc, false)
				} else {
					for i := range m {
						g.k1(tile[i*nr:], xs[(t+i)*in:], pk, kc, false)
					}
				}
				for i := range m {
					drow := dst.Data[(t+i)*dst.Cols+o0:][:rows]
					trow := tile[i*nr:][:rows]
					if add {
						for r, v := range trow {
							drow[r] += v
						}
					} else {
						copy(drow, trow)
					}
				}
			}
		}
	}
}

// packF16 is gemmKernels.packBF16 for IEEE binary16 weights (by table).
func packF16(p []float32, nr int, w []uint16, ldw, rows, kc int) {
	p = p[:kc*nr]
	tab := f16Table
	for r := range rows {
		src := w[r*ldw:][:kc]
		q := p[r:]
		for j, h := range src {
			q[j*nr] = math.Float32frombits(tab[h])
		}
	}
	zeroPanelRows(p, nr, rows, kc)
}

// packBF16Go is gemmKernels.packBF16 in plain Go.
func packBF16Go(p []float32, nr int, w []uint16, ldw, rows, kc int) {
	packBF16Block(p[:kc*nr], nr, w, ldw, 0, rows, 0, kc)
	zeroPanelRows(p, nr, rows, kc)
}

// packBF16Block packs rows [r0, r1) and columns [j0, j1) of a bf16 panel:
// p[j·nr + r] = W[r][j] (w[r·ldw + j]).
func packBF16Block(p []float32, nr int, w []uint16, ldw, r0, r1, j0, j1 int) {
	if j0 >= j1 {
		return
	}
	for r := r0; r < r1; r++ {
		src := w[r*ldw+j0 : r*ldw+j1]
		q := p[j0*nr+r:]
		for j, h := range src {
			q[j*nr] = math.Float32frombits(uint32(h) << 16)
		}
	}
}

// packF32Go is gemmKernels.packF32 in plain Go.
func packF32Go(p []float32, nr int, w []float32, ldw, rows, kc int) {
	packF32Block(p[:kc*nr], nr, w, ldw, 0, rows, 0, kc)
	zeroPanelRows(p, nr, rows, kc)
}

// packF32Block is packBF16Block for float32 weights.
func packF32Block(p []float32, nr int, w []float32, ldw, r0, r1, j0, j1 int) {
	if j0 >= j1 {
		return
	}
	for r := r0; r < r1; r++ {
		src := w[r*ldw+j0 : r*ldw+j1]
		q := p[j0*nr+r:]
		for j, v := range src {
			q[j*nr] = v
		}
	}
}

// zeroPanelRows zeroes p[j·nr + r] for rows ≤ r < nr (a panel past the
// last row of W).
func zeroPanelRows(p []float32, nr, rows, kc int) {
	if rows == nr {
		return
	}
	for j := range kc {
		clear(p[j*nr+rows : (j+1)*nr])
	}
}
