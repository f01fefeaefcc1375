//go:build goexperiment.simd && amd64

package lut

import (
	"math"
	"simd/archsimd"
)

// Byte and lane orders of quantize8 (plain arrays, loaded after its
// feature check; see evenOddIdx). A chunk of 32 columns (four scale
// groups of one step) leaves its two VPACKSSDWs as int16 columns 0–15 and
// 16–31; phaseShuf picks their low bytes, even columns into dwords 0 and
// 1 (the first 16 columns) or 0 and 1 of the other pack's half (the
// second 16), odd columns into dwords 2 and 3; phasePerm then gathers the
// even dwords into the low 16 bytes (the chunk's place in the step's
// even half) and the odd ones into the high 16.
var (
	phaseShuf0 = [32]int8{0, 4, 8, 12, -1, -1, -1, -1, 2, 6, 10, 14, -1, -1, -1, -1,
		0, 4, 8, 12, -1, -1, -1, -1, 2, 6, 10, 14, -1, -1, -1, -1}
	phaseShuf1 = [32]int8{-1, -1, -1, -1, 0, 4, 8, 12, -1, -1, -1, -1, 2, 6, 10, 14,
		-1, -1, -1, -1, 0, 4, 8, 12, -1, -1, -1, -1, 2, 6, 10, 14}
	phasePerm = [8]uint32{0, 4, 1, 5, 2, 6, 3, 7}
)

// quantize8 is quantizeRow's AVX2 twin (quantizeFast is the AVX-512 one)
// for rows of whole steps (len(x) a multiple of 128; ok is false
// otherwise, or without AVX2): the same float32 products, divisions and
// round-half-even, so the same codes, scales and k; it also sets qs (when
// not nil) to laneSums' values. All of it is vector work but k's float32
// sum, which runs in group order after the block's vectors: per block,
// the 16 group maxima (eight lanes of a group per step, then a transposing
// max tree over eight groups at once), then chunk by chunk of four groups
// the codes, packed to bytes in phase layout and summed per group.
func quantize8(q []int8, d []float32, qs []int32, x []float32) (k float32, ok bool) {
	if !int8A2 || len(x)%int8Step != 0 || len(q) != len(x) {
		return 0, false
	}
	abs := archsimd.BroadcastUint32x8(0x7fffffff)
	c127, tiny := archsimd.BroadcastFloat32x8(127), archsimd.BroadcastFloat32x8(int8Tiny)
	shuf0, shuf1 := archsimd.LoadInt8x32(&phaseShuf0), archsimd.LoadInt8x32(&phaseShuf1)
	perm := archsimd.LoadUint32x8(&phasePerm)
	var inv [16]float32
	var sums [16]int32
	var kb uint32 // k's float32 bits (addK)
	for b := 0; 16*b < len(d); b++ {
		c0, c1 := b*int8Block, min(len(x), (b+1)*int8Block)
		for h := range 2 { // groups 8h … 8h+7
			xb := x[c0+64*h : c1]
			mx := max8(amax8(xb, abs), amax8(xb[8:], abs), amax8(xb[16:], abs), amax8(xb[24:], abs),
				amax8(xb[32:], abs), amax8(xb[40:], abs), amax8(xb[48:], abs), amax8(xb[56:], abs))
			mx.Div(c127).Store((*[8]float32)(d[16*b+8*h:]))
			c127.Div(mx.Max(tiny)).Store((*[8]float32)(inv[8*h:]))
		}
		for j := range 4 { // groups 4j … 4j+3: columns 32j … 32j+31 of each step
			v0, v1 := archsimd.BroadcastFloat32x8(inv[4*j]), archsimd.BroadcastFloat32x8(inv[4*j+1])
			v2, v3 := archsimd.BroadcastFloat32x8(inv[4*j+2]), archsimd.BroadcastFloat32x8(inv[4*j+3])
			var s0, s1, s2, s3 archsimd.Int32x8
			for s := c0; s < c1; s += int8Step {
				xs := x[s+32*j:]
				a0 := archsimd.LoadFloat32x8((*[8]float32)(xs)).Mul(v0).RoundToEven().ConvertToInt32()
				a1 := archsimd.LoadFloat32x8((*[8]float32)(xs[8:])).Mul(v1).RoundToEven().ConvertToInt32()
				a2 := archsimd.LoadFloat32x8((*[8]float32)(xs[16:])).Mul(v2).RoundToEven().ConvertToInt32()
				a3 := archsimd.LoadFloat32x8((*[8]float32)(xs[24:])).Mul(v3).RoundToEven().ConvertToInt32()
				s0, s1, s2, s3 = s0.Add(a0), s1.Add(a1), s2.Add(a2), s3.Add(a3)
				p01 := a0.Select128FromPair(0, 2, a1).SaturateToInt16ConcatGrouped(a0.Select128FromPair(1, 3, a1))
				p23 := a2.Select128FromPair(0, 2, a3).SaturateToInt16ConcatGrouped(a2.Select128FromPair(1, 3, a3))
				t := p01.AsInt8x32().PermuteOrZeroGrouped(shuf0).Or(p23.AsInt8x32().PermuteOrZeroGrouped(shuf1))
				t = t.AsInt32x8().Permute(perm).AsInt8x32()
				t.GetLo().Store((*[16]int8)(q[s+16*j:]))
				t.GetHi().Store((*[16]int8)(q[s+64+16*j:]))
			}
			n := s0.AddPairsGrouped(s1).AddPairsGrouped(s2.AddPairsGrouped(s3))
			n.GetLo().Add(n.GetHi()).Store((*[4]int32)(sums[4*j:]))
		}
		archsimd.ClearAVXUpperBits()
		kb = addK(kb, &sums, d[16*b:][:16], qs)
		if qs != nil {
			qs = qs[16:]
		}
	}
	return math.Float32frombits(kb), true
}

