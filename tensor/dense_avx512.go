//go:build goexperiment.simd && amd64

package tensor

import (
	"simd/archsimd"
	"unsafe"
)

// AVX-512 kernels (see kernels): 16 float32 lanes, fused multiply-add,
// float32 accumulation.
//
// The main loops load through unsafe pointers at element j so that each
// load is one instruction with no bounds check. They stay in bounds because
// every slice is first re-sliced to what the loop reads (x rows to n =
// len(x), the weights of an R-row kernel to ·ldw + n), which panics
// if it is too short, and the loops run while j+16 ≤ n. The column tail (n mod 16) is one extra
// step with zero-filled partial loads of both operands, so nothing past the
// end of a weight row (the next row, or NaN) is ever read.

// avx512Kernels is the kernel set for CPUs with AVX-512 F/BW/DQ/VL.
var avx512Kernels = kernelSet{
	name:      "avx512",
	rowsExact: true,
	f32:       kernels[float32]{dot1x1F32x16, dot8x1F32x16, dot4x2F32x16},
	bf16:      kernels[uint16]{dot1x1BF16x16, dot8x1BF16x16, dot4x2BF16x16},
	gemm:      &gemmAVX512,
}

// ldXx16 loads the 16 float32 at p[j…j+15] (x rows).
func ldXx16(p unsafe.Pointer, j int) archsimd.Float32x16 {
	return archsimd.LoadFloat32x16((*[16]float32)(unsafe.Add(p, 4*j)))
}

// ldF32x16 loads the 16 float32 weights at p[j…j+15].
func ldF32x16(p unsafe.Pointer, j int) archsimd.Float32x16 { return ldXx16(p, j) }

// ldXx16Part loads up to 16 float32 (an x row's tail), zero-filled. It
// copies through an array instead of using LoadFloat32x16SlicePart, whose
// masked load of a short slice trips -race's checkptr.
func ldXx16Part(s []float32) archsimd.Float32x16 {
	var b [16]float32
	copy(b[:], s)
	return archsimd.LoadFloat32x16(&b)
}

// ldF32x16Part loads up to 16 float32 weights, zero-filled.
func ldF32x16Part(w []float32) archsimd.Float32x16 { return ldXx16Part(w) }

// ldBF16x16 loads the 16 bfloat16 weights at p[j…j+15] and widens them
// exactly: a bf16 bit pattern zero-extended to 32 bits (VPMOVZXWD) and
// shifted left by 16 (VPSLLD) is the float32 of the same value.
func ldBF16x16(p unsafe.Pointer, j int) archsimd.Float32x16 {
	u := archsimd.LoadUint16x16((*[16]uint16)(unsafe.Add(p, 2*j)))
	return u.ExtendToUint32().ShiftAllLeft(16).AsFloat32x16()
}

// ldBF16x16Part is ldBF16x16 for up to 16 weights, zero-filled.
func ldBF16x16Part(w []uint16) archsimd.Float32x16 {
	var b [16]uint16
	copy(b[:], w)
	return archsimd.LoadUint16x16(&b).ExtendToUint32().ShiftAllLeft(16).AsFloat32x16()
}

// hsumx16 returns the sum of v's 16 lanes.
func hsumx16(v archsimd.Float32x16) float32 {
	h := v.GetLo().Add(v.GetHi())
	q := h.GetLo().Add(h.GetHi())
	q = q.AddPairs(q)
	q = q.AddPairs(q)
	return q.GetElem(0)
}

// dot1x1F32x16 is kernels.d1x1 for float32 weights, 16 lanes, two
// accumulators so that consecutive FMAs are independent.
func dot1x1F32x16(w []float32, x []float32) float32 {
	n := len(x)
	w = w[:n]
	var a0, a1 archsimd.Float32x16
	m := n &^ 15
	if m < n {
		a0 = ldF32x16Part(w[m:]).MulAdd(ldXx16Part(x[m:]), a0)
	}
	if m == 0 {
		return hsumx16(a0)
	}
	pw, px := unsafe.Pointer(&w[0]), unsafe.Pointer(&x[0])
	j := 0
	for ; j+32 <= m; j += 32 {
		a0 = ldF32x16(pw, j).MulAdd(ldXx16(px, j), a0)
		a1 = ldF32x16(pw, j+16).MulAdd(ldXx16(px, j+16), a1)
	}
	if j < m {
		a0 = ldF32x16(pw, j).MulAdd(ldXx16(px, j), a0)
	}
	return hsumx16(a0.Add(a1))
}

