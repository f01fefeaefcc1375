//go:build goexperiment.simd && amd64

package model

import "unsafe"

// deltaDecay128, deltaFuse128 and deltaUpdate128 are the passes of
// deltaRowsFast (deltarule_amd64.s): row 0's decay and w, the fused pass
// between rows t and t+1, the last row's update and output.
//
//go:noescape
func deltaDecay128(S, src, k, w unsafe.Pointer, dk, stride int, alpha float32)

//go:noescape
func deltaFuse128(S, k, q, u, k2, o, w2 unsafe.Pointer, dk, stride int, alpha2 float32)

//go:noescape
func deltaUpdate128(S, k, q, u, o unsafe.Pointer, dk, stride int)

// deltaRowsFast is deltaRows on whole blocks of 128 value columns with the
// passes in assembly, and reports whether it ran (AVX-512, dv a multiple
// of 128, two rows or more). Columns do not meet in the rule (its sums run
// over the key rows), so each block of 128 runs all the rows before the
// next: for each, row 0's decay pass, a fused pass between each row and
// the next, and the last row's update pass: T + 1 passes over the state
// where T decode steps make 2T, every column's operations those of
// deltaRule128 in its order.
func deltaRowsFast(S, src []float32, rows []deltaRow, w, u []float32) bool {
	T := len(rows)
	if !vecReady || T < 2 || T > maxVerify {
		return false
	}
	dk, dv := len(rows[0].k), len(rows[0].v)
	if dk == 0 || dv == 0 || dv%128 != 0 {
		return false
	}
	S, src, w, u = S[:dk*dv], src[:dk*dv], w[:dv], u[:dv]
	var alpha [maxVerify]float32
	for t, r := range rows {
		if len(r.q) < dk || len(r.k) != dk || len(r.v) != dv || len(r.o) < dv {
			panic("model: deltaRows: rows of unequal shapes")
		}
		alpha[t] = decay(float64(r.g))
	}
	p := func(s []float32, i int) unsafe.Pointer { return unsafe.Pointer(&s[i]) }
	stride := 4 * dv
	for c := 0; c < dv; c += 128 {
		wc, uc := w[c:c+128], u[c:c+128]
		first := &rows[0]
		deltaDecay128(p(S, c), p(src, c), p(first.k, 0), p(wc, 0), dk, stride, alpha[0])
		betaDiff(uc, first.v[c:c+128], wc, first.beta)
		for t := range T - 1 {
			r, n := &rows[t], &rows[t+1]
			deltaFuse128(p(S, c), p(r.k, 0), p(r.q, 0), p(uc, 0), p(n.k, 0), p(r.o, c), p(wc, 0), dk, stride, alpha[t+1])
			betaDiff(uc, n.v[c:c+128], wc, n.beta)
		}
		last := &rows[T-1]
		deltaUpdate128(p(S, c), p(last.k, 0), p(last.q, 0), p(uc, 0), p(last.o, c), dk, stride)
	}
	return true
}
