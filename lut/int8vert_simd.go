//go:build goexperiment.simd && amd64

package lut

import (
	"unsafe"

	"forge/tensor"
)

// lut4I8V1 … lut4I8V8 are the tile kernels (int8vert_amd64.s) for one to
// eight rows of x: for strips consecutive strips of tiles from w (one
// table, whose codebook scale is *cs), h[t·hstride + 16·i + r] = F of
// index row 16i + r and x row t (int8VertRowGo's value, bit for bit)
// made an output as int8Scale makes it: s·(c·(F − k_t)), with k_t =
// ks[t] and s = ss[16i + r]. x and its scales are laid out as the
// multi-row kernels take them (Int8Input.interleave; one row's q and d
// as they are).
//
//go:noescape
func lut4I8V1(tab *[64]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, strips int, h *float32, hstride int, ks *float32, cs *float32, ss *float32)

//go:noescape
func lut4I8V2(tab *[64]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, strips int, h *float32, hstride int, ks *float32, cs *float32, ss *float32)

//go:noescape
func lut4I8V3(tab *[64]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, strips int, h *float32, hstride int, ks *float32, cs *float32, ss *float32)

//go:noescape
func lut4I8V4(tab *[64]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, strips int, h *float32, hstride int, ks *float32, cs *float32, ss *float32)

//go:noescape
func lut4I8V5(tab *[64]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, strips int, h *float32, hstride int, ks *float32, cs *float32, ss *float32)

//go:noescape
func lut4I8V6(tab *[64]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, strips int, h *float32, hstride int, ks *float32, cs *float32, ss *float32)

//go:noescape
func lut4I8V7(tab *[64]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, strips int, h *float32, hstride int, ks *float32, cs *float32, ss *float32)

//go:noescape
func lut4I8V8(tab *[64]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, strips int, h *float32, hstride int, ks *float32, cs *float32, ss *float32)

// vertStrip16 is vertStrip in assembly (int8vert_amd64.s): the tiles of
// one strip, 16 index rows of n bytes (steps of 64) from rows, to dst.
//
//go:noescape
func vertStrip16(dst unsafe.Pointer, rows unsafe.Pointer, n int, steps int)

// vec2I8V1 … vec2I8V4 are the 2x16 tile kernels (int8vert_amd64.s): as
// lut4I8V1…4 for one to four rows of x, both components' tables at tab,
// index row 16i + r's outputs at h[t·hstride + 32i + 2r + c] (scales ss
// likewise), x's rows xstride bytes a step and their scales dstride
// bytes a block apart (the layout of a chunk of eight rows, of which a
// call takes four).
//
//go:noescape
func vec2I8V1(tab *[128]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, strips int, h *float32, hstride int, ks *float32, cs *float32, ss *float32, xstride int, dstride int)

//go:noescape
func vec2I8V2(tab *[128]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, strips int, h *float32, hstride int, ks *float32, cs *float32, ss *float32, xstride int, dstride int)

//go:noescape
func vec2I8V3(tab *[128]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, strips int, h *float32, hstride int, ks *float32, cs *float32, ss *float32, xstride int, dstride int)

//go:noescape
func vec2I8V4(tab *[128]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, strips int, h *float32, hstride int, ks *float32, cs *float32, ss *float32, xstride int, dstride int)

var vec2Kernels = [5]func(tab *[128]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, strips int, h *float32, hstride int, ks *float32, cs *float32, ss *float32, xstride int, dstride int){
	nil, vec2I8V1, vec2I8V2, vec2I8V3, vec2I8V4,
}

var vertKernels = [int8Chunk + 1]func(tab *[64]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, strips int, h *float32, hstride int, ks *float32, cs *float32, ss *float32){
	nil, lut4I8V1, lut4I8V2, lut4I8V3, lut4I8V4, lut4I8V5, lut4I8V6, lut4I8V7, lut4I8V8,
}