// dot8x1F32x16 is kernels.d8x1 for float32 weights: eight weight rows (eight
// memory streams, which DRAM serves faster than four), one x row (the T = 1
// decode kernel), eight accumulators. Go's scheduler hoists all eight
// weight loads, so a few vectors spill to the stack; the kernel is memory
// bound and the extra L1 traffic does not show.
func dot8x1F32x16(w []float32, ldw int, x []float32) (s0, s1, s2, s3, s4, s5, s6, s7 float32) {
	n := len(x)
	w = w[:7*ldw+n]
	var a0, a1, a2, a3, a4, a5, a6, a7 archsimd.Float32x16
	m := n &^ 15
	if m < n {
		v := ldXx16Part(x[m:])
		r := func(i int) []float32 { return w[i*ldw+m : i*ldw+n] }
		a0 = ldF32x16Part(r(0)).MulAdd(v, a0)
		a1 = ldF32x16Part(r(1)).MulAdd(v, a1)
		a2 = ldF32x16Part(r(2)).MulAdd(v, a2)
		a3 = ldF32x16Part(r(3)).MulAdd(v, a3)
		a4 = ldF32x16Part(r(4)).MulAdd(v, a4)
		a5 = ldF32x16Part(r(5)).MulAdd(v, a5)
		a6 = ldF32x16Part(r(6)).MulAdd(v, a6)
		a7 = ldF32x16Part(r(7)).MulAdd(v, a7)
	}
	if m > 0 {
		px, p, l := unsafe.Pointer(&x[0]), unsafe.Pointer(&w[0]), ldw*4
		for j := 0; j < m; j += 16 {
			v := ldXx16(px, j)
			a0 = ldF32x16(p, j).MulAdd(v, a0)
			a1 = ldF32x16(unsafe.Add(p, l), j).MulAdd(v, a1)
			a2 = ldF32x16(unsafe.Add(p, 2*l), j).MulAdd(v, a2)
			a3 = ldF32x16(unsafe.Add(p, 3*l), j).MulAdd(v, a3)
			a4 = ldF32x16(unsafe.Add(p, 4*l), j).MulAdd(v, a4)
			a5 = ldF32x16(unsafe.Add(p, 5*l), j).MulAdd(v, a5)
			a6 = ldF32x16(unsafe.Add(p, 6*l), j).MulAdd(v, a6)
			a7 = ldF32x16(unsafe.Add(p, 7*l), j).MulAdd(v, a7)
		}
	}
	return hsumx16(a0), hsumx16(a1), hsumx16(a2), hsumx16(a3),
		hsumx16(a4), hsumx16(a5), hsumx16(a6), hsumx16(a7)
}

