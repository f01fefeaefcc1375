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
	name: "avx2",
	f32:  kernels[float32]{dot1x1F32x8, dot1x4F32x8, dot8x1F32x8, dot2x4F32x8},
	bf16: kernels[uint16]{dot1x1BF16x8, dot1x4BF16x8, dot8x1BF16x8, dot2x4BF16x8},
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

// dot1x4F32x8 is kernels.d1x4 for float32 weights: one weight vector, four
// x rows, four accumulators.
func dot1x4F32x8(w []float32, x0, x1, x2, x3 []float32) (s0, s1, s2, s3 float32) {
	n := len(x0)
	w, x1, x2, x3 = w[:n], x1[:n], x2[:n], x3[:n]
	var a0, a1, a2, a3 archsimd.Float32x8
	m := n &^ 7
	if m < n {
		v := ldF32x8Part(w[m:])
		a0 = ldXx8Part(x0[m:]).MulAdd(v, a0)
		a1 = ldXx8Part(x1[m:]).MulAdd(v, a1)
		a2 = ldXx8Part(x2[m:]).MulAdd(v, a2)
		a3 = ldXx8Part(x3[m:]).MulAdd(v, a3)
	}
	if m > 0 {
		pw := unsafe.Pointer(&w[0])
		p0, p1, p2, p3 := unsafe.Pointer(&x0[0]), unsafe.Pointer(&x1[0]), unsafe.Pointer(&x2[0]), unsafe.Pointer(&x3[0])
		for j := 0; j < m; j += 8 {
			v := ldF32x8(pw, j)
			a0 = ldXx8(p0, j).MulAdd(v, a0)
			a1 = ldXx8(p1, j).MulAdd(v, a1)
			a2 = ldXx8(p2, j).MulAdd(v, a2)
			a3 = ldXx8(p3, j).MulAdd(v, a3)
		}
	}
	return hsumx8(a0), hsumx8(a1), hsumx8(a2), hsumx8(a3)
}

// dot8x1F32x8 is kernels.d8x1 for float32 weights: eight weight rows (eight
// memory streams, which DRAM serves faster than four), one x row (the T = 1
// decode kernel), eight accumulators. Go's scheduler hoists all eight
// weight loads, so one or two vectors spill to the stack; the kernel is
// memory bound and the extra L1 traffic does not show.
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

