//go:build goexperiment.simd && amd64

package tensor

import (
	"math"
	"simd/archsimd"
	"unsafe"
)

// Panel packers for the vector GEMM kernels (AVX2; the AVX-512 set uses
// them too). They transpose 8×8 blocks in registers: eight rows of W are
// loaded, interleaved in three rounds (16-, 32-, 64-bit for bf16, whose
// columns are widened afterwards; 32-, 64-, 128-bit for f32) into eight
// columns, each stored as 8 consecutive float32 of a panel column. Rows and
// columns past the last whole block are packed element by element
// (packBF16Block, packF32Block).

// packBF16x8 is gemmKernels.packBF16 by 8×8 blocks.
func packBF16x8(p []float32, nr int, w []uint16, ldw, rows, kc int) {
	p = p[:kc*nr]
	r8, k8 := rows&^7, kc&^7
	if k8 > 0 {
		for r := 0; r < r8; r += 8 {
			src := w[r*ldw:][:7*ldw+k8] // rows r…r+7, columns [0, k8)
			ps, pp := unsafe.Pointer(&src[0]), unsafe.Pointer(&p[r])
			for j := 0; j < k8; j += 8 {
				transposeBF16x8(unsafe.Add(ps, 2*j), 2*ldw, unsafe.Add(pp, 4*j*nr), 4*nr)
			}
		}
	}
	packBF16Block(p, nr, w, ldw, 0, r8, k8, kc)   // columns past the blocks
	packBF16Block(p, nr, w, ldw, r8, rows, 0, kc) // rows past the blocks
	zeroPanelRows(p, nr, rows, kc)
}

// transposeBF16x8 widens the 8×8 bf16 block at s (row stride ls bytes)
// into float32 and stores it transposed at d (row stride ld bytes).
func transposeBF16x8(s unsafe.Pointer, ls int, d unsafe.Pointer, ld int) {
	row := func(i int) archsimd.Uint16x8 {
		return archsimd.LoadUint16x8((*[8]uint16)(unsafe.Add(s, i*ls)))
	}
	a0, a1 := row(0), row(1)
	b0, b1 := a0.InterleaveLo(a1).AsUint32x4(), a0.InterleaveHi(a1).AsUint32x4()
	a2, a3 := row(2), row(3)
	b2, b3 := a2.InterleaveLo(a3).AsUint32x4(), a2.InterleaveHi(a3).AsUint32x4()
	c0, c1 := b0.InterleaveLo(b2).AsUint64x2(), b0.InterleaveHi(b2).AsUint64x2()
	c2, c3 := b1.InterleaveLo(b3).AsUint64x2(), b1.InterleaveHi(b3).AsUint64x2()
	a4, a5 := row(4), row(5)
	b4, b5 := a4.InterleaveLo(a5).AsUint32x4(), a4.InterleaveHi(a5).AsUint32x4()
	a6, a7 := row(6), row(7)
	b6, b7 := a6.InterleaveLo(a7).AsUint32x4(), a6.InterleaveHi(a7).AsUint32x4()
	c4, c5 := b4.InterleaveLo(b6).AsUint64x2(), b4.InterleaveHi(b6).AsUint64x2()
	c6, c7 := b5.InterleaveLo(b7).AsUint64x2(), b5.InterleaveHi(b7).AsUint64x2()
	col := func(i int, v archsimd.Uint64x2) {
		f := v.AsUint16x8().ExtendToUint32().ShiftAllLeft(16).AsFloat32x8()
		f.Store((*[8]float32)(unsafe.Add(d, i*ld)))
	}
	col(0, c0.InterleaveLo(c4))
	col(1, c0.InterleaveHi(c4))
	col(2, c1.InterleaveLo(c5))
	col(3, c1.InterleaveHi(c5))
	col(4, c2.InterleaveLo(c6))
	col(5, c2.InterleaveHi(c6))
	col(6, c3.InterleaveLo(c7))
	col(7, c3.InterleaveHi(c7))
}

// packF32x8 is gemmKernels.packF32 by 8×8 blocks.
func packF32x8(p []float32, nr int, w []float32, ldw, rows, kc int) {
	p = p[:kc*nr]
	r8, k8 := rows&^7, kc&^7
	if k8 > 0 {
		for r := 0; r < r8; r += 8 {
			src := w[r*ldw:][:7*ldw+k8]
			ps, pp := unsafe.Pointer(&src[0]), unsafe.Pointer(&p[r])
			for j := 0; j < k8; j += 8 {
				transposeF32x8(unsafe.Add(ps, 4*j), 4*ldw, unsafe.Add(pp, 4*j*nr), 4*nr)
			}
		}
	}
	packF32Block(p, nr, w, ldw, 0, r8, k8, kc)   // columns past the blocks
	packF32Block(p, nr, w, ldw, r8, rows, 0, kc) // rows past the blocks
	zeroPanelRows(p, nr, rows, kc)
}

// transposeF32x8 stores the 8×8 float32 block at s (row stride ls bytes)
// transposed at d (row stride ld bytes).
func transposeF32x8(s unsafe.Pointer, ls int, d unsafe.Pointer, ld int) {
	row := func(i int) archsimd.Uint32x8 {
		return archsimd.LoadUint32x8((*[8]uint32)(unsafe.Add(s, i*ls)))
	}
	// Within each 128-bit half (columns 0–3 | 4–7):
	a0, a1 := row(0), row(1)
	b0, b1 := a0.InterleaveLoGrouped(a1).AsUint64x4(), a0.InterleaveHiGrouped(a1).AsUint64x4()
	a2, a3 := row(2), row(3)
	b2, b3 := a2.InterleaveLoGrouped(a3).AsUint64x4(), a2.InterleaveHiGrouped(a3).AsUint64x4()
	c0, c1 := b0.InterleaveLoGrouped(b2).AsUint32x8(), b0.InterleaveHiGrouped(b2).AsUint32x8() // rows 0–3 of columns 0|4, 1|5
	c2, c3 := b1.InterleaveLoGrouped(b3).AsUint32x8(), b1.InterleaveHiGrouped(b3).AsUint32x8() // columns 2|6, 3|7
	a4, a5 := row(4), row(5)
	b4, b5 := a4.InterleaveLoGrouped(a5).AsUint64x4(), a4.InterleaveHiGrouped(a5).AsUint64x4()
	a6, a7 := row(6), row(7)
	b6, b7 := a6.InterleaveLoGrouped(a7).AsUint64x4(), a6.InterleaveHiGrouped(a7).AsUint64x4()
	c4, c5 := b4.InterleaveLoGrouped(b6).AsUint32x8(), b4.InterleaveHiGrouped(b6).AsUint32x8()
	c6, c7 := b5.InterleaveLoGrouped(b7).AsUint32x8(), b5.InterleaveHiGrouped(b7).AsUint32x8()
	col := func(i int, v archsimd.Uint32x8) {
		v.Store((*[8]uint32)(unsafe.Add(d, i*ld)))
	}
	col(0, c0.Select128FromPair(0, 2, c4))
	col(4, c0.Select128FromPair(1, 3, c4))
	col(1, c1.Select128FromPair(0, 2, c5))
	col(5, c1.Select128FromPair(1, 3, c5))
	col(2, c2.Select128FromPair(0, 2, c6))
	col(6, c2.Select128FromPair(1, 3, c6))
	col(3, c3.Select128FromPair(0, 2, c7))
	col(7, c3.Select128FromPair(1, 3, c7))
}

// packF16 is gemmKernels.packF16 for the transposed panel (by table,
// element by element: there is no vector f16 widening).
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
