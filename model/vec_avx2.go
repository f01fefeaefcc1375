//go:build goexperiment.simd && amd64

package model

import "simd/archsimd"

// AVX2 twins of the elementwise loops and the recurrent delta rule step,
// for CPUs without AVX-512 (vec_simd.go has the AVX-512 ones and says
// what a twin must keep): eight lanes, the same float32 operations in the
// same order, so the same bits as the scalar code. exp32x8 scales by 2ⁿ
// as exp32 does, in one or two exact-then-rounding products, since AVX2
// has no VSCALEFPS. Decode attention's twins are in attention_avx2.go.

// vec2Ready: AVX2 (with AVX's VROUNDPS and the AVX2 integer lanes) on a
// CPU where the AVX-512 kernels do not run.
var vec2Ready = !vecReady && archsimd.X86.AVX2()

type f32x8 = archsimd.Float32x8

func ld8(s []float32) f32x8    { return archsimd.LoadFloat32x8((*[8]float32)(s[:8])) }
func st8(s []float32, v f32x8) { v.Store((*[8]float32)(s[:8])) }
func bc8(x float32) f32x8      { return archsimd.BroadcastFloat32x8(x) }

// expK holds exp32x8's constants, made once per loop (a broadcast is
// emulated on AVX2 and cost more than the arithmetic when made per call).
// init fills it in place: a function returning it would copy it with
// legacy-SSE moves after its 256-bit broadcasts, which costs ~130 ns on
// some x86 hosts (BENCHMARKS.md), every call.
type expK struct {
	log2e, half, ln2hi, ln2lo, p7, p6, p5, p4, p3, one, hi, lo, inf, sign f32x8
	m125, p125, p127, i1, i0, i127                                        archsimd.Int32x8
}

func (c *expK) init() {
	bi := archsimd.BroadcastInt32x8
	c.log2e, c.half, c.ln2hi, c.ln2lo = bc8(1.44269504088896341), bc8(0.5), bc8(0.693359375), bc8(-2.12194440e-4)
	c.p7, c.p6, c.p5, c.p4, c.p3 = bc8(1.0/5040), bc8(1.0/720), bc8(1.0/120), bc8(1.0/24), bc8(1.0/6)
	c.one, c.hi, c.lo, c.inf = bc8(1), bc8(88.72284), bc8(-103.97208), bc8(inf32)
	c.sign = archsimd.BroadcastUint32x8(1 << 31).AsFloat32x8()
	c.m125, c.p125, c.p127, c.i1, c.i0, c.i127 = bi(-125), bi(125), bi(127), bi(1), bi(0), bi(127)
}

// exp32x8 is exp32 on 8 lanes: the same reduction, polynomial and special
// cases, and the same scaling by 2ᵏ: p·2ᵏ for −125 ≤ k ≤ 127, (p·2^(k+125))·2⁻¹²⁵
// below, (p·2)·2^(k−1) above, written as (p·2ᵃ)·2ᵇ with a + b = k.
func exp32x8(x f32x8, c *expK) f32x8 {
	n := x.Mul(c.log2e).Add(c.half).Floor()
	r := x.Sub(n.Mul(c.ln2hi)).Sub(n.Mul(c.ln2lo))
	p := r.Mul(c.p7).Add(c.p6)
	p = r.Mul(p).Add(c.p5)
	p = r.Mul(p).Add(c.p4)
	p = r.Mul(p).Add(c.p3)
	p = r.Mul(p).Add(c.half)
	p = r.Mul(p).Add(c.one)
	p = r.Mul(p).Add(c.one)
	k := n.ConvertToInt32()
	a := k.Add(c.p125).Merge(c.i0, k.Less(c.m125)) // Merge keeps x where the mask holds
	a = c.i1.Merge(a, k.Greater(c.i127))
	b := k.Sub(a)
	f1 := a.Add(c.p127).ShiftAllLeft(23).AsFloat32x8()
	f2 := b.Add(c.p127).ShiftAllLeft(23).AsFloat32x8()
	e := p.Mul(f1).Mul(f2)
	e = c.inf.Merge(e, x.Greater(c.hi))
	e = f32x8{}.Merge(e, x.Less(c.lo))
	return x.Merge(e, x.IsNaN())
}

