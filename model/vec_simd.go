//go:build goexperiment.simd && amd64

package model

import (
	"math"
	"simd/archsimd"
	"unsafe"
)

// AVX-512 twins of the elementwise loops (vec.go), the recurrent delta
// rule step (deltaStep) and one attention head of a decode step
// (attendScores, attendValues). Each makes the scalar code's float32
// operations in the scalar code's order, lane by lane, except the
// attention's dot products
// (see there), so results are bit for bit those of the scalar code. Each
// ends with VZEROUPPER (tensor.ClearUpper explains why: the scalar code
// that follows would otherwise run many times slower).

// vecReady: the kernels need AVX-512 F; without it the scalar code runs.
var vecReady = archsimd.X86.AVX512()

type f32x16 = archsimd.Float32x16

func ld16(s []float32) f32x16    { return archsimd.LoadFloat32x16((*[16]float32)(s[:16])) }
func st16(s []float32, v f32x16) { v.Store((*[16]float32)(s[:16])) }
func bc16(x float32) f32x16      { return archsimd.BroadcastFloat32x16(x) }

// exp32x16 is exp32 on 16 lanes: the same reduction, polynomial and
// special cases; the final 2ⁿ scaling is one VSCALEFPS, which rounds
// p·2ⁿ once as exp32's one or two exact-then-rounding products do.
func exp32x16(x f32x16) f32x16 {
	const (
		log2e = 1.44269504088896341
		ln2hi = 0.693359375
		ln2lo = -2.12194440e-4
	)
	n := x.Mul(bc16(log2e)).Add(bc16(0.5)).FloorScaled(0)
	r := x.Sub(n.Mul(bc16(ln2hi))).Sub(n.Mul(bc16(ln2lo)))
	p := r.Mul(bc16(1.0 / 5040)).Add(bc16(1.0 / 720))
	p = r.Mul(p).Add(bc16(1.0 / 120))
	p = r.Mul(p).Add(bc16(1.0 / 24))
	p = r.Mul(p).Add(bc16(1.0 / 6))
	p = r.Mul(p).Add(bc16(0.5))
	p = r.Mul(p).Add(bc16(1))
	p = r.Mul(p).Add(bc16(1))
	e := p.Scale(n)
	e = bc16(inf32).Merge(e, x.Greater(bc16(88.72284)))
	e = f32x16{}.Merge(e, x.Less(bc16(-103.97208)))
	return x.Merge(e, x.IsNaN())
}

// inf32 is +Inf as a float32.
var inf32 = float32(math.Inf(1))

// actRows is the row loop of swigluFast, siluFast, mulSiluFast and
// mulSigmoidFast in assembly (act_amd64.s): for n a multiple of 16, mode
// actSwiGLU sets dst = silu(x)·y, actSiLU dst = silu(x), actSigmoid dst =
// sigmoid(x)·y, with the scalar sigmoid's operations (ops.go: e =
// exp32(−|x|) as exp32x16 makes it, then (x ≥ 0 ? 1 : e)/(1 + e)) and
// silu(x) = x·sigmoid(x), each rounded as there (y·s and s·y are the same
// bits). The loops the compiler made called exp32x16 for every vector and
// kept every value on the stack around the call: a 6912-wide SwiGLU row,
// the synth-1.4b's, took 6.7 µs where this takes 2.8.
//
//go:noescape
func actRows(dst, x, y unsafe.Pointer, n, mode int)

const (
	actSwiGLU = iota
	actSiLU
	actSigmoid
)

// decay16 is decay32 on 16 lanes.
func decay16(x f32x16) f32x16 {
	return f32x16{}.Merge(exp32x16(x), x.Less(bc16(minNormalExp)))
}

func swigluFast(g, up []float32) int {
	if !vecReady {
		return swiglu8(g, up)
	}
	n := len(g) &^ 15
	if n > 0 {
		up = up[:n]
		actRows(unsafe.Pointer(&g[0]), unsafe.Pointer(&g[0]), unsafe.Pointer(&up[0]), n, actSwiGLU)
	}
	return n
}

func siluFast(x []float32) int {
	if !vecReady {
		return silu8s(x)
	}
	n := len(x) &^ 15
	if n > 0 {
		actRows(unsafe.Pointer(&x[0]), unsafe.Pointer(&x[0]), nil, n, actSiLU)
	}
	return n
}