// vertKernel runs the tile kernel for T rows of x (their k at ks) on
// the whole strips from index row r (a strip's first row) up to end,
// writing row t's outputs to h[t·hstride + …], and returns the first row
// it left (r itself when r starts no strip or none fits).
func (m *Matrix) vertKernel(h []float32, hstride int, xq unsafe.Pointer, ds *float32, ks []float32, T, r, end int) int {
	strips := (end - r) / vertRows
	if r%vertRows != 0 || strips <= 0 {
		return r
	}
	_, n := m.codes8()
	w := unsafe.Pointer(&m.tiles(r, r+strips*vertRows)[r*n])
	c := &m.cbd[m.group8(r)]
	if m.f.Dim == 1 {
		vertKernels[T](m.table8(r, 0), w, n/64, xq, ds, strips, &h[r], hstride, &ks[0], c, &m.scale[r])
		return r + strips*vertRows
	}
	tab := (*[128]byte)(unsafe.Pointer(m.table8(r, 0)))
	for t := 0; t < T; t += 4 { // four rows of x a call
		k := min(4, T-t)
		vec2Kernels[k](tab, w, n/64, unsafe.Add(xq, t*int8Step), (*float32)(unsafe.Add(unsafe.Pointer(ds), t*64)),
			strips, &h[t*hstride+2*r], hstride, &ks[t], c, &m.scale[2*r], T*int8Step, T*64)
	}
	return r + strips*vertRows
}

// vertRowsT computes index rows [r0, r1) of rows t0 … t0+T−1 of q for a
// matrix in the tile order: row t0+t's outputs at h[t·hstride + …], x and
// its scales at xq and ds in the multi-row layout (one row's as it is).
// Whole strips run the kernel, other rows the twin and int8Scale.
func (m *Matrix) vertRowsT(h []float32, hstride int, xq unsafe.Pointer, ds *float32, q *Int8Input, t0, T, r0, r1 int) {
	_, n := m.codes8()
	steps, nb := n/64, 16*((m.in+int8Block-1)/int8Block)
	ks := q.k[t0 : t0+T]
	for r := r0; r < r1; {
		end := m.bookEnd(r, r1)
		if next := m.vertKernel(h, hstride, xq, ds, ks, T, r, end); next > r {
			r = next
			continue
		}
		for t := range T {
			y := h[t*hstride:]
			qx, dx := q.q[(t0+t)*steps*int8Step:][:steps*int8Step], q.d[(t0+t)*nb:][:nb]
			for c := range m.f.Dim {
				y[r*m.f.Dim+c] = m.int8RowRef(r, c, qx, dx)
			}
			m.int8Scale(y, ks[t], r, r+1)
		}
		r++
	}
}

// vertRows is int8RowsT for a matrix in the tile order: each chunk of up
// to int8Chunk rows of x (interleaved) meets every whole strip once.
func (m *Matrix) vertRows(dst *tensor.Matrix, q *Int8Input, r0, r1 int) {
	_, n := m.codes8()
	steps, nb := n/64, 16*((m.in+int8Block-1)/int8Block)
	for t0 := 0; t0 < q.rows; t0 += int8Chunk {
		T := min(int8Chunk, q.rows-t0)
		m.vertRowsT(dst.Data[t0*dst.Cols:], dst.Cols, unsafe.Pointer(&q.qi[t0*steps*int8Step]), &q.di[t0*nb], q, t0, T, r0, r1)
	}
}

// vertRow is int8Rows for a matrix in the tile order, where the kernels
// run (reports whether they do).
func (m *Matrix) vertRow(y []float32, q *Int8Input, t, r0, r1 int) bool {
	if m.vert == nil || !int8Ready || !useFast {
		return false
	}
	_, n := m.codes8()
	steps, nb := n/64, 16*((m.in+int8Block-1)/int8Block)
	m.vertRowsT(y, 0, unsafe.Pointer(&q.q[t*steps*int8Step]), &q.d[t*nb], q, t, 1, r0, r1)
	return true
}

// vertStripFast is vertStrip16 where the tile kernels run (reports
// whether it ran).
func vertStripFast(dst, rows []byte, n int) bool {
	if !int8Ready || !useFast || len(rows) < vertRows*n || len(dst) < vertRows*n || n%64 != 0 || n == 0 {
		return false
	}
	vertStrip16(unsafe.Pointer(&dst[0]), unsafe.Pointer(&rows[0]), n, n/64)
	return true
}
