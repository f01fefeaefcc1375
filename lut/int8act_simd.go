//go:build goexperiment.simd && amd64

package lut

import (
	"simd/archsimd"
	"unsafe"

	"forge/tensor"
)

// int8Ready: the int8-activation kernels (int8_amd64.s) need AVX-512
// VNNI (VPDPBUSD) and VBMI (VPERMB) besides the fast kernels' AVX-512.
var int8Ready = fastReady && archsimd.X86.AVX512VNNI() && archsimd.X86.AVX512VBMI()

// int8A2: without those, the one-row kernels of int8_avx2_amd64.s run
// where the CPU has AVX2 (their sums need the lane sums Int8Input.qs).
var int8A2 = !int8Ready && archsimd.X86.AVX2()

// lut4I8 and vec2I8 are the int8-activation kernels (int8_amd64.s): for
// groups consecutive groups of eight outputs (eight scalar index rows, or
// four 2-vector ones) from w (rows of 64·steps bytes, one codebook),
// h[k] = int8RowGo of output k, bit for bit.
//
//go:noescape
func lut4I8(tab *[64]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, groups int, h *float32)

//go:noescape
func vec2I8(tab *[128]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, groups int, h *float32)

// lut4I8A2 and vec2I8A2 are the AVX2 kernels (int8_avx2_amd64.s): for
// rows consecutive index rows (scalar or 2-vector) from w, the same sums
// as lut4I8 and vec2I8 (scalar rows two at a time), for codebooks of
// |ℓ| ≤ 64 (codebookBound); qh holds the input row's lane sums 64·Σq
// per block (Int8Input.qh), where each block's sums start.
//
//go:noescape
func lut4I8A2(tab *[64]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, qh *int32, rows int, h *float32)

//go:noescape
func vec2I8A2(tab *[128]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, qh *int32, rows int, h *float32)

//go:noescape
func lut4I8A2x2(tab *[64]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, qs *int32, rows int, h *float32, xstride, dstride, hstride int)

//go:noescape
func lut4I8A2x4(tab *[64]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, qs *int32, rows int, h *float32, xstride, dstride, hstride int)

//go:noescape
func lut4I8A2x3(tab *[64]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, qs *int32, rows int, h *float32, xstride, dstride, hstride int)

//go:noescape
func vec2I8T(tab *[128]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, rows int, groups int, h *float32, hstride int)

//go:noescape
func lut4I8T1(tab *[64]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, rows int, groups int, h *float32, hstride int)

//go:noescape
func lut4I8T(tab *[64]byte, w unsafe.Pointer, steps int, xq unsafe.Pointer, ds *float32, rows int, groups int, h *float32, hstride int)

// int8SeqRows is the most rows of x for which the AVX-512 multi-row
// products run lut4I8T1 (one index row at a time, one stream of codes a
// core) rather than lut4I8T (four index rows at a time, each load of x
// shared by four of them): with few rows the kernels wait on memory, and
// one stream reads it faster; with more, the loads of x hold lut4I8T1
// back (int8rows_amd64.s, int8rows1_amd64.s).
const int8SeqRows = 2

// int8RowsT computes index rows [r0, r1) of every row of q into dst with
// the multi-row kernels (int8rows.go) and reports whether it ran: it does
// not for a single row, for one or two rows of a 2-vector matrix, or
// where q was not interleaved.
func (m *Matrix) int8RowsT(dst *tensor.Matrix, q *Int8Input, r0, r1 int) bool {
	if m.vert != nil && !int8Ready {
		return false // the tile order without its kernel (tests): the twin row by row
	}
	if int8A2 {
		return m.int8RowsA2(dst, q, r0, r1)
	}
	if q.rows < 2 || len(q.qi) == 0 || !useFast {
		return false
	}
	if m.vert != nil {
		m.vertRows(dst, q, r0, r1)
		return true
	}
	d := m.f.Dim
	if d == 2 && q.rows <= int8SeqRows {
		return false // one or two rows: row by row was faster (vec2rows_amd64.s)
	}
	idx, n := m.codes8()
	steps, nb := n/64, 16*((m.in+int8Block-1)/int8Block)
	R := 8 / d // index rows of a kernel's group of eight outputs
	for t0 := 0; t0 < q.rows; t0 += int8Chunk {
		T := min(int8Chunk, q.rows-t0)
		qc, dc := unsafe.Pointer(&q.qi[t0*steps*int8Step]), &q.di[t0*nb]
		for r := r0; r < r1; {
			end := m.bookEnd(r, r1)
			if groups := (end - r) / R; groups > 0 {
				tab, w, h := m.table8(r, 0), unsafe.Pointer(&idx[r*n]), &dst.Row(t0)[r*d]
				switch {
				case d == 2: // both components' tables, 128 bytes
					vec2I8T((*[128]byte)(unsafe.Pointer(tab)), w, steps, qc, dc, T, groups, h, dst.Cols)
				case T <= int8SeqRows:
					lut4I8T1(tab, w, steps, qc, dc, T, groups, h, dst.Cols)
				default:
					lut4I8T(tab, w, steps, qc, dc, T, groups, h, dst.Cols)
				}
				r += R * groups
			}
			for ; r < end; r++ { // fewer than a group left in the codebook's rows
				for t := t0; t < t0+T; t++ {
					for c := range d {
						dst.Row(t)[r*d+c] = m.int8RowRef(r, c, q.q[t*steps*int8Step:][:steps*int8Step], q.d[t*nb:][:nb])
					}
				}
			}
		}
	}
	for t := range q.rows {
		m.int8Scale(dst.Row(t), q.k[t], r0, r1)
	}
	return true
}