func mulSiluFast(o, z []float32) int {
	if !vecReady {
		return mulSilu8(o, z)
	}
	n := len(o) &^ 15
	if n > 0 {
		z = z[:n]
		actRows(unsafe.Pointer(&o[0]), unsafe.Pointer(&z[0]), unsafe.Pointer(&o[0]), n, actSwiGLU)
	}
	return n
}

func mulSigmoidFast(o, g []float32) int {
	if !vecReady {
		return mulSigmoid8(o, g)
	}
	n := len(o) &^ 15
	if n > 0 {
		g = g[:n]
		actRows(unsafe.Pointer(&o[0]), unsafe.Pointer(&g[0]), unsafe.Pointer(&o[0]), n, actSigmoid)
	}
	return n
}

func mulAddFast(y, a, b []float32) int {
	if !vecReady {
		return mulAdd8(y, a, b)
	}
	i := 0
	for ; i+16 <= len(y); i += 16 {
		st16(y[i:], ld16(y[i:]).Add(ld16(a[i:]).Mul(ld16(b[i:]))))
	}
	archsimd.ClearAVXUpperBits()
	return i
}

func axpyFast(y []float32, a float32, x []float32) int {
	if !vecReady || len(y) < 16 {
		return axpy8(y, a, x)
	}
	av, i := bc16(a), 0
	for ; i+16 <= len(y); i += 16 {
		st16(y[i:], ld16(y[i:]).Add(ld16(x[i:]).Mul(av)))
	}
	archsimd.ClearAVXUpperBits()
	return i
}

func addFast(y, a []float32) int {
	if !vecReady {
		return add8(y, a)
	}
	i := 0
	for ; i+16 <= len(y); i += 16 {
		st16(y[i:], ld16(y[i:]).Add(ld16(a[i:])))
	}
	archsimd.ClearAVXUpperBits()
	return i
}

// sumSquaresFast adds the whole groups of sixteen of x to acc in
// sumSquares' order (lane l of two float64 vectors: parts l and l+8) and
// returns how many it took.
func sumSquaresFast(acc *[16]float64, x []float32) int {
	if !vecReady {
		return sumSquares8(acc, x)
	}
	var a0, a1 archsimd.Float64x8
	i := 0
	for ; i+16 <= len(x); i += 16 {
		lo := archsimd.LoadFloat32x8((*[8]float32)(x[i : i+8])).ConvertToFloat64()
		hi := archsimd.LoadFloat32x8((*[8]float32)(x[i+8 : i+16])).ConvertToFloat64()
		a0, a1 = a0.Add(lo.Mul(lo)), a1.Add(hi.Mul(hi))
	}
	a0.Store((*[8]float64)(acc[:8]))
	a1.Store((*[8]float64)(acc[8:]))
	archsimd.ClearAVXUpperBits()
	return i
}

func mulScaleFast(dst, x []float32, r float32, scale []float32) int {
	if !vecReady {
		return mulScale8(dst, x, r, scale)
	}
	rv, i := bc16(r), 0
	for ; i+16 <= len(dst); i += 16 {
		st16(dst[i:], ld16(x[i:]).Mul(rv).Mul(ld16(scale[i:])))
	}
	archsimd.ClearAVXUpperBits()
	return i
}

func mulScalarFast(x []float32, r float32) int {
	if !vecReady {
		return mulScalar8(x, r)
	}
	rv, i := bc16(r), 0
	for ; i+16 <= len(x); i += 16 {
		st16(x[i:], ld16(x[i:]).Mul(rv))
	}
	archsimd.ClearAVXUpperBits()
	return i
}

// deltaRule128 is deltaStepFast on 128 columns (deltarule_amd64.s).
//
//go:noescape
func deltaRule128(S, src, k, q, v, o unsafe.Pointer, dk, stride int, alpha, beta float32)

