//go:build goexperiment.simd && amd64

package lut

import (
	"unsafe"

	"forge/tensor"
)

// lut4I8V1 … lut4I8V8 are the tile kernels (int8vert_amd64.s) for one to
// eight rows of x: for strips consecutive strips of tiles from w (one
// table), h[t·hstride + 16·i + r] = F of index row 16i + r and x row t
// (int8VertRowGo's value, bit for bit). x and its scales are laid out as
// the multi-row kernels take them (Int8Input.interleave; one row's q and
// d as they are).
//
//go:noescape
func lut4I8V1(tab *[64]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, strips int, h *float32, hstride int)

//go:noescape
func lut4I8V2(tab *[64]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, strips int, h *float32, hstride int)

//go:noescape
func lut4I8V3(tab *[64]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, strips int, h *float32, hstride int)

//go:noescape
func lut4I8V4(tab *[64]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, strips int, h *float32, hstride int)

//go:noescape
func lut4I8V5(tab *[64]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, strips int, h *float32, hstride int)

//go:noescape
func lut4I8V6(tab *[64]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, strips int, h *float32, hstride int)

//go:noescape
func lut4I8V7(tab *[64]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, strips int, h *float32, hstride int)

//go:noescape
func lut4I8V8(tab *[64]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, strips int, h *float32, hstride int)

// vertStrip16 is vertStrip in assembly (int8vert_amd64.s): the tiles of
// one strip, 16 index rows of n bytes (steps of 64) from rows, to dst.
//
//go:noescape
func vertStrip16(dst unsafe.Pointer, rows unsafe.Pointer, n int, steps int)

var vertKernels = [int8Chunk + 1]func(tab *[64]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, strips int, h *float32, hstride int){
	nil, lut4I8V1, lut4I8V2, lut4I8V3, lut4I8V4, lut4I8V5, lut4I8V6, lut4I8V7, lut4I8V8,
}

// vertKernel runs the tile kernel for T rows of x on the whole strips
// from index row r (a strip's first row) up to end, writing row t's sums
// to h[t·hstride + …], and returns the first row it left (r itself when
// r starts no strip or none fits).
func (m *Matrix) vertKernel(h []float32, hstride int, xq unsafe.Pointer, ds *float32, T, r, end int) int {
	strips := (end - r) / vertRows
	if r%vertRows != 0 || strips <= 0 {
		return r
	}
	_, n := m.codes8()
	w := m.tiles(r, r+strips*vertRows)
	vertKernels[T](m.table8(r, 0), unsafe.Pointer(&w[r*n]), n/64, xq, ds, strips, &h[r], hstride)
	return r + strips*vertRows
}

// vertRowsT is int8RowsT for a matrix in the tile order: each chunk of
// up to int8Chunk rows of x (interleaved) meets every whole strip once;
// rows outside whole strips run the twin.
func (m *Matrix) vertRowsT(dst *tensor.Matrix, q *Int8Input, r0, r1 int) {
	_, n := m.codes8()
	steps, nb := n/64, 16*((m.in+int8Block-1)/int8Block)
	for t0 := 0; t0 < q.rows; t0 += int8Chunk {
		T := min(int8Chunk, q.rows-t0)
		qc, dc := unsafe.Pointer(&q.qi[t0*steps*int8Step]), &q.di[t0*nb]
		for r := r0; r < r1; {
			end := m.bookEnd(r, r1)
			if next := m.vertKernel(dst.Data[t0*dst.Cols:], dst.Cols, qc, dc, T, r, end); next > r {
				r = next
				continue
			}
			for t := t0; t < t0+T; t++ {
				dst.Row(t)[r] = m.int8RowRef(r, 0, q.q[t*steps*int8Step:][:steps*int8Step], q.d[t*nb:][:nb])
			}
			r++
		}
	}
	for t := range q.rows {
		m.int8Scale(dst.Row(t), q.k[t], r0, r1)
	}
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
