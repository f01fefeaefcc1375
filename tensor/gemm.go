package tensor

import "sync"

// Prefill GEMM: Dense.Mul for T ≥ gemmKernels.minT rows of x.
//
// The dot-product kernels (mulBlock) widen every weight vector again for
// each pair of x rows and end each dot product with horizontal sums; at
// prefill sizes that, not memory, is the cost, and beyond tileT rows they
// read the weights from memory once per tile. The GEMM path reads and
// widens every weight exactly once per call:
//
//   - The output rows (rows of W) are split over the worker pool in panels
//     of nr rows (32 for AVX-512, 16 for AVX2, 8 in plain Go).
//   - Each panel, one column block [j0, j0+kc) at a time, is widened (bf16
//     by shift, f16 by table, f32 as is) into pooled per-worker scratch, in
//     the layout the kernel set's microkernels read. The vector sets
//     transpose it, p[j·nr + r] = W[o0+r][j0+j] (zero past the last row of
//     W), so that one vector load gives nr/lanes outputs at column j.
//   - Then every group of 4 rows of x runs over the panel: the vector
//     microkernels accumulate dst[t][o0:o0+nr] += x[t][j] · p[j][:]
//     (broadcast, FMA, eight accumulator registers) and store the tile
//     (adding to dst for column blocks after the first); leftover rows
//     (T mod 4) take a one-row kernel. The portable set keeps its panel
//     row-major and runs the float32 dot-product kernels over it instead
//     (gemm_go.go says why).
//
// x is read again for every panel, from cache: each x value loaded feeds
// nr multiply-adds.

// gemmKernels is one kernel set's GEMM: panel width, microkernels and
// panel packers.
type gemmKernels struct {
	// nr is the panel width: the number of output rows (columns of dst) a
	// microkernel computes.
	nr int
	// minT is, by weight dtype (dtF32, dtBF16, dtF16), the smallest T for
	// which Mul takes the GEMM path. It is at most tileT, so that the
	// dot-product path, which reads the weights once per tileT rows of x,
	// reads them once per call too.
	minT [3]int
	// k4 computes a 4×nr tile: for m < 4 and r < nr,
	//	d[m·ldd + r] (+)= Σ_{j<kc} x[m·ldx + j] · W[o0+r][j0+j]
	// from the packed panel p, storing when add is false and adding to d
	// when it is true.
	k4 func(d []float32, ldd int, x []float32, ldx int, p []float32, kc int, add bool)
	// k1 is k4 for one row of x.
	k1 func(d []float32, x []float32, p []float32, kc int, add bool)
	// packBF16, packF32 and packF16 widen rows [0, rows) (rows ≤ nr) of
	// w, columns [0, kc), with row stride ldw, into the panel p (nr·kc
	// values) in the layout k4 and k1 read, rows ≥ rows reading as zeros.
	packBF16 func(p []float32, nr int, w []uint16, ldw, rows, kc int)
	packF32  func(p []float32, nr int, w []float32, ldw, rows, kc int)
	packF16  func(p []float32, nr int, w []uint16, ldw, rows, kc int)
}

const (
	// gemmKC is the largest column block: a packed panel of at most
	// 32×gemmKC float32 (256 KiB) stays in L2 while all rows of x pass
	// over it. Longer rows of W are split into equal blocks of at most
	// gemmKC columns, whose partial sums are added into dst. (Smaller
	// blocks measured no faster even at T = 512, and slower at small T.)
	gemmKC = 2048
	// gemmMR is the number of x rows k4 takes.
	gemmMR = 4
)

// gemmScratch is one worker's packed panel and edge tile.
type gemmScratch struct {
	p    []float32 // packed panel, nr·kc values
	tile []float32 // [gemmMR][nr] output tile for a panel narrower than nr
}

var gemmScratches = sync.Pool{New: func() any { return new(gemmScratch) }}

// gemmBlocks returns the column block size used for in columns: in split
// into equal blocks of at most gemmKC, rounded up to a multiple of 8.
func gemmBlocks(in int) int {
	n := (in + gemmKC - 1) / gemmKC
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
				g.packF16(pk, nr, d.w16[o0*in+j0:], in, rows, kc)
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