// sigmoid8 is the scalar sigmoid on 8 lanes: e = exp32(−|x|), then (x ≥
// 0 ? 1 : e)/(1 + e) (on 16 lanes, actRows in act_amd64.s).
func sigmoid8(x f32x8, c *expK) f32x8 {
	neg := x.AsUint32x8().Or(c.sign.AsUint32x8()).AsFloat32x8() // −|x|
	e := exp32x8(neg, c)
	return c.one.Merge(e, x.GreaterEqual(f32x8{})).Div(c.one.Add(e))
}

func silu8(x f32x8, c *expK) f32x8 { return x.Mul(sigmoid8(x, c)) }

func swiglu8(g, up []float32) int {
	if !vec2Ready {
		return 0
	}
	var c expK
	c.init()
	i := 0
	for ; i+8 <= len(g); i += 8 {
		st8(g[i:], silu8(ld8(g[i:]), &c).Mul(ld8(up[i:])))
	}
	archsimd.ClearAVXUpperBits()
	return i
}

func silu8s(x []float32) int {
	if !vec2Ready {
		return 0
	}
	var c expK
	c.init()
	i := 0
	for ; i+8 <= len(x); i += 8 {
		st8(x[i:], silu8(ld8(x[i:]), &c))
	}
	archsimd.ClearAVXUpperBits()
	return i
}

func mulSilu8(o, z []float32) int {
	if !vec2Ready {
		return 0
	}
	var c expK
	c.init()
	i := 0
	for ; i+8 <= len(o); i += 8 {
		st8(o[i:], ld8(o[i:]).Mul(silu8(ld8(z[i:]), &c)))
	}
	archsimd.ClearAVXUpperBits()
	return i
}

func mulSigmoid8(o, g []float32) int {
	if !vec2Ready {
		return 0
	}
	var c expK
	c.init()
	i := 0
	for ; i+8 <= len(o); i += 8 {
		st8(o[i:], ld8(o[i:]).Mul(sigmoid8(ld8(g[i:]), &c)))
	}
	archsimd.ClearAVXUpperBits()
	return i
}

func mulAdd8(y, a, b []float32) int {
	if !vec2Ready {
		return 0
	}
	i := 0
	for ; i+8 <= len(y); i += 8 {
		st8(y[i:], ld8(y[i:]).Add(ld8(a[i:]).Mul(ld8(b[i:]))))
	}
	archsimd.ClearAVXUpperBits()
	return i
}

func axpy8(y []float32, a float32, x []float32) int {
	if !vec2Ready || len(y) < 8 {
		return 0
	}
	av, i := bc8(a), 0
	for ; i+8 <= len(y); i += 8 {
		st8(y[i:], ld8(y[i:]).Add(ld8(x[i:]).Mul(av)))
	}
	archsimd.ClearAVXUpperBits()
	return i
}

// sumSquares8 is sumSquaresFast on AVX2: parts l…l+3 of each quarter of
// a group of sixteen in four float64 vectors.
func sumSquares8(acc *[16]float64, x []float32) int {
	if !vec2Ready {
		return 0
	}
	var a0, a1, a2, a3 archsimd.Float64x4
	i := 0
	for ; i+16 <= len(x); i += 16 {
		v0 := archsimd.LoadFloat32x4((*[4]float32)(x[i : i+4])).ConvertToFloat64()
		v1 := archsimd.LoadFloat32x4((*[4]float32)(x[i+4 : i+8])).ConvertToFloat64()
		v2 := archsimd.LoadFloat32x4((*[4]float32)(x[i+8 : i+12])).ConvertToFloat64()
		v3 := archsimd.LoadFloat32x4((*[4]float32)(x[i+12 : i+16])).ConvertToFloat64()
		a0, a1, a2, a3 = a0.Add(v0.Mul(v0)), a1.Add(v1.Mul(v1)), a2.Add(v2.Mul(v2)), a3.Add(v3.Mul(v3))
	}
	a0.Store((*[4]float64)(acc[0:4]))
	a1.Store((*[4]float64)(acc[4:8]))
	a2.Store((*[4]float64)(acc[8:12]))
	a3.Store((*[4]float64)(acc[12:16]))
	archsimd.ClearAVXUpperBits()
	return i
}

