//go:build goexperiment.simd && amd64

package tensor

import (
	"simd/archsimd"
	"unsafe"
)

// AVX2+FMA kernels (see kernels): the AVX-512 kernels (dense_avx512.go,
// whose comment on unsafe loads applies here too) at 8 float32 lanes, for
// CPUs without AVX-512.

// avx2Kernels is the kernel set for CPUs with AVX2 and FMA.
var avx2Kernels = kernelSet{
	name:      "avx2",
	rowsExact: true,
	f32:       kernels[float32]{dot1x1F32x8, dot8x1F32x8, dot4x2F32x8},
	bf16:      kernels[uint16]{dot1x1BF16x8, dot8x1BF16x8, dot4x2BF16x8},
	gemm:      &gemmAVX2,
}

// ldXx8 loads the 8 float32 at p[j…j+7] (x rows).
func ldXx8(p unsafe.Pointer, j int) archsimd.Float32x8 {
	return archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p, 4*j)))
}

// ldF32x8 loads the 8 float32 weights at p[j…j+7].
func ldF32x8(p unsafe.Pointer, j int) archsimd.Float32x8 { return ldXx8(p, j) }

// ldXx8Part loads up to 8 float32 (an x row's tail), zero-filled. It
// copies through an array instead of using LoadFloat32x8SlicePart, whose
// masked load of a short slice trips -race's checkptr.
func ldXx8Part(s []float32) archsimd.Float32x8 {
	var b [8]float32
	copy(b[:], s)
	return archsimd.LoadFloat32x8(&b)
}

// ldF32x8Part loads up to 8 float32 weights, zero-filled.
func ldF32x8Part(w []float32) archsimd.Float32x8 { return ldXx8Part(w) }

// ldBF16x8 loads the 8 bfloat16 weights at p[j…j+7] and widens them
// exactly (zero-extend to 32 bits, shift left 16).
func ldBF16x8(p unsafe.Pointer, j int) archsimd.Float32x8 {
	u := archsimd.LoadUint16x8((*[8]uint16)(unsafe.Add(p, 2*j)))
	return u.ExtendToUint32().ShiftAllLeft(16).AsFloat32x8()
}

// ldBF16x8Part is ldBF16x8 for up to 8 weights, zero-filled.
func ldBF16x8Part(w []uint16) archsimd.Float32x8 {
	var b [8]uint16
	copy(b[:], w)
	return archsimd.LoadUint16x8(&b).ExtendToUint32().ShiftAllLeft(16).AsFloat32x8()
}

// hsumx8 returns the sum of v's 8 lanes.
func hsumx8(v archsimd.Float32x8) float32 {
	q := v.GetLo().Add(v.GetHi())
	q = q.AddPairs(q)
	q = q.AddPairs(q)
	// The lane leaves through a general register and a legacy-SSE MOVD:
	// clear the upper state first (ClearUpper says why).
	archsimd.ClearAVXUpperBits()
	return q.GetElem(0)
}

// dot1x1F32x8 is kernels.d1x1 for float32 weights, 8 lanes, two
// accumulators so that consecutive FMAs are independent.
func dot1x1F32x8(w []float32, x []float32) float32 {
	n := len(x)
	w = w[:n]
	var a0, a1 archsimd.Float32x8
	m := n &^ 7
	if m < n {
		a0 = ldF32x8Part(w[m:]).MulAdd(ldXx8Part(x[m:]), a0)
	}
	if m == 0 {
		return hsumx8(a0)
	}
	pw, px := unsafe.Pointer(&w[0]), unsafe.Pointer(&x[0])
	j := 0
	for ; j+16 <= m; j += 16 {
		a0 = ldF32x8(pw, j).MulAdd(ldXx8(px, j), a0)
		a1 = ldF32x8(pw, j+8).MulAdd(ldXx8(px, j+8), a1)
	}
	if j < m {
		a0 = ldF32x8(pw, j).MulAdd(ldXx8(px, j), a0)
	}
	return hsumx8(a0.Add(a1))
}