// bookEnd returns the end of index row r's codebook group, at most r1:
// a kernel call takes one codebook.
func (m *Matrix) bookEnd(r, r1 int) int {
	if m.rowsG > 0 {
		return min(r1, (r/m.rowsG+1)*m.rowsG)
	}
	return r1
}

// int8Kernel runs the kernels from index row r on as many outputs as
// they take before r1 and the end of r's codebook group (whole groups of
// eight outputs for the AVX-512 kernels, any number for the AVX2 ones),
// writing the unscaled sums to y, and returns the first row it left (r
// itself when none fits). qh is the input row's lane sums 64·Σq (AVX2 only,
// whose kernels take only 7-bit codebooks: a matrix made before int8A2
// was set, in tests, runs the twin).
func (m *Matrix) int8Kernel(y []float32, qx []int8, dx []float32, qh []int32, r, r1 int) int {
	d := m.f.Dim
	end := m.bookEnd(r, r1)
	if m.vert != nil { // the tile order without its kernels (int8Rows runs vertRow where they run)
		return r
	}
	idx, n := m.codes8()
	if int8A2 {
		if end <= r || len(qh) == 0 || !m.narrow8 {
			return r
		}
		w := unsafe.Pointer(&idx[r*n])
		if d == 1 {
			lut4I8A2(m.table8(r, 0), w, n/64, unsafe.Pointer(&qx[0]), &dx[0], &qh[0], end-r, &y[r])
		} else {
			vec2I8A2((*[128]byte)(m.tab8[m.group8(r)*128:]), w, n/64, unsafe.Pointer(&qx[0]), &dx[0], &qh[0], end-r, &y[r*2])
		}
		return end
	}
	R := 8 / d
	groups := (end - r) / R
	if groups == 0 {
		return r
	}
	w := unsafe.Pointer(&idx[r*n])
	if d == 1 {
		lut4I8(m.table8(r, 0), w, n/64, unsafe.Pointer(&qx[0]), &dx[0], groups, &y[r])
	} else {
		vec2I8((*[128]byte)(m.tab8[m.group8(r)*128:]), w, n/64, unsafe.Pointer(&qx[0]), &dx[0], groups, &y[r*2])
	}
	return r + groups*R
}

// quantPerm holds the lane orders of the activation quantizer's
// vectors: evenOdd puts 16 columns in the order [the 8 even ones, the 8
// odd ones]; swap4, swap2 and swap1 exchange lanes 4, 2 and 1 apart
// within each half of eight. A plain array, loaded into registers by
// quantBlock after quantizeFast's feature check.
var quantPerm = [4][16]uint32{
	{0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15},
	{4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11},
	{2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13},
	{1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14},
}

// quantBlock is quantizeFast's vector work on one block of x, steps ≤ 4
// steps of 128 columns (quantize_amd64.s): per vector v of 16 columns
// (16v … 16v+15 of every step), the maxima of |x| over each half of eight
// lanes into ms[v], the codes into q (even columns at q + 128s + 8v, odd
// ones 64 bytes on), their sums over each half into ss[v].
//
//go:noescape
func quantBlock(x *float32, q *int8, steps int, ms *[8][16]float32, ss *[8][16]int32, perm *[4][16]uint32)