func mulScale8(dst, x []float32, r float32, scale []float32) int {
	if !vec2Ready {
		return 0
	}
	rv, i := bc8(r), 0
	for ; i+8 <= len(dst); i += 8 {
		st8(dst[i:], ld8(x[i:]).Mul(rv).Mul(ld8(scale[i:])))
	}
	archsimd.ClearAVXUpperBits()
	return i
}

func mulScalar8(x []float32, r float32) int {
	if !vec2Ready {
		return 0
	}
	rv, i := bc8(r), 0
	for ; i+8 <= len(x); i += 8 {
		st8(x[i:], ld8(x[i:]).Mul(rv))
	}
	archsimd.ClearAVXUpperBits()
	return i
}

func add8(y, a []float32) int {
	if !vec2Ready {
		return 0
	}
	i := 0
	for ; i+8 <= len(y); i += 8 {
		st8(y[i:], ld8(y[i:]).Add(ld8(a[i:])))
	}
	archsimd.ClearAVXUpperBits()
	return i
}

// deltaStep8 is deltaStepFast on 8 columns a vector, 32 a pass (then 16
// and 8 for what is left): every column's sums run over the key rows in
// deltaStep's order. It needs dv a multiple of 8 and reports whether it
// ran. A pass reads 128 contiguous bytes of each of the dk rows: at 16
// columns (one cache line a row, 512 bytes apart) a state that came from
// DRAM was read and written at half the speed (BenchmarkDeltaStep,
// 16.6 → 9.0 µs a 128×128 head on an AMD EPYC); 64 columns a pass were no
// faster than 32.
func deltaStep8(S, src, q, k, v []float32, alpha, beta float32, o []float32) bool {
	dk, dv := len(k), len(v)
	if !vec2Ready || dv%8 != 0 {
		return false
	}
	S, src = S[:dk*dv], src[:dk*dv]
	q = q[:dk]
	a, b := bc8(alpha), bc8(beta)
	c := 0
	for ; c+32 <= dv; c += 32 {
		var w0, w1, w2, w3 f32x8
		for i, ki := range k {
			row, from := S[i*dv+c:][:32], src[i*dv+c:][:32]
			r0, r1 := ld8(from).Mul(a), ld8(from[8:]).Mul(a)
			r2, r3 := ld8(from[16:]).Mul(a), ld8(from[24:]).Mul(a)
			st8(row, r0)
			st8(row[8:], r1)
			st8(row[16:], r2)
			st8(row[24:], r3)
			kb := bc8(ki)
			w0, w1 = w0.Add(kb.Mul(r0)), w1.Add(kb.Mul(r1))
			w2, w3 = w2.Add(kb.Mul(r2)), w3.Add(kb.Mul(r3))
		}
		u0, u1 := b.Mul(ld8(v[c:]).Sub(w0)), b.Mul(ld8(v[c+8:]).Sub(w1))
		u2, u3 := b.Mul(ld8(v[c+16:]).Sub(w2)), b.Mul(ld8(v[c+24:]).Sub(w3))
		var o0, o1, o2, o3 f32x8
		for i, ki := range k {
			row := S[i*dv+c:][:32]
			kb, qb := bc8(ki), bc8(q[i])
			r0, r1 := ld8(row).Add(kb.Mul(u0)), ld8(row[8:]).Add(kb.Mul(u1))
			r2, r3 := ld8(row[16:]).Add(kb.Mul(u2)), ld8(row[24:]).Add(kb.Mul(u3))
			st8(row, r0)
			st8(row[8:], r1)
			st8(row[16:], r2)
			st8(row[24:], r3)
			o0, o1 = o0.Add(qb.Mul(r0)), o1.Add(qb.Mul(r1))
			o2, o3 = o2.Add(qb.Mul(r2)), o3.Add(qb.Mul(r3))
		}
		st8(o[c:], o0)
		st8(o[c+8:], o1)
		st8(o[c+16:], o2)
		st8(o[c+24:], o3)
	}
	for ; c+16 <= dv; c += 16 {
		var w0, w1 f32x8
		for i, ki := range k {
			row, from := S[i*dv+c:][:16], src[i*dv+c:][:16]
			r0, r1 := ld8(from).Mul(a), ld8(from[8:]).Mul(a)
			st8(row, r0)
			st8(row[8:], r1)
			kb := bc8(ki)
			w0, w1 = w0.Add(kb.Mul(r0)), w1.Add(kb.Mul(r1))
		}
		u0, u1 := b.Mul(ld8(v[c:]).Sub(w0)), b.Mul(ld8(v[c+8:]).Sub(w1))
		var o0, o1 f32x8
		for i, ki := range k {
			row := S[i*dv+c:][:16]
			kb, qb := bc8(ki), bc8(q[i])
			r0, r1 := ld8(row).Add(kb.Mul(u0)), ld8(row[8:]).Add(kb.Mul(u1))
			st8(row, r0)
			st8(row[8:], r1)
			o0, o1 = o0.Add(qb.Mul(r0)), o1.Add(qb.Mul(r1))
		}
		st8(o[c:], o0)
		st8(o[c+8:], o1)
	}
	for ; c < dv; c += 8 {
		var w f32x8
		for i, ki := range k {
			row := S[i*dv+c:]
			r := ld8(src[i*dv+c:]).Mul(a)
			st8(row, r)
			w = w.Add(bc8(ki).Mul(r))
		}
		u := b.Mul(ld8(v[c:]).Sub(w))
		var oc f32x8
		for i, ki := range k {
			row := S[i*dv+c:]
			r := ld8(row).Add(bc8(ki).Mul(u))
			st8(row, r)
			oc = oc.Add(bc8(q[i]).Mul(r))
		}
		st8(o[c:], oc)
	}
	archsimd.ClearAVXUpperBits()
	return true
}