// dot4x2F32x16 is kernels.d4x2 for float32 weights: four weight rows (four
// memory streams) × two x rows in eight accumulators; with the two x
// vectors, one weight vector and its copy (an FMA overwrites its receiver)
// that is twelve live vector registers.
func dot4x2F32x16(w []float32, ldw int, x0, x1 []float32) (s00, s01, s10, s11, s20, s21, s30, s31 float32) {
	n := len(x0)
	w, x1 = w[:3*ldw+n], x1[:n]
	var a0, a1, b0, b1, c0, c1, d0, d1 archsimd.Float32x16
	m := n &^ 15
	if m < n {
		y0, y1 := ldXx16Part(x0[m:]), ldXx16Part(x1[m:])
		r := func(i int) []float32 { return w[i*ldw+m : i*ldw+n] }
		u := ldF32x16Part(r(0))
		a0, a1 = u.MulAdd(y0, a0), u.MulAdd(y1, a1)
		u = ldF32x16Part(r(1))
		b0, b1 = u.MulAdd(y0, b0), u.MulAdd(y1, b1)
		u = ldF32x16Part(r(2))
		c0, c1 = u.MulAdd(y0, c0), u.MulAdd(y1, c1)
		u = ldF32x16Part(r(3))
		d0, d1 = u.MulAdd(y0, d0), u.MulAdd(y1, d1)
	}
	if m > 0 {
		p, l := unsafe.Pointer(&w[0]), ldw*4
		q0, q1 := unsafe.Pointer(&x0[0]), unsafe.Pointer(&x1[0])
		for j := 0; j < m; j += 16 {
			y0, y1 := ldXx16(q0, j), ldXx16(q1, j)
			u := ldF32x16(p, j)
			a0, a1 = u.MulAdd(y0, a0), u.MulAdd(y1, a1)
			u = ldF32x16(unsafe.Add(p, l), j)
			b0, b1 = u.MulAdd(y0, b0), u.MulAdd(y1, b1)
			u = ldF32x16(unsafe.Add(p, 2*l), j)
			c0, c1 = u.MulAdd(y0, c0), u.MulAdd(y1, c1)
			u = ldF32x16(unsafe.Add(p, 3*l), j)
			d0, d1 = u.MulAdd(y0, d0), u.MulAdd(y1, d1)
		}
	}
	return hsumx16(a0), hsumx16(a1), hsumx16(b0), hsumx16(b1),
		hsumx16(c0), hsumx16(c1), hsumx16(d0), hsumx16(d1)
}

// dot1x1BF16x16 is kernels.d1x1 for bfloat16 weights, 16 lanes, two
// accumulators so that consecutive FMAs are independent.
func dot1x1BF16x16(w []uint16, x []float32) float32 {
	n := len(x)
	w = w[:n]
	var a0, a1 archsimd.Float32x16
	m := n &^ 15
	if m < n {
		a0 = ldBF16x16Part(w[m:]).MulAdd(ldXx16Part(x[m:]), a0)
	}
	if m == 0 {
		return hsumx16(a0)
	}
	pw, px := unsafe.Pointer(&w[0]), unsafe.Pointer(&x[0])
	j := 0
	for ; j+32 <= m; j += 32 {
		a0 = ldBF16x16(pw, j).MulAdd(ldXx16(px, j), a0)
		a1 = ldBF16x16(pw, j+16).MulAdd(ldXx16(px, j+16), a1)
	}
	if j < m {
		a0 = ldBF16x16(pw, j).MulAdd(ldXx16(px, j), a0)
	}
	return hsumx16(a0.Add(a1))
}

