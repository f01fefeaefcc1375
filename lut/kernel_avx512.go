//go:build goexperiment.simd && amd64

package lut

import (
	"simd/archsimd"
	"unsafe"
)

// AVX-512 kernels: 16 float32 lanes, fused multiply-add, float32 sums.
//
// Codes are decoded in registers, never through memory. A 16-byte block of
// a byte-aligned index row holds P = 8/bits codes per byte; loaded and
// zero-extended to 16 uint32 lanes (VPMOVZXBD), lane i holds byte i, whose
// phase-p code (bits b·p …) belongs to column P·i + p of the block. So
// (lane >> b·p) & (2^b−1) is a vector of 16 codes of phase p, a VPERMPS of
// the ≤16-entry codebook held in one register turns them into 16 weights,
// and one FMA multiplies them with the 16 x values of phase p — which is
// why x is first rearranged into that "phase layout" (permuteX), once per
// call. INT8 is simpler: 16 int8 codes are sign-extended (VPMOVSXBD),
// converted (VCVTDQ2PS) and FMA'd with x in natural order (P = 1).
//
// Loads go through unsafe pointers so that each is one instruction with no
// bounds check. They stay in bounds because the drivers (kernel_simd.go)
// pass only whole 16-byte blocks of rows that exist (checked against the
// slice length first) and copy a row's last partial block into a zeroed
// stack buffer; xp is sized for whole blocks (prepare). Each kernel keeps
// at most 12 vectors live (Go allocates Z0–Z14 only), so nothing spills.

// ldIdx loads the 16 code bytes at p, zero-extended to uint32 lanes.
func ldIdx(p unsafe.Pointer) archsimd.Uint32x16 {
	return archsimd.LoadUint8x16((*[16]uint8)(p)).ExtendToUint32()
}

// ldI8 loads 16 int8 codes at p as float32 lanes.
func ldI8(p unsafe.Pointer) archsimd.Float32x16 {
	return archsimd.LoadInt8x16((*[16]int8)(p)).ExtendToInt32().ConvertToFloat32()
}

// ldX loads the 16 float32 at p[i…i+15].
func ldX(p unsafe.Pointer, i int) archsimd.Float32x16 {
	return archsimd.LoadFloat32x16((*[16]float32)(unsafe.Add(p, 4*i)))
}

// hsum returns the sum of v's 16 lanes.
func hsum(v archsimd.Float32x16) float32 {
	h := v.GetLo().Add(v.GetHi())
	q := h.GetLo().Add(h.GetHi())
	q = q.AddPairs(q)
	q = q.AddPairs(q)
	return q.GetElem(0)
}

// lutRows4 returns, for the four index rows at w, w+ld, w+2·ld, w+3·ld
// (nb whole 16-byte blocks each, bits-bit codes, one shared ≤16-entry
// table), Σ_j tab[code(j)]·x[j] with x in phase layout at xp.
func lutRows4(tab *[16]float32, bits int, w unsafe.Pointer, ld, nb int, xp unsafe.Pointer) (s0, s1, s2, s3 float32) {
	t := archsimd.LoadFloat32x16(tab)
	mask := archsimd.BroadcastUint32x16(1<<bits - 1)
	P := 8 / bits
	var a0, a1, a2, a3 archsimd.Float32x16
	for b := range nb {
		q := unsafe.Add(w, 16*b)
		c0, c1 := ldIdx(q), ldIdx(unsafe.Add(q, ld))
		c2, c3 := ldIdx(unsafe.Add(q, 2*ld)), ldIdx(unsafe.Add(q, 3*ld))
		xb := unsafe.Add(xp, 64*P*b)
		for p := range P {
			x, sh := ldX(xb, 16*p), uint64(bits*p)
			a0 = t.Permute(c0.ShiftAllRight(sh).And(mask)).MulAdd(x, a0)
			a1 = t.Permute(c1.ShiftAllRight(sh).And(mask)).MulAdd(x, a1)
			a2 = t.Permute(c2.ShiftAllRight(sh).And(mask)).MulAdd(x, a2)
			a3 = t.Permute(c3.ShiftAllRight(sh).And(mask)).MulAdd(x, a3)
		}
	}
	return hsum(a0), hsum(a1), hsum(a2), hsum(a3)
}