// dot2x4F32x8 is kernels.d2x4 for float32 weights: two weight rows × four x
// rows in eight accumulators; with the two weight vectors, one x vector
// and its copy (an FMA overwrites its receiver) that is twelve live vector
// registers.
func dot2x4F32x8(w0, w1 []float32, x0, x1, x2, x3 []float32) (s00, s01, s02, s03, s10, s11, s12, s13 float32) {
	n := len(x0)
	w0, w1, x1, x2, x3 = w0[:n], w1[:n], x1[:n], x2[:n], x3[:n]
	var a0, a1, a2, a3, c0, c1, c2, c3 archsimd.Float32x8
	m := n &^ 7
	if m < n {
		u, v := ldF32x8Part(w0[m:]), ldF32x8Part(w1[m:])
		x := ldXx8Part(x0[m:])
		a0, c0 = x.MulAdd(u, a0), x.MulAdd(v, c0)
		x = ldXx8Part(x1[m:])
		a1, c1 = x.MulAdd(u, a1), x.MulAdd(v, c1)
		x = ldXx8Part(x2[m:])
		a2, c2 = x.MulAdd(u, a2), x.MulAdd(v, c2)
		x = ldXx8Part(x3[m:])
		a3, c3 = x.MulAdd(u, a3), x.MulAdd(v, c3)
	}
	if m > 0 {
		pu, pv := unsafe.Pointer(&w0[0]), unsafe.Pointer(&w1[0])
		p0, p1, p2, p3 := unsafe.Pointer(&x0[0]), unsafe.Pointer(&x1[0]), unsafe.Pointer(&x2[0]), unsafe.Pointer(&x3[0])
		for j := 0; j < m; j += 8 {
			u, v := ldF32x8(pu, j), ldF32x8(pv, j)
			x := ldXx8(p0, j)
			a0, c0 = x.MulAdd(u, a0), x.MulAdd(v, c0)
			x = ldXx8(p1, j)
			a1, c1 = x.MulAdd(u, a1), x.MulAdd(v, c1)
			x = ldXx8(p2, j)
			a2, c2 = x.MulAdd(u, a2), x.MulAdd(v, c2)
			x = ldXx8(p3, j)
			a3, c3 = x.MulAdd(u, a3), x.MulAdd(v, c3)
		}
	}
	return hsumx8(a0), hsumx8(a1), hsumx8(a2), hsumx8(a3),
		hsumx8(c0), hsumx8(c1), hsumx8(c2), hsumx8(c3)
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

// dot1x4BF16x8 is kernels.d1x4 for bfloat16 weights: one weight vector, four
// x rows, four accumulators.
func dot1x4BF16x8(w []uint16, x0, x1, x2, x3 []float32) (s0, s1, s2, s3 float32) {
	n := len(x0)
	w, x1, x2, x3 = w[:n], x1[:n], x2[:n], x3[:n]
	var a0, a1, a2, a3 archsimd.Float32x8
	m := n &^ 7
	if m < n {
		v := ldBF16x8Part(w[m:])
		a0 = ldXx8Part(x0[m:]).MulAdd(v, a0)
		a1 = ldXx8Part(x1[m:]).MulAdd(v, a1)
		a2 = ldXx8Part(x2[m:]).MulAdd(v, a2)
		a3 = ldXx8Part(x3[m:]).MulAdd(v, a3)
	}
	if m > 0 {
		pw := unsafe.Pointer(&w[0])
		p0, p1, p2, p3 := unsafe.Pointer(&x0[0]), unsafe.Pointer(&x1[0]), unsafe.Pointer(&x2[0]), unsafe.Pointer(&x3[0])
		for j := 0; j < m; j += 8 {
			v := ldBF16x8(pw, j)
			a0 = ldXx8(p0, j).MulAdd(v, a0)
			a1 = ldXx8(p1, j).MulAdd(v, a1)
			a2 = ldXx8(p2, j).MulAdd(v, a2)
			a3 = ldXx8(p3, j).MulAdd(v, a3)
		}
	}
	return hsumx8(a0), hsumx8(a1), hsumx8(a2), hsumx8(a3)
}

// dot8x1BF16x8 is kernels.d8x1 for bfloat16 weights: eight weight rows (eight
// memory streams, which DRAM serves faster than four), one x row (the T = 1
// decode kernel), eight accumulators. Go's scheduler hoists all eight
// weight loads, so one or two vectors spill to the stack; the kernel is
// memory bound and the extra L1 traffic does not show.
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

// dot2x4BF16x8 is kernels.d2x4 for bfloat16 weights: two weight rows × four x
// rows in eight accumulators; with the two weight vectors, one x vector
// and its copy (an FMA overwrites its receiver) that is twelve live vector
// registers.
func dot2x4BF16x8(w0, w1 []uint16, x0, x1, x2, x3 []float32) (s00, s01, s02, s03, s10, s11, s12, s13 float32) {
	n := len(x0)
	w0, w1, x1, x2, x3 = w0[:n], w1[:n], x1[:n], x2[:n], x3[:n]
	var a0, a1, a2, a3, c0, c1, c2, c3 archsimd.Float32x8
	m := n &^ 7
	if m < n {
		u, v := ldBF16x8Part(w0[m:]), ldBF16x8Part(w1[m:])
		x := ldXx8Part(x0[m:])
		a0, c0 = x.MulAdd(u, a0), x.MulAdd(v, c0)
		x = ldXx8Part(x1[m:])
		a1, c1 = x.MulAdd(u, a1), x.MulAdd(v, c1)
		x = ldXx8Part(x2[m:])
		a2, c2 = x.MulAdd(u, a2), x.MulAdd(v, c2)
		x = ldXx8Part(x3[m:])
		a3, c3 = x.MulAdd(u, a3), x.MulAdd(v, c3)
	}
	if m > 0 {
		pu, pv := unsafe.Pointer(&w0[0]), unsafe.Pointer(&w1[0])
		p0, p1, p2, p3 := unsafe.Pointer(&x0[0]), unsafe.Pointer(&x1[0]), unsafe.Pointer(&x2[0]), unsafe.Pointer(&x3[0])
		for j := 0; j < m; j += 8 {
			u, v := ldBF16x8(pu, j), ldBF16x8(pv, j)
			x := ldXx8(p0, j)
			a0, c0 = x.MulAdd(u, a0), x.MulAdd(v, c0)
			x = ldXx8(p1, j)
			a1, c1 = x.MulAdd(u, a1), x.MulAdd(v, c1)
			x = ldXx8(p2, j)
			a2, c2 = x.MulAdd(u, a2), x.MulAdd(v, c2)
			x = ldXx8(p3, j)
			a3, c3 = x.MulAdd(u, a3), x.MulAdd(v, c3)
		}
	}
	return hsumx8(a0), hsumx8(a1), hsumx8(a2), hsumx8(a3),
		hsumx8(c0), hsumx8(c1), hsumx8(c2), hsumx8(c3)
}