// dot8x1BF16x16 is kernels.d8x1 for bfloat16 weights: eight weight rows (eight
// memory streams, which DRAM serves faster than four), one x row (the T = 1
// decode kernel), eight accumulators. Go's scheduler hoists all eight
// weight loads, so a few vectors spill to the stack; the kernel is memory
// bound and the extra L1 traffic does not show.
func dot8x1BF16x16(w []uint16, ldw int, x []float32) (s0, s1, s2, s3, s4, s5, s6, s7 float32) {
	n := len(x)
	w = w[:7*ldw+n]
	var a0, a1, a2, a3, a4, a5, a6, a7 archsimd.Float32x16
	m := n &^ 15
	if m < n {
		v := ldXx16Part(x[m:])
		r := func(i int) []uint16 { return w[i*ldw+m : i*ldw+n] }
		a0 = ldBF16x16Part(r(0)).MulAdd(v, a0)
		a1 = ldBF16x16Part(r(1)).MulAdd(v, a1)
		a2 = ldBF16x16Part(r(2)).MulAdd(v, a2)
		a3 = ldBF16x16Part(r(3)).MulAdd(v, a3)
		a4 = ldBF16x16Part(r(4)).MulAdd(v, a4)
		a5 = ldBF16x16Part(r(5)).MulAdd(v, a5)
		a6 = ldBF16x16Part(r(6)).MulAdd(v, a6)
		a7 = ldBF16x16Part(r(7)).MulAdd(v, a7)
	}
	if m > 0 {
		px, p, l := unsafe.Pointer(&x[0]), unsafe.Pointer(&w[0]), ldw*2
		for j := 0; j < m; j += 16 {
			v := ldXx16(px, j)
			a0 = ldBF16x16(p, j).MulAdd(v, a0)
			a1 = ldBF16x16(unsafe.Add(p, l), j).MulAdd(v, a1)
			a2 = ldBF16x16(unsafe.Add(p, 2*l), j).MulAdd(v, a2)
			a3 = ldBF16x16(unsafe.Add(p, 3*l), j).MulAdd(v, a3)
			a4 = ldBF16x16(unsafe.Add(p, 4*l), j).MulAdd(v, a4)
			a5 = ldBF16x16(unsafe.Add(p, 5*l), j).MulAdd(v, a5)
			a6 = ldBF16x16(unsafe.Add(p, 6*l), j).MulAdd(v, a6)
			a7 = ldBF16x16(unsafe.Add(p, 7*l), j).MulAdd(v, a7)
		}
	}
	return hsumx16(a0), hsumx16(a1), hsumx16(a2), hsumx16(a3),
		hsumx16(a4), hsumx16(a5), hsumx16(a6), hsumx16(a7)
}

// dot4x2BF16x16 is kernels.d4x2 for bfloat16 weights: four weight rows (four
// memory streams) × two x rows in eight accumulators; with the two x
// vectors, one weight vector and its copy (an FMA overwrites its receiver)
// that is twelve live vector registers.
func dot4x2BF16x16(w []uint16, ldw int, x0, x1 []float32) (s00, s01, s10, s11, s20, s21, s30, s31 float32) {
	n := len(x0)
	w, x1 = w[:3*ldw+n], x1[:n]
	var a0, a1, b0, b1, c0, c1, d0, d1 archsimd.Float32x16
	m := n &^ 15
	if m < n {
		y0, y1 := ldXx16Part(x0[m:]), ldXx16Part(x1[m:])
		r := func(i int) []uint16 { return w[i*ldw+m : i*ldw+n] }
		u := ldBF16x16Part(r(0))
		a0, a1 = u.MulAdd(y0, a0), u.MulAdd(y1, a1)
		u = ldBF16x16Part(r(1))
		b0, b1 = u.MulAdd(y0, b0), u.MulAdd(y1, b1)
		u = ldBF16x16Part(r(2))
		c0, c1 = u.MulAdd(y0, c0), u.MulAdd(y1, c1)
		u = ldBF16x16Part(r(3))
		d0, d1 = u.MulAdd(y0, d0), u.MulAdd(y1, d1)
	}
	if m > 0 {
		p, l := unsafe.Pointer(&w[0]), ldw*2
		q0, q1 := unsafe.Pointer(&x0[0]), unsafe.Pointer(&x1[0])
		for j := 0; j < m; j += 16 {
			y0, y1 := ldXx16(q0, j), ldXx16(q1, j)
			u := ldBF16x16(p, j)
			a0, a1 = u.MulAdd(y0, a0), u.MulAdd(y1, a1)
			u = ldBF16x16(unsafe.Add(p, l), j)
			b0, b1 = u.MulAdd(y0, b0), u.MulAdd(y1, b1)
			u = ldBF16x16(unsafe.Add(p, 2*l), j)
			c0, c1 = u.MulAdd(y0, c0), u.MulAdd(y1, c1)
			u = ldBF16x16(unsafe.Add(p, 3*l), j)
			d0, d1 = u.MulAdd(y0, d0), u.MulAdd(y1, d1)
		}
	}
	return hsumx16(a0), hsumx16(a1), hsumx16(b0), hsumx16(b1),
		hsumx16(c0), hsumx16(c1), hsumx16(d0), hsumx16(d1)
}
