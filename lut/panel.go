package lut

import (
	"sync"

	"forge/tensor"
)

// Widened panels: where no fast lookup kernel runs a matrix (a CPU
// without AVX-512, a build without GOEXPERIMENT=simd, or a format the
// kernels do not take), a product of several rows of x (prefill, verify
// blocks) widens a panel of output rows at a time into float32,
// Ŵ[o][j] = s[o]·book(o)[code(o, j)], and multiplies it by x with the
// dense kernels of package tensor (their SIMD GEMM where the CPU has one).
// The table lookups then cost once per weight for all T rows, where the
// portable kernel (mulGo) pays them once per weight and row. The panel is
// Dequantize's rows exactly; only the summation order differs from mulGo
// (the Mul tests bound the difference against the reference twin as for
// the other kernels).

// panelMinT is the fewest rows of x that take the panel path: below it
// the portable kernel's single pass costs about as much as the widening.
const panelMinT = 4

// panelFloats bounds a panel's size, so that it stays in a core's L2
// while the GEMM passes over it.
const panelFloats = 64 << 10

// panelRows returns the index rows of a panel for rows of in columns: a
// multiple of rowBlock (the pool's split) between rowBlock and 64.
func panelRows(in int) int { return min(64, max(rowBlock, panelFloats/in/rowBlock*rowBlock)) }

// panel is one worker's scratch: the widened weights behind a reusable
// tensor.Dense, and the product before it is copied into dst's columns.
type panel struct {
	w       []float32 // [rows·d][in]
	out, in int       // w's shape as dense
	dense   *tensor.Dense
	y       tensor.Matrix // [T][rows·d]
	codes   []uint8       // one index row unpacked
}

var panels = sync.Pool{New: func() any { return new(panel) }}

// mulPanels computes index rows [r0, r1) of m for every row of x into dst
// through widened panels.
func (m *Matrix) mulPanels(dst, x *tensor.Matrix, r0, r1 int) {
	p := panels.Get().(*panel)
	defer panels.Put(p)
	d, pr := m.f.Dim, panelRows(m.in)
	if out := pr * d; p.out != out || p.in != m.in {
		// A panel holds about panelFloats·d floats whatever the shape
		// (more only for rows wider than panelFloats/rowBlock), so a
		// change of shape mostly reuses the buffer.
		if cap(p.w) < out*m.in {
			p.w = make([]float32, out*m.in)
		}
		p.w = p.w[:out*m.in]
		p.out, p.in = out, m.in
		p.dense = tensor.DenseF32(out, m.in, p.w)
	}
	p.y.Resize(x.Rows, p.out)
	if cap(p.codes) < m.in {
		p.codes = make([]uint8, m.in)
	}
	// Panels start and end on multiples of rowBlock index rows (or the
	// last row), whatever r0 and r1, so that every output row takes the
	// same place in the dense kernels' row groups in any split of the
	// rows (MulRows over any ranges gives Mul's bits); the rows widened
	// outside [r0, r1) are computed and dropped.
	ra, rb := r0/rowBlock*rowBlock, min(m.f.IndexRows(m.out), (r1+rowBlock-1)/rowBlock*rowBlock)
	for r := ra; r < rb; r += pr {
		n := min(pr, rb-r)
		m.widen(p.w, p.codes[:m.in], r, n)
		p.dense.MulRows(&p.y, x, 0, n*d)
		lo, hi := max(r, r0), min(r+n, r1)
		for t := range x.Rows {
			copy(dst.Row(t)[lo*d:hi*d], p.y.Row(t)[(lo-r)*d:(hi-r)*d])
		}
	}
}

// widen writes the n index rows from r, dequantized, into w ([n·d][in]),
// unpacking each into codes ([in]).
func (m *Matrix) widen(w []float32, codes []uint8, r, n int) {
	d, in := m.f.Dim, m.in
	for i := range n {
		Unpack(codes, m.p.Index, m.f.Bits, (r+i)*in)
		for t := range d {
			o := (r+i)*d + t
			tab, s, row := m.table(r+i, t), m.scale[o], w[(i*d+t)*in:][:in]
			for j, c := range codes {
				row[j] = s * tab[c]
			}
		}
	}
}