// deltaStepFast is deltaStepFrom's recurrence (α = e^g already computed) on
// 16 columns of S at a time: every column's sums run over the key rows in
// deltaStep's order, so the results are its own. It needs dv a multiple
// of 16 and reports whether it ran. Whole blocks of 128 columns go to
// deltaRule128, which keeps a row's eight vectors in registers and reads
// 512 contiguous bytes of each row (a synth-1.4b head of 128×128 from
// DRAM: 7.2–8.0 → 2.8–3.1 µs, from L2 2.4 → 1.0–1.3 µs; BENCHMARKS.md);
// the compiler's code for the same pass kept its accumulators on the
// stack and was slower than 32 columns a pass in cache.
func deltaStepFast(S, src, q, k, v []float32, alpha, beta float32, o []float32) bool {
	dk, dv := len(k), len(v)
	if !vecReady || dv%16 != 0 {
		return deltaStep8(S, src, q, k, v, alpha, beta, o)
	}
	S, src = S[:dk*dv], src[:dk*dv]
	q = q[:dk]
	a, b := bc16(alpha), bc16(beta)
	c := 0
	for ; dk > 0 && c+128 <= dv; c += 128 {
		deltaRule128(unsafe.Pointer(&S[c]), unsafe.Pointer(&src[c]), unsafe.Pointer(&k[0]), unsafe.Pointer(&q[0]),
			unsafe.Pointer(&v[c]), unsafe.Pointer(&o[c]), dk, 4*dv, alpha, beta)
	}
	for ; c+32 <= dv; c += 32 { // 32 columns a pass: one broadcast of k_i, q_i per row for two vectors
		var w0, w1 f32x16
		for i, ki := range k {
			row, from := S[i*dv+c:][:32], src[i*dv+c:][:32]
			r0, r1 := ld16(from).Mul(a), ld16(from[16:]).Mul(a)
			st16(row, r0)
			st16(row[16:], r1)
			kb := bc16(ki)
			w0, w1 = w0.Add(kb.Mul(r0)), w1.Add(kb.Mul(r1))
		}
		u0, u1 := b.Mul(ld16(v[c:]).Sub(w0)), b.Mul(ld16(v[c+16:]).Sub(w1))
		var o0, o1 f32x16
		for i, ki := range k {
			row := S[i*dv+c:][:32]
			kb, qb := bc16(ki), bc16(q[i])
			r0, r1 := ld16(row).Add(kb.Mul(u0)), ld16(row[16:]).Add(kb.Mul(u1))
			st16(row, r0)
			st16(row[16:], r1)
			o0, o1 = o0.Add(qb.Mul(r0)), o1.Add(qb.Mul(r1))
		}
		st16(o[c:], o0)
		st16(o[c+16:], o1)
	}
	for ; c < dv; c += 16 {
		var w f32x16
		for i, ki := range k {
			row := S[i*dv+c:]
			r := ld16(src[i*dv+c:]).Mul(a)
			st16(row, r)
			w = w.Add(bc16(ki).Mul(r))
		}
		u := b.Mul(ld16(v[c:]).Sub(w))
		var oc f32x16
		for i, ki := range k {
			row := S[i*dv+c:]
			r := ld16(row).Add(bc16(ki).Mul(u))
			st16(row, r)
			oc = oc.Add(bc16(q[i]).Mul(r))
		}
		st16(o[c:], oc)
	}
	archsimd.ClearAVXUpperBits()
	return true
}

// attendScores is the softmax of one query head of a decode step's
// attention (attend with t = 0): w[τ] = softmax(q·k_τ·scale) over the n
// cached keys, K rows at stride floats from offset off. w must have room
// for n rounded up to a multiple of 16, plus 16. The softmax is attend's
// operations in attend's order; the dot products q·k are summed in 16
// lanes with FMA and then across lanes (not attend's four partial sums),
// so scores differ from attend's by float32 rounding. No scalar float
// code runs between vector code (it would run in the slow dirty-upper
// state): each score leaves its vector as a 4-float store, and the
// maximum is taken by permutes. It needs D = len(q) a multiple of 64 and
// reports whether it ran.
func attendScores(w, q, K []float32, n, stride, off int, scale float32) bool {
	if !vecReady {
		return attendScores8(w, q, K, n, stride, off, scale)
	}
	D := len(q)
	if !scoresFit(w, D, n) {
		return false
	}
	scores16(w, 0, q, 1, K, n, stride, off)
	softmaxScores(w, n, scale)
	return true
}

// attendScoresHeads is attendScores for heads query heads that read the
// same keys (a KV head's): q holds their queries one after another, w
// their weights ws floats apart (each head's room, as attendScores needs
// it: n rounded up to 16, plus 16), and each head gets attendScores' bits.
func attendScoresHeads(w []float32, ws int, q, K []float32, heads, n, stride, off int, scale float32) bool {
	return scoresHeads(w, ws, q, K, heads, n, stride, off, scale, attendScores, scores16)
}

