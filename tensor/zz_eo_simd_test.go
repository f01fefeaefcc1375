//go:build goexperiment.simd && amd64

package tensor

import (
	"simd/archsimd"
	"unsafe"
)

var evenIdx = [16]uint32{0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30}
var oddIdx = [16]uint32{1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31}

func ldU32(p unsafe.Pointer, off int) archsimd.Uint32x16 {
	return archsimd.LoadUint32x16((*[16]uint32)(unsafe.Add(p, off)))
}

func dot8x1BF16eo(w []uint16, ldw int, x []float32) (s0, s1, s2, s3, s4, s5, s6, s7 float32) {
	n := len(x)
	w = w[:7*ldw+n]
	m := n &^ 31
	var a0, a1, a2, a3, a4, a5, a6, a7 archsimd.Float32x16
	if m > 0 {
		hi := archsimd.BroadcastUint32x16(0xffff0000)
		px, p, l := unsafe.Pointer(&x[0]), unsafe.Pointer(&w[0]), ldw*2
		for j := 0; j < m; j += 32 {
			x0, x1 := ldXx16(px, j), ldXx16(px, j+16)
			xe := x0.ConcatPermute(x1, archsimd.LoadUint32x16(&evenIdx))
			xo := x0.ConcatPermute(x1, archsimd.LoadUint32x16(&oddIdx))
			b := 2 * j
			u := ldU32(p, b)
			a0 = u.ShiftAllLeft(16).AsFloat32x16().MulAdd(xe, a0)
			a0 = u.And(hi).AsFloat32x16().MulAdd(xo, a0)
			u = ldU32(p, b+l)
			a1 = u.ShiftAllLeft(16).AsFloat32x16().MulAdd(xe, a1)
			a1 = u.And(hi).AsFloat32x16().MulAdd(xo, a1)
			u = ldU32(p, b+2*l)
			a2 = u.ShiftAllLeft(16).AsFloat32x16().MulAdd(xe, a2)
			a2 = u.And(hi).AsFloat32x16().MulAdd(xo, a2)
			u = ldU32(p, b+3*l)
			a3 = u.ShiftAllLeft(16).AsFloat32x16().MulAdd(xe, a3)
			a3 = u.And(hi).AsFloat32x16().MulAdd(xo, a3)
			u = ldU32(p, b+4*l)
			a4 = u.ShiftAllLeft(16).AsFloat32x16().MulAdd(xe, a4)
			a4 = u.And(hi).AsFloat32x16().MulAdd(xo, a4)
			u = ldU32(p, b+5*l)
			a5 = u.ShiftAllLeft(16).AsFloat32x16().MulAdd(xe, a5)
			a5 = u.And(hi).AsFloat32x16().MulAdd(xo, a5)
			u = ldU32(p, b+6*l)
			a6 = u.ShiftAllLeft(16).AsFloat32x16().MulAdd(xe, a6)
			a6 = u.And(hi).AsFloat32x16().MulAdd(xo, a6)
			u = ldU32(p, b+7*l)
			a7 = u.ShiftAllLeft(16).AsFloat32x16().MulAdd(xe, a7)
			a7 = u.And(hi).AsFloat32x16().MulAdd(xo, a7)
		}
	}
	s0, s1, s2, s3, s4, s5, s6, s7 = hsumx16(a0), hsumx16(a1), hsumx16(a2), hsumx16(a3), hsumx16(a4), hsumx16(a5), hsumx16(a6), hsumx16(a7)
	if m < n {
		t0, t1, t2, t3, t4, t5, t6, t7 := dot8x1BF16x16(w[m:], ldw, x[m:])
		s0, s1, s2, s3, s4, s5, s6, s7 = s0+t0, s1+t1, s2+t2, s3+t3, s4+t4, s5+t5, s6+t6, s7+t7
	}
	return
}

func init() {
	eoKernels = avx512Kernels
	eoKernels.name = "avx512eo"
	eoKernels.bf16.d8x1 = dot8x1BF16eo
}
