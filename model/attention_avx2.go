//go:build goexperiment.simd && amd64

package model

import (
	"simd/archsimd"
	"unsafe"
)

// AVX2 twins of the decode step's attention kernels (attendScores,
// attendScoresF16, attendValues and attendValuesInt8 of vec_simd.go) for
// CPUs without AVX-512, with either KV cache: dot
// products summed in 8 lanes with FMA and then across lanes, so scores
// differ from attend's by float32 rounding; the softmax and the weighted
// sum are attend's operations in attend's order (exp32x8 is exp32 bit for
// bit). No scalar float code runs between vector code, as in the AVX-512
// kernels: each score leaves its vector as a 4-float store, the maximum
// is taken by permutes, and the float64 sum runs after the upper state is
// cleared.

// att2Ready: AVX2 and FMA on a CPU where the AVX-512 kernels do not run.
var att2Ready = vec2Ready && archsimd.X86.FMA()

// maxIdx8 are the lane permutations that spread the maximum of 8 lanes
// to all of them (plain arrays: a package-level vector would be loaded
// at init, before any feature check).
var maxIdx8 = [3][8]uint32{{4, 5, 6, 7, 0, 1, 2, 3}, {2, 3, 0, 1, 6, 7, 4, 5}, {1, 0, 3, 2, 5, 4, 7, 6}}

// lanes8 are the lane numbers 0–7.
var lanes8 = [8]int32{0, 1, 2, 3, 4, 5, 6, 7}

// attendScores8 is attendScores on 8 lanes. It needs D = len(q) a
// multiple of 32 and room in w for n rounded up to 8, plus 8, and
// reports whether it ran.
func attendScores8(w, q, K []float32, n, stride, off int, scale float32) bool {
	D := len(q)
	if !att2Ready || D%32 != 0 || len(w) < (n+7)&^7+8 {
		return false
	}
	scores8(w, q, K, n, stride, off)
	softmaxScores8(w, n, scale)
	return true
}

// scores8 sets w[τ] = q·k_τ for τ < n (attendScores8's dot products):
// groups of four positions by scores4x8 (attention_avx2_amd64.s), the
// rest as scoresGo8 computes them. It clears the upper state before
// returning.
func scores8(w, q, K []float32, n, stride, off int) {
	D := len(q)
	g := n / 4
	if g > 0 && useAsm8 {
		_ = K[(4*g-1)*stride+off:][:D] // the last row the kernel reads
		_ = w[:4*g]
		scores4x8(unsafe.Pointer(&w[0]), unsafe.Pointer(&q[0]), unsafe.Pointer(&K[off]), g, stride, D)
		scoresGo8(w, q, K, 4*g, n, stride, off)
		return
	}
	scoresGo8(w, q, K, 0, n, stride, off)
}

// useAsm8 switches the assembly kernels off for their twin tests.
var useAsm8 = true

//go:noescape
func scores4x8(w, q, k unsafe.Pointer, groups, stride, d int)

//go:noescape
func values8x8(o, w, v unsafe.Pointer, n, stride, d int)