// The chunked delta rule's row sums (deltaChunk) on AVX2, 32 columns a
// pass with the partial sums in registers (on AVX-512 hosts too where the
// width is not a multiple of 64, deltachunk_simd.go's pass): each
// column's products and sums are axpy's, in axpy's order (a product, then
// a sum, no FMA), so the results are the axpy loops' bits; they only stop
// storing and reloading the partial sums between terms.

// s0Dots sets u = S₀ᵀk and o = S₀ᵀq (u[j] = Σ_r k[r]·S[r][j] in r order,
// from zero), S [len(k)][len(u)], and reports whether it ran (dv a
// multiple of 32).
//
//go:noinline
func s0Dots(u, o, S, k, q []float32) bool {
	dv := len(u)
	if !(vec2Ready || vecReady) || dv%32 != 0 || len(o) != dv {
		return false
	}
	if vecReady && dv%64 == 0 {
		s0Dots16(u, o, S, k, q)
		return true
	}
	dk := len(k)
	S, q = S[:dk*dv], q[:dk]
	for c := 0; c < dv; c += 32 {
		var u0, u1, u2, u3, o0, o1, o2, o3 f32x8
		for r, kr := range k {
			row := S[r*dv+c:][:32]
			kb, qb := bc8(kr), bc8(q[r])
			s0, s1, s2, s3 := ld8(row), ld8(row[8:]), ld8(row[16:]), ld8(row[24:])
			u0, u1, u2, u3 = u0.Add(s0.Mul(kb)), u1.Add(s1.Mul(kb)), u2.Add(s2.Mul(kb)), u3.Add(s3.Mul(kb))
			o0, o1, o2, o3 = o0.Add(s0.Mul(qb)), o1.Add(s1.Mul(qb)), o2.Add(s2.Mul(qb)), o3.Add(s3.Mul(qb))
		}
		st8(u[c:], u0)
		st8(u[c+8:], u1)
		st8(u[c+16:], u2)
		st8(u[c+24:], u3)
		st8(o[c:], o0)
		st8(o[c+8:], o1)
		st8(o[c+16:], o2)
		st8(o[c+24:], o3)
	}
	archsimd.ClearAVXUpperBits()
	return true
}