// lut4Rows4 is lutRows4 for 4-bit codes (P = 2), unrolled: per block, the
// low nibbles are columns 2i and the high nibbles columns 2i+1.
func lut4Rows4(tab *[16]float32, w unsafe.Pointer, ld, nb int, xp unsafe.Pointer) (s0, s1, s2, s3 float32) {
	t := archsimd.LoadFloat32x16(tab)
	mask := archsimd.BroadcastUint32x16(15)
	var a0, a1, a2, a3 archsimd.Float32x16
	for b := range nb {
		q := unsafe.Add(w, 16*b)
		c0, c1 := ldIdx(q), ldIdx(unsafe.Add(q, ld))
		c2, c3 := ldIdx(unsafe.Add(q, 2*ld)), ldIdx(unsafe.Add(q, 3*ld))
		xb := unsafe.Add(xp, 128*b)
		x := ldX(xb, 0)
		a0 = t.Permute(c0.And(mask)).MulAdd(x, a0)
		a1 = t.Permute(c1.And(mask)).MulAdd(x, a1)
		a2 = t.Permute(c2.And(mask)).MulAdd(x, a2)
		a3 = t.Permute(c3.And(mask)).MulAdd(x, a3)
		x = ldX(xb, 16)
		a0 = t.Permute(c0.ShiftAllRight(4)).MulAdd(x, a0)
		a1 = t.Permute(c1.ShiftAllRight(4)).MulAdd(x, a1)
		a2 = t.Permute(c2.ShiftAllRight(4)).MulAdd(x, a2)
		a3 = t.Permute(c3.ShiftAllRight(4)).MulAdd(x, a3)
	}
	return hsum(a0), hsum(a1), hsum(a2), hsum(a3)
}

// lutTile4 returns Σ_j tab[code(j)]·x_k[j] for one index row at w (nb
// blocks) and four x rows in phase layout at x0…x3 (which may repeat).
func lutTile4(tab *[16]float32, bits int, w unsafe.Pointer, nb int, x0, x1, x2, x3 unsafe.Pointer) (s0, s1, s2, s3 float32) {
	t := archsimd.LoadFloat32x16(tab)
	mask := archsimd.BroadcastUint32x16(1<<bits - 1)
	P := 8 / bits
	var a0, a1, a2, a3 archsimd.Float32x16
	for b := range nb {
		c := ldIdx(unsafe.Add(w, 16*b))
		for p := range P {
			v := t.Permute(c.ShiftAllRight(uint64(bits * p)).And(mask))
			i := 16 * (P*b + p)
			a0 = v.MulAdd(ldX(x0, i), a0)
			a1 = v.MulAdd(ldX(x1, i), a1)
			a2 = v.MulAdd(ldX(x2, i), a2)
			a3 = v.MulAdd(ldX(x3, i), a3)
		}
	}
	return hsum(a0), hsum(a1), hsum(a2), hsum(a3)
}