// scoresGo8 is scores4x8's Go twin for positions [tau, n): four at a
// time, then one by one, each score with scores4x8's bits. It is a
// function of its own so that no float32 variable (scale) is live across
// its vector loops: the compiler would reload it there with a legacy-SSE
// MOVSS, which after 256-bit code costs ~130 ns on some x86 hosts
// (BENCHMARKS.md); it clears the upper state before returning.
//
//go:noinline
func scoresGo8(w, q, K []float32, tau, n, stride, off int) {
	D := len(q)
	qp := unsafe.Pointer(&q[0])
	for ; tau+4 <= n; tau += 4 { // four positions a pass: each chunk of q is loaded once for them
		// The rows' bounds are checked here, once; the loop below reads
		// within them by pointer (slicing per vector cost more than the
		// arithmetic).
		k0, k1 := unsafe.Pointer(&K[tau*stride+off:][:D][0]), unsafe.Pointer(&K[(tau+1)*stride+off:][:D][0])
		k2, k3 := unsafe.Pointer(&K[(tau+2)*stride+off:][:D][0]), unsafe.Pointer(&K[(tau+3)*stride+off:][:D][0])
		var a0, b0, a1, b1, a2, b2, a3, b3 f32x8
		for c := 0; c < D; c += 16 {
			qa, qb := ldp(qp, c), ldp(qp, c+8)
			a0, b0 = qa.MulAdd(ldp(k0, c), a0), qb.MulAdd(ldp(k0, c+8), b0)
			a1, b1 = qa.MulAdd(ldp(k1, c), a1), qb.MulAdd(ldp(k1, c+8), b1)
			a2, b2 = qa.MulAdd(ldp(k2, c), a2), qb.MulAdd(ldp(k2, c+8), b2)
			a3, b3 = qa.MulAdd(ldp(k3, c), a3), qb.MulAdd(ldp(k3, c+8), b3)
		}
		storeScores4(w, tau, a0.Add(b0), a1.Add(b1), a2.Add(b2), a3.Add(b3))
	}
	for ; tau < n; tau++ {
		k := K[tau*stride+off:][:D]
		var a, b f32x8
		for c := 0; c < D; c += 16 {
			a = ld8(q[c:]).MulAdd(ld8(k[c:]), a)
			b = ld8(q[c+8:]).MulAdd(ld8(k[c+8:]), b)
		}
		storeScore8(w, tau, a.Add(b))
	}
	archsimd.ClearAVXUpperBits()
}

// ldp loads the 8 floats at p + 4i bytes (the caller checked the bounds).
func ldp(p unsafe.Pointer, i int) f32x8 {
	return archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p, 4*i)))
}

// storeScores4 writes the sums of the lanes of v0…v3 to w[tau…tau+3],
// each summed as storeScore8 sums (halves, then adjacent pairs, then the
// two pair sums), by horizontal adds across the four.
func storeScores4(w []float32, tau int, v0, v1, v2, v3 f32x8) {
	x0, x1 := v0.GetLo().Add(v0.GetHi()), v1.GetLo().Add(v1.GetHi())
	x2, x3 := v2.GetLo().Add(v2.GetHi()), v3.GetLo().Add(v3.GetHi())
	x0.AddPairs(x1).AddPairs(x2.AddPairs(x3)).Store((*[4]float32)(w[tau : tau+4]))
}

// storeScore8 writes the sum of a's lanes to w[tau] (a 4-float store
// whose lanes past tau the next positions rewrite).
func storeScore8(w []float32, tau int, a f32x8) {
	s := a.GetLo().Add(a.GetHi())
	s = s.AddPairs(s)
	s = s.AddPairs(s) // every lane: q·k
	s.Store((*[4]float32)(w[tau : tau+4]))
}

// softmaxScores8 is softmaxScores on 8 lanes: w = softmax(scale·w) over
// the first n entries, attend's operations in attend's order.
func softmaxScores8(w []float32, n int, scale float32) {
	var c expK // (before any vector code: see expK)
	c.init()
	nw := (n + 7) &^ 7
	w = w[:nw+8]
	sv, ninf := bc8(scale), bc8(-inf32)
	mv := ninf
	valid := archsimd.LoadInt32x8(&lanes8).Less(archsimd.BroadcastInt32x8(int32(n - (nw - 8)))) // lanes < n of the last block
	for t0 := 0; t0 < nw; t0 += 8 {
		v := ld8(w[t0:]).Mul(sv)
		if t0 == nw-8 {
			v = v.Merge(ninf, valid) // −Inf past n: weight 0 below
		}
		st8(w[t0:], v)
		mv = mv.Max(v)
	}
	for i := range maxIdx8 { // every lane ← the maximum of all 8
		mv = mv.Max(mv.Permute(archsimd.LoadUint32x8(&maxIdx8[i])))
	}
	lo, zero := bc8(minNormalExp), f32x8{}
	for t0 := 0; t0 < nw; t0 += 8 {
		x := ld8(w[t0:]).Sub(mv)
		st8(w[t0:], zero.Merge(exp32x8(x, &c), x.Less(lo))) // decay32
	}
	archsimd.ClearAVXUpperBits()
	sum := sum64(w[:n])
	inv := bc8(float32(1 / sum))
	for t0 := 0; t0 < nw; t0 += 8 {
		st8(w[t0:], ld8(w[t0:]).Mul(inv))
	}
	archsimd.ClearAVXUpperBits()
}