// scoresHeads is attendScoresHeads for keys of either kind (float32, or
// fp16 as uint16): one, a head's attendScores, where the kernels do not
// fit; else all, the heads' dot products at once, then each head's
// softmax.
func scoresHeads[E float32 | uint16](w []float32, ws int, q []float32, K []E, heads, n, stride, off int, scale float32,
	one func(w, q []float32, K []E, n, stride, off int, scale float32) bool,
	all func(w []float32, ws int, q []float32, heads int, K []E, n, stride, off int)) bool {
	D := len(q) / heads
	if heads > 1 && ws < (n+15)&^15+16 {
		return false // the heads' scores would overlap
	}
	if !vecReady || !scoresFit(w[(heads-1)*ws:], D, n) {
		for i := range heads {
			if !one(w[i*ws:], q[i*D:(i+1)*D], K, n, stride, off, scale) {
				return false
			}
		}
		return true
	}
	all(w, ws, q, heads, K, n, stride, off)
	for i := range heads {
		softmaxScores(w[i*ws:], n, scale)
	}
	return true
}

// scores16 sets w_i[τ] = q_i·k_τ for τ < n and heads query heads i
// (q_i = q[i·D:(i+1)·D], w_i = w[i·ws:]; attendScores' dot products):
// sixteen positions a pass for every head by scores16x16
// (scores_amd64.s), the rest one by one. Each position's products go to
// two accumulators of 16 lanes (a: columns 64j … 64j+15 and 64j+32 …
// 64j+47 by fused multiply-adds in column order, b: the others), and s =
// a + b is summed across lanes by storeScore; the kernel keeps those
// operations, so both give the same bits.
func scores16(w []float32, ws int, q []float32, heads int, K []float32, n, stride, off int) {
	D := len(q) / heads
	tau := 0
	if g := n / 16; g > 0 && useScores16 {
		_ = K[(16*g-1)*stride+off:][:D] // the last row the kernel reads
		_ = w[(heads-1)*ws:][:16*g]
		scores16x16(unsafe.Pointer(&w[0]), unsafe.Pointer(&q[0]), unsafe.Pointer(&K[off]), g, stride, D, heads, 4*ws)
		tau = 16 * g
	}
	for i := range heads {
		qi, wi := q[i*D:(i+1)*D], w[i*ws:]
		for t := tau; t < n; t++ {
			k := K[t*stride+off:][:D]
			var a, b f32x16
			for c := 0; c < D; c += 64 {
				a = ld16(qi[c:]).MulAdd(ld16(k[c:]), a)
				b = ld16(qi[c+16:]).MulAdd(ld16(k[c+16:]), b)
				a = ld16(qi[c+32:]).MulAdd(ld16(k[c+32:]), a)
				b = ld16(qi[c+48:]).MulAdd(ld16(k[c+48:]), b)
			}
			storeScore(wi, t, a.Add(b))
		}
	}
}

// values4 is attendValues for four query heads that read the same
// values (a KV head's) by values4x16 (scores_amd64.s), each head with
// attendValues' bits: o holds their outputs one after another, w their
// weights ws floats apart. It reports whether it ran (AVX-512, D a
// multiple of 64).
func values4(o, w []float32, ws int, V []float32, n, stride, off int) bool {
	D := len(o) / 4
	if !vecReady || D%64 != 0 || n < 1 {
		return false
	}
	_ = V[(n-1)*stride+off:][:D] // the last row the kernel reads
	_ = w[3*ws:][:n]
	values4x16(unsafe.Pointer(&o[0]), unsafe.Pointer(&w[0]), unsafe.Pointer(&V[off]), n, stride, D, 4*ws)
	return true
}

//go:noescape
func values4x16(o, w, v unsafe.Pointer, n, stride, d, wstep int)

// valuesI8 is attendValuesInt8 for four query heads that read the same
// int8 values (KV head hk of hkv) by valuesI8x16, each head with its bits
// (each weight times its position's value scale, then the sums in
// attendValuesInt8's order); unlike attendValuesInt8 it leaves w as it
// is. It reports whether it ran.
func valuesI8(o, w []float32, ws int, V []int8, vs []float32, n, stride, off, hk, hkv int) bool {
	D := len(o) / 4
	if !vecReady || D%64 != 0 || n < 1 {
		return false
	}
	_ = V[(n-1)*stride+off:][:D] // the last row the kernel reads
	_ = vs[(n-1)*hkv+hk]
	_ = w[3*ws:][:n]
	valuesI8x16(unsafe.Pointer(&o[0]), unsafe.Pointer(&w[0]), unsafe.Pointer(&V[off]), n, stride, D, 4*ws, unsafe.Pointer(&vs[hk]), 4*hkv)
	return true
}

