//go:build goexperiment.simd && amd64

package model

import "simd/archsimd"

// The chunked delta rule's row sums (deltaChunk) with 512-bit vectors, 64
// columns a pass with the partial sums in registers: vec_avx2.go's
// s0Dots, rowsAxpyFast and stateUpdate call these where the AVX-512
// kernels run and the width is a multiple of 64. Each column's products
// and sums are axpy's, in axpy's order (a product, then a sum, no FMA), so
// the results are the axpy loops' bits.

// s0Dots16 is s0Dots for len(u) a multiple of 64.
func s0Dots16(u, o, S, k, q []float32) {
	dv, dk := len(u), len(k)
	S, q, o = S[:dk*dv], q[:dk], o[:dv]
	for c := 0; c < dv; c += 64 {
		var u0, u1, u2, u3, o0, o1, o2, o3 f32x16
		for r, kr := range k {
			row := S[r*dv+c:][:64]
			kb, qb := bc16(kr), bc16(q[r])
			s0, s1, s2, s3 := ld16(row), ld16(row[16:]), ld16(row[32:]), ld16(row[48:])
			u0, u1, u2, u3 = u0.Add(s0.Mul(kb)), u1.Add(s1.Mul(kb)), u2.Add(s2.Mul(kb)), u3.Add(s3.Mul(kb))
			o0, o1, o2, o3 = o0.Add(s0.Mul(qb)), o1.Add(s1.Mul(qb)), o2.Add(s2.Mul(qb)), o3.Add(s3.Mul(qb))
		}
		st16(u[c:], u0)
		st16(u[c+16:], u1)
		st16(u[c+32:], u2)
		st16(u[c+48:], u3)
		st16(o[c:], o0)
		st16(o[c+16:], o1)
		st16(o[c+32:], o2)
		st16(o[c+48:], o3)
	}
	archsimd.ClearAVXUpperBits()
}

// rowsAxpy16 is rowsAxpyFast for len(y) a multiple of 64.
func rowsAxpy16(y, a, X []float32) {
	dv := len(y)
	X = X[:len(a)*dv]
	for c := 0; c < dv; c += 64 {
		y0, y1, y2, y3 := ld16(y[c:]), ld16(y[c+16:]), ld16(y[c+32:]), ld16(y[c+48:])
		for j, aj := range a {
			x, ab := X[j*dv+c:][:64], bc16(aj)
			y0, y1 = y0.Add(ld16(x).Mul(ab)), y1.Add(ld16(x[16:]).Mul(ab))
			y2, y3 = y2.Add(ld16(x[32:]).Mul(ab)), y3.Add(ld16(x[48:]).Mul(ab))
		}
		st16(y[c:], y0)
		st16(y[c+16:], y1)
		st16(y[c+32:], y2)
		st16(y[c+48:], y3)
	}
	archsimd.ClearAVXUpperBits()
}

// stateUpdate16 is stateUpdate for dv = len(U)/n a multiple of 64 and S
// of dk·dv values, dk = len(f)/n.
func stateUpdate16(S []float32, e float32, f, U []float32, n int) {
	dv, dk := len(U)/n, len(f)/n
	ev := bc16(e)
	for r := range dk {
		row, fr := S[r*dv:][:dv], f[r*n:][:n]
		for c := 0; c < dv; c += 64 {
			y := row[c:][:64]
			y0, y1, y2, y3 := ld16(y).Mul(ev), ld16(y[16:]).Mul(ev), ld16(y[32:]).Mul(ev), ld16(y[48:]).Mul(ev)
			for i, fi := range fr {
				x, fb := U[i*dv+c:][:64], bc16(fi)
				y0, y1 = y0.Add(ld16(x).Mul(fb)), y1.Add(ld16(x[16:]).Mul(fb))
				y2, y3 = y2.Add(ld16(x[32:]).Mul(fb)), y3.Add(ld16(x[48:]).Mul(fb))
			}
			st16(y, y0)
			st16(y[16:], y1)
			st16(y[32:], y2)
			st16(y[48:], y3)
		}
	}
	archsimd.ClearAVXUpperBits()
}