// vec2Rows2 is the T = 1 kernel of 2-vector formats: index rows at w and
// w+ld (one shared codebook, components t0 and t1), each code selecting
// the weights of two output rows. Results: (row 0, comp 0), (row 0,
// comp 1), (row 1, comp 0), (row 1, comp 1).
func vec2Rows2(t0, t1 *[16]float32, bits int, w unsafe.Pointer, ld, nb int, xp unsafe.Pointer) (s00, s01, s10, s11 float32) {
	u0, u1 := archsimd.LoadFloat32x16(t0), archsimd.LoadFloat32x16(t1)
	mask := archsimd.BroadcastUint32x16(1<<bits - 1)
	P := 8 / bits
	var a00, a01, a10, a11 archsimd.Float32x16
	for b := range nb {
		q := unsafe.Add(w, 16*b)
		c0, c1 := ldIdx(q), ldIdx(unsafe.Add(q, ld))
		xb := unsafe.Add(xp, 64*P*b)
		for p := range P {
			x, sh := ldX(xb, 16*p), uint64(bits*p)
			i := c0.ShiftAllRight(sh).And(mask)
			a00 = u0.Permute(i).MulAdd(x, a00)
			a01 = u1.Permute(i).MulAdd(x, a01)
			i = c1.ShiftAllRight(sh).And(mask)
			a10 = u0.Permute(i).MulAdd(x, a10)
			a11 = u1.Permute(i).MulAdd(x, a11)
		}
	}
	return hsum(a00), hsum(a01), hsum(a10), hsum(a11)
}

// vec2Tile2 is the T > 1 kernel of 2-vector formats: one index row at w,
// two x rows x0, x1. Results: (comp 0, x0), (comp 1, x0), (comp 0, x1),
// (comp 1, x1).
func vec2Tile2(t0, t1 *[16]float32, bits int, w unsafe.Pointer, nb int, x0, x1 unsafe.Pointer) (s00, s10, s01, s11 float32) {
	u0, u1 := archsimd.LoadFloat32x16(t0), archsimd.LoadFloat32x16(t1)
	mask := archsimd.BroadcastUint32x16(1<<bits - 1)
	P := 8 / bits
	var a00, a10, a01, a11 archsimd.Float32x16
	for b := range nb {
		c := ldIdx(unsafe.Add(w, 16*b))
		for p := range P {
			i := c.ShiftAllRight(uint64(bits * p)).And(mask)
			v0, v1 := u0.Permute(i), u1.Permute(i)
			k := 16 * (P*b + p)
			y0, y1 := ldX(x0, k), ldX(x1, k)
			a00, a10 = v0.MulAdd(y0, a00), v1.MulAdd(y0, a10)
			a01, a11 = v0.MulAdd(y1, a01), v1.MulAdd(y1, a11)
		}
	}
	return hsum(a00), hsum(a10), hsum(a01), hsum(a11)
}

// i8Rows4 returns Σ_j c[j]·x[j] for four INT8 code rows at w + k·ld (nb
// blocks of 16 codes) and one x row at xp.
func i8Rows4(w unsafe.Pointer, ld, nb int, xp unsafe.Pointer) (s0, s1, s2, s3 float32) {
	var a0, a1, a2, a3 archsimd.Float32x16
	for b := range nb {
		q := unsafe.Add(w, 16*b)
		x := ldX(xp, 16*b)
		a0 = ldI8(q).MulAdd(x, a0)
		a1 = ldI8(unsafe.Add(q, ld)).MulAdd(x, a1)
		a2 = ldI8(unsafe.Add(q, 2*ld)).MulAdd(x, a2)
		a3 = ldI8(unsafe.Add(q, 3*ld)).MulAdd(x, a3)
	}
	return hsum(a0), hsum(a1), hsum(a2), hsum(a3)
}

// i8Tile4 returns Σ_j c[j]·x_k[j] for one INT8 code row at w and four x
// rows x0…x3 (which may repeat).
func i8Tile4(w unsafe.Pointer, nb int, x0, x1, x2, x3 unsafe.Pointer) (s0, s1, s2, s3 float32) {
	var a0, a1, a2, a3 archsimd.Float32x16
	for b := range nb {
		v := ldI8(unsafe.Add(w, 16*b))
		a0 = v.MulAdd(ldX(x0, 16*b), a0)
		a1 = v.MulAdd(ldX(x1, 16*b), a1)
		a2 = v.MulAdd(ldX(x2, 16*b), a2)
		a3 = v.MulAdd(ldX(x3, 16*b), a3)
	}
	return hsum(a0), hsum(a1), hsum(a2), hsum(a3)
}