//go:noescape
func valuesI8x16(o, w, v unsafe.Pointer, n, stride, d, wstep int, vs unsafe.Pointer, vstride int)

// scores16x16 is scores16's kernel for τ < 16·groups (scores_amd64.s):
// q_i at q + 4·d·i bytes, w_i at w + wstep·i bytes, k_τ at k +
// 4·stride·τ bytes, d floats (a multiple of 64).
//
//go:noescape
func scores16x16(w, q, k unsafe.Pointer, groups, stride, d, heads, wstep int)

// useScores16 switches scores16x16 and scoresF16x16 off for their twin
// tests.
var useScores16 = true

// attendScoresF16 is attendScores for keys in fp16 (the int8 cache's
// keys, widened exactly by ldF16).
func attendScoresF16(w, q []float32, K []uint16, n, stride, off int, scale float32) bool {
	if !vecReady {
		return attendScoresF16x8(w, q, K, n, stride, off, scale)
	}
	return attendScoresF16Heads(w, 0, q, K, 1, n, stride, off, scale)
}

// attendScoresF16Heads is attendScoresHeads for keys in fp16.
func attendScoresF16Heads(w []float32, ws int, q []float32, K []uint16, heads, n, stride, off int, scale float32) bool {
	return scoresHeads(w, ws, q, K, heads, n, stride, off, scale, attendScoresF16, scoresF16)
}

// scoresF16 is scores16 for keys in fp16: per position, a gathers the
// products of columns 32j … 32j+15 by fused multiply-adds in column
// order, b those of 32j+16 … 32j+31; scoresF16x16 (scores_amd64.s) runs
// the passes of sixteen positions with the same bits.
func scoresF16(w []float32, ws int, q []float32, heads int, K []uint16, n, stride, off int) {
	D := len(q) / heads
	tau := 0
	if g := n / 16; g > 0 && useScores16 {
		_ = K[(16*g-1)*stride+off:][:D] // the last row the kernel reads
		_ = w[(heads-1)*ws:][:16*g]
		scoresF16x16(unsafe.Pointer(&w[0]), unsafe.Pointer(&q[0]), unsafe.Pointer(&K[off]), g, stride, D, heads, 4*ws)
		tau = 16 * g
	}
	for i := range heads {
		qi, wi := q[i*D:(i+1)*D], w[i*ws:]
		for t := tau; t < n; t++ {
			k := K[t*stride+off:][:D]
			var a, b f32x16
			for c := 0; c < D; c += 32 {
				a = ld16(qi[c:]).MulAdd(ldF16(k[c:]), a)
				b = ld16(qi[c+16:]).MulAdd(ldF16(k[c+16:]), b)
			}
			storeScore(wi, t, a.Add(b))
		}
	}
}

//go:noescape
func scoresF16x16(w, q, k unsafe.Pointer, groups, stride, d, heads, wstep int)

// scoresFit reports whether the score kernels run: vector kernels, D a
// multiple of 64 and room in w for n rounded up to 16, plus 16.
func scoresFit(w []float32, D, n int) bool {
	return vecReady && D%64 == 0 && len(w) >= (n+15)&^15+16
}

// f16Magic scales an fp16 exponent, moved into float32's field, to its
// value: 2^(127−15).
const f16Magic = 0x1p112

// ldF16 widens the 16 fp16 values at h[0:16] to float32, exactly for every
// finite value (subnormals included: the magnitude's bits, shifted into a
// float32, times 2^112), as tensor.F16ToF32.
func ldF16(h []uint16) f32x16 {
	u := archsimd.LoadUint16x16((*[16]uint16)(h[:16])).ExtendToUint32()
	sign := u.And(archsimd.BroadcastUint32x16(0x8000)).ShiftAllLeft(16)
	mag := u.And(archsimd.BroadcastUint32x16(0x7fff)).ShiftAllLeft(13).AsFloat32x16().Mul(bc16(f16Magic))
	return mag.AsUint32x16().Or(sign).AsFloat32x16()
}

// storeScore writes the sum of a's lanes to w[tau] (a 4-float store whose
// lanes past tau the next positions rewrite).
func storeScore(w []float32, tau int, a f32x16) {
	h := a.GetLo().Add(a.GetHi())
	s := h.GetLo().Add(h.GetHi())
	s = s.AddPairs(s)
	s = s.AddPairs(s) // every lane: q·k
	s.Store((*[4]float32)(w[tau : tau+4]))
}

