//go:build goexperiment.simd && amd64

package model

import "simd/archsimd"

// The chunked delta rule's row sums (deltaChunk) with 512-bit vectors, 64
// columns a pass with the partial sums in registers: vec_avx2.go's
// s0Dots, rowsAxpyFast and stateUpdate call these where the AVX-512
// kernels run and the width is a multiple of 64. Each column's products
// and sums are axpy's, in axpy's order (a product, then a sum, no FMA), so
// the results are the axpy loops' bits. And the chunk's dot products
// (chunkDots), on AVX-512 and on AVX2.

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

// chunkDotBufs holds chunkDots' buffers for one worker's chunks: k_i·k_j
// and q_i·k_j [C][np] (np = C rounded up to 16) and K transposed [d][np].
type chunkDotBufs struct {
	kk, qk, kt []float32
}

// chunkDots returns kk[i·np + j] = dot(k_i, k_j) and qk[i·np + j] =
// dot(q_i, k_j) for j ≤ i < n (np = n rounded up to 16; entries past i in
// a row's last 16 are left as they come), K and Q [n][d], in b's buffers
// (made on the first call for chunks of up to C rows), and whether it ran
// (AVX-512 or AVX2, d a multiple of 4). It holds 16 j (8 on AVX2) in the
// lanes of a vector, reading K transposed into kt [d][np] (zeros past n),
// and keeps dot's four partial sums per lane — element e to sum e mod 4,
// a product then a sum, then (s0 + s1) + (s2 + s3) — so each entry has
// dot's bits.
func chunkDots(b *chunkDotBufs, C int, K, Q []float32, n, d int) (kk, qk []float32, ok bool) {
	if !(vecReady || vec2Ready) || d%4 != 0 || n == 0 {
		return nil, nil, false
	}
	np := (n + 15) &^ 15
	if len(b.kk) < n*np || len(b.kt) < d*np { // once: a worker's scratch serves one layer shape
		rows := max(C, n)
		npC := (rows + 15) &^ 15
		b.kk, b.qk, b.kt = make([]float32, rows*npC), make([]float32, rows*npC), make([]float32, d*npC)
	}
	kt := b.kt[:d*np]
	kk, qk = b.kk[:n*np], b.qk[:n*np]
	for e := range d {
		row := kt[e*np:][:np]
		for j := range n {
			row[j] = K[j*d+e]
		}
		clear(row[n:])
	}
	if !vecReady {
		chunkDots8(kk, qk, kt, K, Q, n, d, np)
		return kk, qk, true
	}
	for i := range n {
		ki, qi := K[i*d:][:d], Q[i*d:][:d]
		for j0 := 0; j0 <= i; j0 += 16 {
			var s0, s1, s2, s3, t0, t1, t2, t3 f32x16
			for e := 0; e < d; e += 4 {
				x0, x1 := ld16(kt[e*np+j0:]), ld16(kt[(e+1)*np+j0:])
				x2, x3 := ld16(kt[(e+2)*np+j0:]), ld16(kt[(e+3)*np+j0:])
				s0, s1 = s0.Add(bc16(ki[e]).Mul(x0)), s1.Add(bc16(ki[e+1]).Mul(x1))
				s2, s3 = s2.Add(bc16(ki[e+2]).Mul(x2)), s3.Add(bc16(ki[e+3]).Mul(x3))
				t0, t1 = t0.Add(bc16(qi[e]).Mul(x0)), t1.Add(bc16(qi[e+1]).Mul(x1))
				t2, t3 = t2.Add(bc16(qi[e+2]).Mul(x2)), t3.Add(bc16(qi[e+3]).Mul(x3))
			}
			st16(kk[i*np+j0:], s0.Add(s1).Add(s2.Add(s3)))
			st16(qk[i*np+j0:], t0.Add(t1).Add(t2.Add(t3)))
		}
	}
	archsimd.ClearAVXUpperBits()
	return kk, qk, true
}

// chunkDots8 is chunkDots' AVX2 loop, eight j a vector.
func chunkDots8(kk, qk, kt, K, Q []float32, n, d, np int) {
	for i := range n {
		ki, qi := K[i*d:][:d], Q[i*d:][:d]
		for j0 := 0; j0 <= i; j0 += 8 {
			var s0, s1, s2, s3, t0, t1, t2, t3 f32x8
			for e := 0; e < d; e += 4 {
				x0, x1 := ld8(kt[e*np+j0:]), ld8(kt[(e+1)*np+j0:])
				x2, x3 := ld8(kt[(e+2)*np+j0:]), ld8(kt[(e+3)*np+j0:])
				s0, s1 = s0.Add(bc8(ki[e]).Mul(x0)), s1.Add(bc8(ki[e+1]).Mul(x1))
				s2, s3 = s2.Add(bc8(ki[e+2]).Mul(x2)), s3.Add(bc8(ki[e+3]).Mul(x3))
				t0, t1 = t0.Add(bc8(qi[e]).Mul(x0)), t1.Add(bc8(qi[e+1]).Mul(x1))
				t2, t3 = t2.Add(bc8(qi[e+2]).Mul(x2)), t3.Add(bc8(qi[e+3]).Mul(x3))
			}
			st8(kk[i*np+j0:], s0.Add(s1).Add(s2.Add(s3)))
			st8(qk[i*np+j0:], t0.Add(t1).Add(t2.Add(t3)))
		}
	}
	archsimd.ClearAVXUpperBits()
}