// attendValues8 is attendValues on 8 lanes: o [D] = Σ_τ w[τ]·v_τ in
// attend's order (a product, then a sum: axpy's operations). It needs D
// a multiple of 32 (attendScores8 ran).
func attendValues8(o, w, V []float32, n, stride, off int) {
	D := len(o)
	if D%64 == 0 && n > 0 && useAsm8 {
		_ = V[(n-1)*stride+off:][:D] // the last row the kernel reads
		_ = w[:n]
		values8x8(unsafe.Pointer(&o[0]), unsafe.Pointer(&w[0]), unsafe.Pointer(&V[off]), n, stride, D)
		return
	}
	values8Go(o, w, V, n, stride, off)
}

// values8Go is values8x8's Go twin (any D a multiple of 32).
func values8Go(o, w, V []float32, n, stride, off int) {
	D := len(o)
	for c := 0; c < D; c += 32 {
		var o0, o1, o2, o3 f32x8
		for tau, e := range w[:n] {
			p, v := bc8(e), V[tau*stride+off+c:][:32]
			o0 = o0.Add(p.Mul(ld8(v)))
			o1 = o1.Add(p.Mul(ld8(v[8:])))
			o2 = o2.Add(p.Mul(ld8(v[16:])))
			o3 = o3.Add(p.Mul(ld8(v[24:])))
		}
		st8(o[c:], o0)
		st8(o[c+8:], o1)
		st8(o[c+16:], o2)
		st8(o[c+24:], o3)
	}
	archsimd.ClearAVXUpperBits()
}

// f16K holds ldF16x8's constants, made once per call (in place, as expK).
type f16K struct {
	sign, mag, s16, s13 archsimd.Uint32x8
	magic               f32x8
}

func (c *f16K) init() {
	bu := archsimd.BroadcastUint32x8
	c.sign, c.mag, c.s16, c.s13, c.magic = bu(0x8000), bu(0x7fff), bu(16), bu(13), bc8(f16Magic)
}

// ldF16x8 is ldF16 on 8 lanes: the fp16 values at h[0:8] widened to
// float32 exactly (per-lane shifts: a shift by a constant would compile
// to a legacy-SSE MOVQ inside the vector loop).
func ldF16x8(h []uint16, c *f16K) f32x8 {
	u := archsimd.LoadUint16x8((*[8]uint16)(h[:8])).ExtendToUint32()
	sign := u.And(c.sign).ShiftLeft(c.s16)
	mag := u.And(c.mag).ShiftLeft(c.s13).AsFloat32x8().Mul(c.magic)
	return mag.AsUint32x8().Or(sign).AsFloat32x8()
}

// attendScoresF16x8 is attendScores8 for keys in fp16 (the int8 cache's
// keys).
func attendScoresF16x8(w, q []float32, K []uint16, n, stride, off int, scale float32) bool {
	D := len(q)
	if !att2Ready || D%32 != 0 || len(w) < (n+7)&^7+8 {
		return false
	}
	scoresF16x8(w, q, K, n, stride, off)
	softmaxScores8(w, n, scale)
	return true
}

// scoresF16x8 is scores8 for keys in fp16: groups of four positions by
// scoresF16x4x8 where the CPU has F16C, the rest by scoresF16Go8.
func scoresF16x8(w, q []float32, K []uint16, n, stride, off int) {
	D := len(q)
	g := n / 4
	if g > 0 && useAsm8 && f16c {
		_ = K[(4*g-1)*stride+off:][:D] // the last row the kernel reads
		_ = w[:4*g]
		scoresF16x4x8(unsafe.Pointer(&w[0]), unsafe.Pointer(&q[0]), unsafe.Pointer(&K[off]), g, stride, D)
		scoresF16Go8(w, q, K, 4*g, n, stride, off)
		return
	}
	scoresF16Go8(w, q, K, 0, n, stride, off)
}

