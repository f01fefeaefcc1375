//go:build goexperiment.simd && amd64

package model

import (
	"math"
	"math/rand/v2"
	"testing"

	"forge/tensor"
)

// TestAttentionAsm8: the AVX2 assembly kernels of decode attention give
// their Go twins' bits: scores (four positions a pass, then the rest one
// by one) for n = 1…13 and 130 positions, D = 32 (Go only), 64 and 128,
// a key row stride wider than D and an offset into it (a KV head that is
// not the first); weighted sums for D = 64 and 128; and the same for the
// int8 cache (fp16 keys, where the CPU has F16C; int8 values and their
// scales).
func TestAttentionAsm8(t *testing.T) {
	if !att2Ready {
		t.Skip("no AVX2 attention kernels on this CPU")
	}
	g := rand.New(rand.NewPCG(3, 4))
	for _, D := range []int{32, 64, 128} {
		stride, off := 3*D, D
		for _, n := range []int{1, 2, 3, 4, 5, 7, 8, 9, 12, 13, 130} {
			K := make([]float32, n*stride)
			for i := range K {
				K[i] = float32(g.NormFloat64())
			}
			q := make([]float32, D)
			for i := range q {
				q[i] = float32(g.NormFloat64())
			}
			wa, wg := make([]float32, n+16), make([]float32, n+16)
			scores8(wa, q, K, n, stride, off)
			useAsm8 = false
			scores8(wg, q, K, n, stride, off)
			useAsm8 = true
			for i := range n {
				if math.Float32bits(wa[i]) != math.Float32bits(wg[i]) {
					t.Fatalf("scores D=%d n=%d: position %d = %v, Go twin %v", D, n, i, wa[i], wg[i])
				}
			}
			// The int8 cache's keys: fp16 (every class: normal, subnormal,
			// zero of both signs), and the F16C kernel's scores against
			// the Go twin's.
			K16 := make([]uint16, n*stride)
			tensor.F32ToF16Slice(K16, K)
			for i := 0; i < len(K16); i += 7 {
				K16[i] = uint16(g.Uint32()) &^ 0x7c00 // exponent 0: subnormals and zeros
			}
			if f16c {
				clear(wa)
				clear(wg)
				scoresF16x8(wa, q, K16, n, stride, off)
				useAsm8 = false
				scoresF16x8(wg, q, K16, n, stride, off)
				useAsm8 = true
				for i := range n {
					if math.Float32bits(wa[i]) != math.Float32bits(wg[i]) {
						t.Fatalf("fp16 scores D=%d n=%d: position %d = %v, Go twin %v", D, n, i, wa[i], wg[i])
					}
				}
			}
			if D%64 != 0 {
				continue
			}
			w := make([]float32, n)
			for i := range w {
				w[i] = float32(g.Float64())
			}
			oa, og := make([]float32, D), make([]float32, D)
			attendValues8(oa, w, K, n, stride, off)
			values8Go(og, w, K, n, stride, off)
			for i := range D {
				if math.Float32bits(oa[i]) != math.Float32bits(og[i]) {
					t.Fatalf("values D=%d n=%d: column %d = %v, Go twin %v", D, n, i, oa[i], og[i])
				}
			}
			// Int8 values with their scales (per position and KV head):
			// the assembly's weighted sum against the Go twin's.
			V := make([]int8, n*stride)
			for i := range V {
				V[i] = int8(g.IntN(255) - 127)
			}
			const hk, hkv = 1, 2
			vs := make([]float32, n*hkv)
			for i := range vs {
				vs[i] = float32(g.Float64()) / 127
			}
			wa8, wg8 := append([]float32(nil), w...), append([]float32(nil), w...)
			attendValuesInt8x8(oa, wa8, V, vs, n, stride, off, hk, hkv)
			useAsm8 = false
			attendValuesInt8x8(og, wg8, V, vs, n, stride, off, hk, hkv)
			useAsm8 = true
			for i := range D {
				if math.Float32bits(oa[i]) != math.Float32bits(og[i]) {
					t.Fatalf("int8 values D=%d n=%d: column %d = %v, Go twin %v", D, n, i, oa[i], og[i])
				}
			}
		}
	}
}

// BenchmarkAttend8 times one query head's decode attention over 512
// cached positions of D = 64 (forge-tiny's heads at the end of a pp512
// bench): the scores with their softmax, then the weighted sum, by the
// assembly kernels and by their Go twins (the peer, in the same run).
func BenchmarkAttend8(b *testing.B) {
	if !att2Ready {
		b.Skip("no AVX2 attention kernels on this CPU")
	}
	n, D := 512, 64
	g := rand.New(rand.NewPCG(5, 6))
	q, K := make([]float32, D), make([]float32, n*D)
	for i := range K {
		K[i] = float32(g.NormFloat64())
	}
	for i := range q {
		q[i] = float32(g.NormFloat64())
	}
	w, o := make([]float32, n+16), make([]float32, D)
	for _, asm := range []bool{true, false} {
		name := map[bool]string{true: "asm", false: "go"}[asm]
		b.Run("scores/"+name, func(b *testing.B) {
			useAsm8 = asm
			defer func() { useAsm8 = true }()
			for b.Loop() {
				attendScores8(w, q, K, n, D, 0, 0.125)
			}
		})
		b.Run("values/"+name, func(b *testing.B) {
			useAsm8 = asm
			defer func() { useAsm8 = true }()
			for b.Loop() {
				attendValues8(o, w, K, n, D, 0)
			}
		})
	}
}