// dot8x1F32x8 is kernels.d8x1 for float32 weights: eight weight rows (eight
// memory streams, which DRAM serves faster than four), one x row (the T = 1
// decode kernel), eight accumulators. Go's scheduler hoists all eight
// weight loads, so a few vectors spill to the stack; the kernel is memory
// bound and the extra L1 traffic does not show.
func dot8x1F32x8(w []float32, ldw int, x []float32) (s0, s1, s2, s3, s4, s5, s6, s7 float32) {
	n := len(x)
	w = w[:7*ldw+n]
	var a0, a1, a2, a3, a4, a5, a6, a7 archsimd.Float32x8
	m := n &^ 7
	if m < n {
		v := ldXx8Part(x[m:])
		r := func(i int) []float32 { return w[i*ldw+m : i*ldw+n] }
		a0 = ldF32x8Part(r(0)).MulAdd(v, a0)
		a1 = ldF32x8Part(r(1)).MulAdd(v, a1)
		a2 = ldF32x8Part(r(2)).MulAdd(v, a2)
		a3 = ldF32x8Part(r(3)).MulAdd(v, a3)
		a4 = ldF32x8Part(r(4)).MulAdd(v, a4)
		a5 = ldF32x8Part(r(5)).MulAdd(v, a5)
		a6 = ldF32x8Part(r(6)).MulAdd(v, a6)
		a7 = ldF32x8Part(r(7)).MulAdd(v, a7)
	}
	if m > 0 {
		px, p, l := unsafe.Pointer(&x[0]), unsafe.Pointer(&w[0]), ldw*4
		for j := 0; j < m; j += 8 {
			v := ldXx8(px, j)
			a0 = ldF32x8(p, j).MulAdd(v, a0)
			a1 = ldF32x8(unsafe.Add(p, l), j).MulAdd(v, a1)
			a2 = ldF32x8(unsafe.Add(p, 2*l), j).MulAdd(v, a2)
			a3 = ldF32x8(unsafe.Add(p, 3*l), j).MulAdd(v, a3)
			a4 = ldF32x8(unsafe.Add(p, 4*l), j).MulAdd(v, a4)
			a5 = ldF32x8(unsafe.Add(p, 5*l), j).MulAdd(v, a5)
			a6 = ldF32x8(unsafe.Add(p, 6*l), j).MulAdd(v, a6)
			a7 = ldF32x8(unsafe.Add(p, 7*l), j).MulAdd(v, a7)
		}
	}
	return hsumx8(a0), hsumx8(a1), hsumx8(a2), hsumx8(a3),
		hsumx8(a4), hsumx8(a5), hsumx8(a6), hsumx8(a7)
}