// f16c: the CPU has F16C, whose VCVTPH2PS the fp16 kernels use
// (archsimd does not report it; all AVX2 CPUs known have it, but a
// hypervisor may hide it).
var f16c = att2Ready && cpuF16C()

func cpuF16C() bool

//go:noescape
func scoresF16x4x8(w, q, k unsafe.Pointer, groups, stride, d int)

//go:noescape
func valuesI8x8(o, w, v unsafe.Pointer, n, stride, d int)

// scoresF16Go8 is scoresF16x4x8's Go twin for positions [tau, n), each
// score with its bits (ldF16x8 widens exactly, as VCVTPH2PS does).
//
//go:noinline
func scoresF16Go8(w, q []float32, K []uint16, tau, n, stride, off int) {
	D := len(q)
	var c f16K
	c.init()
	for ; tau < n; tau++ {
		k := K[tau*stride+off:][:D]
		var a, b f32x8
		for j := 0; j < D; j += 16 {
			a = ld8(q[j:]).MulAdd(ldF16x8(k[j:], &c), a)
			b = ld8(q[j+8:]).MulAdd(ldF16x8(k[j+8:], &c), b)
		}
		storeScore8(w, tau, a.Add(b))
	}
	archsimd.ClearAVXUpperBits()
}

// attendValuesInt8x8 is attendValuesInt8 on 8 lanes: c[τ] = w[τ]·vs[τ·hkv
// + hk] into w, then o = Σ_τ c[τ]·v_τ in attend's order. It needs D a
// multiple of 32 (attendScoresF16x8 ran).
func attendValuesInt8x8(o, w []float32, V []int8, vs []float32, n, stride, off, hk, hkv int) {
	for tau := range n {
		w[tau] *= vs[tau*hkv+hk]
	}
	D := len(o)
	if D%64 == 0 && n > 0 && useAsm8 {
		_ = V[(n-1)*stride+off:][:D] // the last row the kernel reads
		_ = w[:n]
		valuesI8x8(unsafe.Pointer(&o[0]), unsafe.Pointer(&w[0]), unsafe.Pointer(&V[off]), n, stride, D)
		return
	}
	valuesInt8Go8(o, w, V, n, stride, off)
}

// valuesInt8Go8 is valuesI8x8's Go twin: o = Σ_τ w[τ]·v_τ, 32 columns a
// pass, each column's products and sums in τ order.
func valuesInt8Go8(o, w []float32, V []int8, n, stride, off int) {
	D := len(o)
	for c := 0; c < D; c += 32 {
		var o0, o1, o2, o3 f32x8
		for tau, e := range w[:n] {
			p, v := bc8(e), V[tau*stride+off+c:][:32]
			a0, a1 := ldI8x16(v)
			a2, a3 := ldI8x16(v[16:])
			o0 = o0.Add(p.Mul(a0))
			o1 = o1.Add(p.Mul(a1))
			o2 = o2.Add(p.Mul(a2))
			o3 = o3.Add(p.Mul(a3))
		}
		st8(o[c:], o0)
		st8(o[c+8:], o1)
		st8(o[c+16:], o2)
		st8(o[c+24:], o3)
	}
	archsimd.ClearAVXUpperBits()
}

// ldI8x16 widens the 16 int8 values at v[0:16] to float32, eight a vector.
func ldI8x16(v []int8) (f32x8, f32x8) {
	x := archsimd.LoadInt8x16((*[16]int8)(v[:16]))
	q := x.AsUint64x2()
	return x.ExtendLo8ToInt32().ConvertToFloat32(), q.InterleaveHi(q).AsInt8x16().ExtendLo8ToInt32().ConvertToFloat32()
}