// rowsAxpyFast is rowsAxpy: y += Σ_j a[j]·X_j in j order; it reports
// whether it ran (len(y) a multiple of 32).
//
//go:noinline
func rowsAxpyFast(y, a, X []float32) bool {
	dv := len(y)
	if !(vec2Ready || vecReady) || dv%32 != 0 {
		return false
	}
	if vecReady && dv%64 == 0 {
		rowsAxpy16(y, a, X)
		return true
	}
	X = X[:len(a)*dv]
	for c := 0; c < dv; c += 32 {
		y0, y1, y2, y3 := ld8(y[c:]), ld8(y[c+8:]), ld8(y[c+16:]), ld8(y[c+24:])
		for j, aj := range a {
			x, ab := X[j*dv+c:][:32], bc8(aj)
			y0, y1 = y0.Add(ld8(x).Mul(ab)), y1.Add(ld8(x[8:]).Mul(ab))
			y2, y3 = y2.Add(ld8(x[16:]).Mul(ab)), y3.Add(ld8(x[24:]).Mul(ab))
		}
		st8(y[c:], y0)
		st8(y[c+8:], y1)
		st8(y[c+16:], y2)
		st8(y[c+24:], y3)
	}
	archsimd.ClearAVXUpperBits()
	return true
}

// stateUpdate is the chunk's last step for every row r of S [dk][dv]:
// S_r ← e·S_r, then S_r += Σ_i f[r·n + i]·U_i in i order (f [dk][n], U
// [n][dv]); it reports whether it ran (dv a multiple of 32).
//
//go:noinline
func stateUpdate(S []float32, e float32, f, U []float32, n int) bool {
	if !(vec2Ready || vecReady) || n == 0 {
		return false
	}
	dv, dk := len(U)/n, len(f)/n
	if dv%32 != 0 || len(S) != dk*dv {
		return false
	}
	if vecReady && dv%64 == 0 {
		stateUpdate16(S, e, f, U, n)
		return true
	}
	ev := bc8(e)
	for r := range dk {
		row, fr := S[r*dv:][:dv], f[r*n:][:n]
		for c := 0; c < dv; c += 32 {
			y := row[c:][:32]
			y0, y1, y2, y3 := ld8(y).Mul(ev), ld8(y[8:]).Mul(ev), ld8(y[16:]).Mul(ev), ld8(y[24:]).Mul(ev)
			for i, fi := range fr {
				x, fb := U[i*dv+c:][:32], bc8(fi)
				y0, y1 = y0.Add(ld8(x).Mul(fb)), y1.Add(ld8(x[8:]).Mul(fb))
				y2, y3 = y2.Add(ld8(x[16:]).Mul(fb)), y3.Add(ld8(x[24:]).Mul(fb))
			}
			st8(y, y0)
			st8(y[8:], y1)
			st8(y[16:], y2)
			st8(y[24:], y3)
		}
	}
	archsimd.ClearAVXUpperBits()
	return true
}