// dot4x2F32x8 is kernels.d4x2 for float32 weights: four weight rows (four
// memory streams) × two x rows in eight accumulators; with the two x
// vectors, one weight vector and its copy (an FMA overwrites its receiver)
// that is twelve live vector registers.
func dot4x2F32x8(w []float32, ldw int, x0, x1 []float32) (s00, s01, s10, s11, s20, s21, s30, s31 float32) {
	n := len(x0)
	w, x1 = w[:3*ldw+n], x1[:n]
	var a0, a1, b0, b1, c0, c1, d0, d1 archsimd.Float32x8
	m := n &^ 7
	if m < n {
		y0, y1 := ldXx8Part(x0[m:]), ldXx8Part(x1[m:])
		r := func(i int) []float32 { return w[i*ldw+m : i*ldw+n] }
		u := ldF32x8Part(r(0))
		a0, a1 = u.MulAdd(y0, a0), u.MulAdd(y1, a1)
		u = ldF32x8Part(r(1))
		b0, b1 = u.MulAdd(y0, b0), u.MulAdd(y1, b1)
		u = ldF32x8Part(r(2))
		c0, c1 = u.MulAdd(y0, c0), u.MulAdd(y1, c1)
		u = ldF32x8Part(r(3))
		d0, d1 = u.MulAdd(y0, d0), u.MulAdd(y1, d1)
	}
	if m > 0 {
		p, l := unsafe.Pointer(&w[0]), ldw*4
		q0, q1 := unsafe.Pointer(&x0[0]), unsafe.Pointer(&x1[0])
		for j := 0; j < m; j += 8 {
			y0, y1 := ldXx8(q0, j), ldXx8(q1, j)
			u := ldF32x8(p, j)
			a0, a1 = u.MulAdd(y0, a0), u.MulAdd(y1, a1)
			u = ldF32x8(unsafe.Add(p, l), j)
			b0, b1 = u.MulAdd(y0, b0), u.MulAdd(y1, b1)
			u = ldF32x8(unsafe.Add(p, 2*l), j)
			c0, c1 = u.MulAdd(y0, c0), u.MulAdd(y1, c1)
			u = ldF32x8(unsafe.Add(p, 3*l), j)
			d0, d1 = u.MulAdd(y0, d0), u.MulAdd(y1, d1)
		}
	}
	return hsumx8(a0), hsumx8(a1), hsumx8(b0), hsumx8(b1),
		hsumx8(c0), hsumx8(c1), hsumx8(d0), hsumx8(d1)
}

// dot1x1BF16x8 is kernels.d1x1 for bfloat16 weights, 8 lanes, two
// accumulators so that consecutive FMAs are independent.
func dot1x1BF16x8(w []uint16, x []float32) float32 {
	n := len(x)
	w = w[:n]
	var a0, a1 archsimd.Float32x8
	m := n &^ 7
	if m < n {
		a0 = ldBF16x8Part(w[m:]).MulAdd(ldXx8Part(x[m:]), a0)
	}
	if m == 0 {
		return hsumx8(a0)
	}
	pw, px := unsafe.Pointer(&w[0]), unsafe.Pointer(&x[0])
	j := 0
	for ; j+16 <= m; j += 16 {
		a0 = ldBF16x8(pw, j).MulAdd(ldXx8(px, j), a0)
		a1 = ldBF16x8(pw, j+8).MulAdd(ldXx8(px, j+8), a1)
	}
	if j < m {
		a0 = ldBF16x8(pw, j).MulAdd(ldXx8(px, j), a0)
	}
	return hsumx8(a0.Add(a1))
}

// dot8x1BF16x8 is kernels.d8x1 for bfloat16 weights: eight weight rows (eight
// memory streams, which DRAM serves faster than four), one x row (the T = 1
// decode kernel), eight accumulators. Go's scheduler hoists all eight
// weight loads, so a few vectors spill to the stack; the kernel is memory
// bound and the extra L1 traffic does not show.
func dot8x1BF16x8(w []uint16, ldw int, x []float32) (s0, s1, s2, s3, s4, s5, s6, s7 float32) {
	n := len(x)
	w = w[:7*ldw+n]
	var a0, a1, a2, a3, a4, a5, a6, a7 archsimd.Float32x8
	m := n &^ 7
	if m < n {
		v := ldXx8Part(x[m:])
		r := func(i int) []uint16 { return w[i*ldw+m : i*ldw+n] }
		a0 = ldBF16x8Part(r(0)).MulAdd(v, a0)
		a1 = ldBF16x8Part(r(1)).MulAdd(v, a1)
		a2 = ldBF16x8Part(r(2)).MulAdd(v, a2)
		a3 = ldBF16x8Part(r(3)).MulAdd(v, a3)
		a4 = ldBF16x8Part(r(4)).MulAdd(v, a4)
		a5 = ldBF16x8Part(r(5)).MulAdd(v, a5)
		a6 = ldBF16x8Part(r(6)).MulAdd(v, a6)
		a7 = ldBF16x8Part(r(7)).MulAdd(v, a7)
	}
	if m > 0 {
		px, p, l := unsafe.Pointer(&x[0]), unsafe.Pointer(&w[0]), ldw*2
		for j := 0; j < m; j += 8 {
			v := ldXx8(px, j)
			a0 = ldBF16x8(p, j).MulAdd(v, a0)
			a1 = ldBF16x8(unsafe.Add(p, l), j).MulAdd(v, a1)
			a2 = ldBF16x8(unsafe.Add(p, 2*l), j).MulAdd(v, a2)
			a3 = ldBF16x8(unsafe.Add(p, 3*l), j).MulAdd(v, a3)
			a4 = ldBF16x8(unsafe.Add(p, 4*l), j).MulAdd(v, a4)
			a5 = ldBF16x8(unsafe.Add(p, 5*l), j).MulAdd(v, a5)
			a6 = ldBF16x8(unsafe.Add(p, 6*l), j).MulAdd(v, a6)
			a7 = ldBF16x8(unsafe.Add(p, 7*l), j).MulAdd(v, a7)
		}
	}
	return hsumx8(a0), hsumx8(a1), hsumx8(a2), hsumx8(a3),
		hsumx8(a4), hsumx8(a5), hsumx8(a6), hsumx8(a7)
}