// addK returns k + Σ_g float32(128·sums[g])·d[g] in group order, k and the
// result as float32 bits, and sets qs[g] = 128·sums[g] when qs is not
// nil. It is apart from quantize8, and k an integer there, so that no
// float32 variable lives across quantize8's vector loops: the compiler
// spills and reloads those with legacy SSE instructions, which after
// 256-bit code cost ~130 ns each on some x86 hosts (BENCHMARKS.md).
//
//go:noinline
func addK(kb uint32, sums *[16]int32, d []float32, qs []int32) uint32 {
	k := math.Float32frombits(kb)
	for g, s := range sums {
		if qs != nil {
			qs[g] = 128 * s
		}
		k += float32(float32(128*s) * d[g])
	}
	return math.Float32bits(k)
}

// amax8 returns the lane maxima of |x| over the steps of x: lanes 0–7 of
// every 128 columns.
func amax8(x []float32, abs archsimd.Uint32x8) archsimd.Float32x8 {
	m := archsimd.LoadFloat32x8((*[8]float32)(x)).AsUint32x8().And(abs).AsFloat32x8()
	for s := int8Step; s < len(x); s += int8Step {
		m = m.Max(archsimd.LoadFloat32x8((*[8]float32)(x[s:])).AsUint32x8().And(abs).AsFloat32x8())
	}
	return m
}

// max8 returns the eight vectors' maxima, m[g]'s in lane g: per 128-bit
// half, the max of two shuffles of each pair ([x0 x1 y0 y1] and
// [x2 x3 y2 y3]), then of two shuffles of pairs of those, then of the
// halves.
func max8(m0, m1, m2, m3, m4, m5, m6, m7 archsimd.Float32x8) archsimd.Float32x8 {
	a0, a1, a2, a3 := pairMax(m0, m1), pairMax(m2, m3), pairMax(m4, m5), pairMax(m6, m7)
	b0 := a0.SelectFromPairGrouped(0, 2, 4, 6, a1).Max(a0.SelectFromPairGrouped(1, 3, 5, 7, a1))
	b1 := a2.SelectFromPairGrouped(0, 2, 4, 6, a3).Max(a2.SelectFromPairGrouped(1, 3, 5, 7, a3))
	return b0.Select128FromPair(0, 2, b1).Max(b0.Select128FromPair(1, 3, b1))
}

// pairMax returns, per 128-bit half, x's two partial maxima then y's.
func pairMax(x, y archsimd.Float32x8) archsimd.Float32x8 {
	return x.SelectFromPairGrouped(0, 1, 4, 5, y).Max(x.SelectFromPairGrouped(2, 3, 6, 7, y))
}