// quantizeFast is quantizeRow's AVX-512 twin for rows of whole steps
// (len(x) a multiple of 128; ok is false otherwise), quantize8 on CPUs
// with AVX2 only; both set qs as laneSums does when it is not nil. The
// same float32 products, divisions and round-half-even, so the same
// codes, scales and k. A vector of 16 columns holds two scale groups
// (lanes 0–7, 8–15). The vector work of a block runs in assembly
// (quantBlock; the compiler's loop kept its indices and bounds on the
// stack and took 1.5–1.8× as long, BENCHMARKS.md); the float32 scalar
// work (d, k) follows it, after its VZEROUPPER, since scalar float code
// after 512-bit code runs several times slower on this host otherwise.
func quantizeFast(q []int8, d []float32, qs []int32, x []float32) (k float32, ok bool) {
	if !fastReady {
		return quantize8(q, d, qs, x)
	}
	if len(x)%int8Step != 0 || len(q) != len(x) {
		return 0, false
	}
	var ms [8][16]float32 // group maxima, broadcast over each half
	var ss [8][16]int32   // group sums of the codes, likewise
	for b := 0; 16*b < len(d); b++ {
		c0, c1 := b*int8Block, min(len(x), (b+1)*int8Block)
		quantBlock(&x[c0], &q[c0], (c1-c0)/int8Step, &ms, &ss, &quantPerm)
		for g := range 16 {
			a, n := ms[g/2][8*(g%2)], ss[g/2][8*(g%2)]
			d[16*b+g] = a / 127
			k += float32(float32(128*n) * d[16*b+g])
			if qs != nil {
				qs[16*b+g] = 128 * n
			}
		}
	}
	return k, true
}

// int8RowsA2 is int8RowsT with the AVX2 kernels: four rows of x at a
// time share each looked-up step of codes (lut4I8A2x4), then the three or
// two left (lut4I8A2x3, lut4I8A2x2); a row left alone runs the one-row
// kernel. Every row's sums are the one-row kernel's bits. (Four rows a
// pass, against three: a 256×4096 LUT4 product in cache of T = 8 rows
// 185 → 168 µs, T = 4 96 → 84; the synth-1.4b's verify block of 8 rows
// 171–219 → 147–195 ms, BENCHMARKS.md.)
func (m *Matrix) int8RowsA2(dst *tensor.Matrix, q *Int8Input, r0, r1 int) bool {
	if q.rows < 2 || len(q.qs) == 0 || m.f.Dim != 1 || !useFast {
		return false
	}
	idx, n := m.codes8()
	steps, nb := n/64, 16*((m.in+int8Block-1)/int8Block)
	t := 0
	for q.rows-t >= 2 {
		k := min(4, q.rows-t) // rows of x in this call
		qx, dx, qs := q.q[t*steps*int8Step:][:k*steps*int8Step], q.d[t*nb:][:k*nb], q.qs[t*nb:][:k*nb]
		y := dst.Data[t*dst.Cols : (t+k)*dst.Cols]
		for r := r0; r < r1; {
			end := m.bookEnd(r, r1)
			tab, w, xq := m.table8(r, 0), unsafe.Pointer(&idx[r*n]), unsafe.Pointer(&qx[0])
			switch k {
			case 4:
				lut4I8A2x4(tab, w, steps, xq, &dx[0], &qs[0], end-r, &y[r], steps*int8Step, 4*nb, 4*dst.Cols)
			case 3:
				lut4I8A2x3(tab, w, steps, xq, &dx[0], &qs[0], end-r, &y[r], steps*int8Step, 4*nb, 4*dst.Cols)
			default:
				lut4I8A2x2(tab, w, steps, xq, &dx[0], &qs[0], end-r, &y[r], steps*int8Step, 4*nb, 4*dst.Cols)
			}
			r = end
		}
		for i := t; i < t+k; i++ {
			m.int8Scale(dst.Row(i), q.k[i], r0, r1)
		}
		t += k
	}
	if t < q.rows {
		m.int8Rows(dst.Row(t), q, t, r0, r1)
	}
	return true
}

// scaleOut8 sets ys[i] = ss[i]·(c·(ys[i] − k)) eight at a time, int8Scale's
// operations in its order (so its bits), and returns how many it set
// (none without AVX2, or with the fast kernels off: the twin tests then
// compare it with the scalar loop).
func scaleOut8(ys, ss []float32, c, k float32) int {
	if !avx2 || !useFast || len(ys) < 8 {
		return 0
	}
	ss = ss[:len(ys)]
	cv, kv, i := archsimd.BroadcastFloat32x8(c), archsimd.BroadcastFloat32x8(k), 0
	for ; i+8 <= len(ys); i += 8 {
		h := archsimd.LoadFloat32x8((*[8]float32)(ys[i:]))
		archsimd.LoadFloat32x8((*[8]float32)(ss[i:])).Mul(cv.Mul(h.Sub(kv))).Store((*[8]float32)(ys[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return i
}

// avx2: the CPU has AVX2 (scaleOut8 needs nothing more; int8A2 and
// floatA2 also ask which other kernels run).
var avx2 = archsimd.X86.AVX2()