// dot4x2BF16x8 is kernels.d4x2 for bfloat16 weights: four weight rows (four
// memory streams) × two x rows in eight accumulators; with the two x
// vectors, one weight vector and its copy (an FMA overwrites its receiver)
// that is twelve live vector registers.
func dot4x2BF16x8(w []uint16, ldw int, x0, x1 []float32) (s00, s01, s10, s11, s20, s21, s30, s31 float32) {
	n := len(x0)
	w, x1 = w[:3*ldw+n], x1[:n]
	var a0, a1, b0, b1, c0, c1, d0, d1 archsimd.Float32x8
	m := n &^ 7
	if m < n {
		y0, y1 := ldXx8Part(x0[m:]), ldXx8Part(x1[m:])
		r := func(i int) []uint16 { return w[i*ldw+m : i*ldw+n] }
		u := ldBF16x8Part(r(0))
		a0, a1 = u.MulAdd(y0, a0), u.MulAdd(y1, a1)
		u = ldBF16x8Part(r(1))
		b0, b1 = u.MulAdd(y0, b0), u.MulAdd(y1, b1)
		u = ldBF16x8Part(r(2))
		c0, c1 = u.MulAdd(y0, c0), u.MulAdd(y1, c1)
		u = ldBF16x8Part(r(3))
		d0, d1 = u.MulAdd(y0, d0), u.MulAdd(y1, d1)
	}
	if m > 0 {
		p, l := unsafe.Pointer(&w[0]), ldw*2
		q0, q1 := unsafe.Pointer(&x0[0]), unsafe.Pointer(&x1[0])
		for j := 0; j < m; j += 8 {
			y0, y1 := ldXx8(q0, j), ldXx8(q1, j)
			u := ldBF16x8(p, j)
			a0, a1 = u.MulAdd(y0, a0), u.MulAdd(y1, a1)
			u = ldBF16x8(unsafe.Add(p, l), j)
			b0, b1 = u.MulAdd(y0, b0), u.MulAdd(y1, b1)
			u = ldBF16x8(unsafe.Add(p, 2*l), j)
			c0, c1 = u.MulAdd(y0, c0), u.MulAdd(y1, c1)
			u = ldBF16x8(unsafe.Add(p, 3*l), j)
			d0, d1 = u.MulAdd(y0, d0), u.MulAdd(y1, d1)
		}
	}
	return hsumx8(a0), hsumx8(a1), hsumx8(b0), hsumx8(b1),
		hsumx8(c0), hsumx8(c1), hsumx8(d0), hsumx8(d1)
}