// softmaxScores turns the n dot products in w into attention weights:
// w = softmax(scale·w), attend's operations in attend's order, with no
// scalar float code between vector code (the maximum is taken by
// permutes; the float64 sum runs after the upper state is cleared).
func softmaxScores(w []float32, n int, scale float32) {
	nw := (n + 15) &^ 15
	w = w[:nw+16]
	sv, mv := bc16(scale), bc16(-inf32)
	last := archsimd.Mask32x16FromBits(uint16(1)<<(n-(nw-16)) - 1) // lanes < n of the last block
	for t0 := 0; t0 < nw; t0 += 16 {
		v := ld16(w[t0:]).Mul(sv)
		if t0 == nw-16 {
			v = v.Merge(bc16(-inf32), last) // −Inf past n: weight 0 below
		}
		st16(w[t0:], v)
		mv = mv.Max(v)
	}
	for _, idx := range &maxIdx { // every lane ← the maximum of all 16
		mv = mv.Max(mv.Permute(archsimd.LoadUint32x16(idx)))
	}
	for t0 := 0; t0 < nw; t0 += 16 {
		st16(w[t0:], decay16(ld16(w[t0:]).Sub(mv)))
	}
	archsimd.ClearAVXUpperBits()
	sum := sum64(w[:n])
	inv := bc16(float32(1 / sum))
	for t0 := 0; t0 < nw; t0 += 16 {
		st16(w[t0:], ld16(w[t0:]).Mul(inv))
	}
	archsimd.ClearAVXUpperBits()
}

// attendValues sets o [D] to Σ_τ w[τ]·v_τ over the n cached values, V
// rows at stride floats from offset off: attend's weighted sum in
// attend's order. It needs D a multiple of 64 (attendScores ran).
func attendValues(o, w, V []float32, n, stride, off int) {
	if !vecReady {
		attendValues8(o, w, V, n, stride, off)
		return
	}
	D := len(o)
	for c := 0; c < D; c += 64 {
		var o0, o1, o2, o3 f32x16
		for tau, e := range w[:n] {
			p, v := bc16(e), V[tau*stride+off+c:][:64]
			o0 = o0.Add(p.Mul(ld16(v)))
			o1 = o1.Add(p.Mul(ld16(v[16:])))
			o2 = o2.Add(p.Mul(ld16(v[32:])))
			o3 = o3.Add(p.Mul(ld16(v[48:])))
		}
		st16(o[c:], o0)
		st16(o[c+16:], o1)
		st16(o[c+32:], o2)
		st16(o[c+48:], o3)
	}
	archsimd.ClearAVXUpperBits()
}

// attendValuesInt8 sets o [D] to Σ_τ c[τ]·v_τ over n int8 cached values
// (V rows at stride bytes from offset off), c[τ] = w[τ]·vs[τ·hkv + hk]
// (their scales, per token and KV head): attend's int8 weighted sum in
// attend's order. w is overwritten with c. It needs D a multiple of 64.
func attendValuesInt8(o, w []float32, V []int8, vs []float32, n, stride, off, hk, hkv int) {
	if !vecReady {
		attendValuesInt8x8(o, w, V, vs, n, stride, off, hk, hkv)
		return
	}
	for tau := range n {
		w[tau] *= vs[tau*hkv+hk]
	}
	D := len(o)
	for c := 0; c < D; c += 64 {
		var o0, o1, o2, o3 f32x16
		for tau, e := range w[:n] {
			p, v := bc16(e), V[tau*stride+off+c:][:64]
			o0 = o0.Add(p.Mul(ldI8(v)))
			o1 = o1.Add(p.Mul(ldI8(v[16:])))
			o2 = o2.Add(p.Mul(ldI8(v[32:])))
			o3 = o3.Add(p.Mul(ldI8(v[48:])))
		}
		st16(o[c:], o0)
		st16(o[c+16:], o1)
		st16(o[c+32:], o2)
		st16(o[c+48:], o3)
	}
	archsimd.ClearAVXUpperBits()
}

// ldI8 widens the 16 int8 values at v[0:16] to float32.
func ldI8(v []int8) f32x16 {
	return archsimd.LoadInt8x16((*[16]int8)(v[:16])).ExtendToInt32().ConvertToFloat32()
}

// maxIdx are the lane permutations of attendScores' maximum: swap halves,
// quarters, pairs, neighbours.
var maxIdx = [4]*[16]uint32{
	{8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7},
	{4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11},
	{2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13},
	{1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14},
}
