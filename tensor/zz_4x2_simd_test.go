//go:build goexperiment.simd && amd64

package tensor

import (
	"simd/archsimd"
	"unsafe"
)

func dot4x2BF16x16(w []uint16, ldw int, x0, x1 []float32) (s00, s01, s10, s11, s20, s21, s30, s31 float32) {
	n := len(x0)
	w = w[:3*ldw+n]
	x1 = x1[:n]
	m := n &^ 15
	var a0, a1, b0, b1, c0, c1, d0, d1 archsimd.Float32x16
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
	s00, s01, s10, s11 = hsumx16(a0), hsumx16(a1), hsumx16(b0), hsumx16(b1)
	s20, s21, s30, s31 = hsumx16(c0), hsumx16(c1), hsumx16(d0), hsumx16(d1)
	for j := m; j < n; j++ {
		s00 += BF16ToF32(w[j]) * x0[j]
		s01 += BF16ToF32(w[j]) * x1[j]
		s10 += BF16ToF32(w[ldw+j]) * x0[j]
		s11 += BF16ToF32(w[ldw+j]) * x1[j]
		s20 += BF16ToF32(w[2*ldw+j]) * x0[j]
		s21 += BF16ToF32(w[2*ldw+j]) * x1[j]
		s30 += BF16ToF32(w[3*ldw+j]) * x0[j]
		s31 += BF16ToF32(w[3*ldw+j]) * x1[j]
	}
	return
}

func init() { d4x2Hook = dot4x2BF16x16 }
