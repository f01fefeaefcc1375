//go:build goexperiment.simd && amd64

package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"simd/archsimd"
	"testing"

	"forge/tensor"
)

// TestExp32x16 checks that the vector exp32 gives exp32's bits for every
// float32 at a stride over the whole range (both signs, NaNs and
// infinities included), for the special inputs of vecInputs, and around
// the ends of the direct 2ᵏ scaling and the cut-offs (checkExpLanes).
func TestExp32x16(t *testing.T) {
	if !vecReady {
		t.Skip("no AVX-512: the vector kernels do not run")
	}
	var x, got [16]float32
	checkExpLanes(t, "exp32x16", x[:], got[:], func() { exp32x16(archsimd.LoadFloat32x16(&x)).Store(&got) })
}

// TestExp32x8 is TestExp32x16 for the AVX2 twin.
func TestExp32x8(t *testing.T) {
	if !vec2Ready {
		t.Skip("the AVX2 kernels run only on CPUs with AVX2 and without AVX-512")
	}
	var x, got [8]float32
	var c expK
	c.init()
	checkExpLanes(t, "exp32x8", x[:], got[:], func() {
		exp32x8(archsimd.LoadFloat32x8(&x), &c).Store(&got)
		archsimd.ClearAVXUpperBits()
	})
}

// checkExpLanes fills x with batches of inputs, calls run (got = the
// vector exp of x) and compares every lane with exp32, bit for bit.
func checkExpLanes(t *testing.T, name string, x, got []float32, run func()) {
	t.Helper()
	check := func() {
		run()
		for i, v := range got {
			if w := exp32(x[i]); !sameBits(v, w) {
				t.Fatalf("%s(%v) = %v (%#x), exp32 %v (%#x)", name, x[i], v, math.Float32bits(v), w, math.Float32bits(w))
			}
		}
	}
	step := uint64(1) << 10
	if testing.Short() {
		step = 1 << 14
	}
	for b, i := uint64(0), 0; b < 1<<32; b += step - 3 {
		x[i] = math.Float32frombits(uint32(b))
		if i++; i == len(x) {
			check()
			i = 0
		}
	}
	copy(x, vecInputs(len(x), 9))
	check()
	// Around the ends of the direct scaling (k = −125 and 127) and the
	// subnormal and overflow cut-offs.
	for _, c := range []float32{-86.64, -87.33654, -88.0, -103.97, 87.9, 88.72, 88.72284} {
		for i := range x {
			x[i] = math.Nextafter32(c, 0) - float32(i)*1e-5
		}
		check()
	}
}

// TestLdF16 checks the vector fp16 widening against tensor.F16ToF32 on
// every finite fp16 value (normal, subnormal, both zeros).
func TestLdF16(t *testing.T) {
	if !vecReady {
		t.Skip("no AVX-512: the vector kernels do not run")
	}
	var h [16]uint16
	var got [16]float32
	for base := 0; base < 1<<16; base += 16 {
		for i := range h {
			h[i] = uint16(base + i)
		}
		ldF16(h[:]).Store(&got)
		for i, v := range got {
			if h[i]&0x7c00 == 0x7c00 {
				continue // Inf and NaN: the cache holds finite keys
			}
			if w := tensor.F16ToF32(h[i]); !sameBits(v, w) {
				t.Fatalf("ldF16(%#04x) = %v, F16ToF32 %v", h[i], v, w)
			}
		}
	}
}

// TestDeltaChunkTwins: the chunked delta rule with the build's vector
// kernels (on AVX2: the row sums kept in registers, s0Dots, rowsAxpyFast,
// stateUpdate) gives the scalar loops' bits, state and outputs, for chunk
// lengths 1–64 and value widths that do and do not take the kernels.
func TestDeltaChunkTwins(t *testing.T) {
	g := rand.New(rand.NewPCG(9, 10))
	for _, dims := range [][2]int{{32, 32}, {128, 128}, {16, 48}, {8, 24}} {
		dk, dv := dims[0], dims[1]
		for _, n := range []int{1, 2, 5, 17, 64} {
			S1 := make([]float32, dk*dv)
			for i := range S1 {
				S1[i] = float32(g.NormFloat64())
			}
			S2 := append([]float32(nil), S1...)
			Q, K, V := make([]float32, n*dk), make([]float32, n*dk), make([]float32, n*dv)
			for i := range K {
				Q[i] = float32(g.NormFloat64() / float64(dk))
				K[i] = float32(g.NormFloat64() / math.Sqrt(float64(dk)))
			}
			for i := range V {
				V[i] = float32(g.NormFloat64())
			}
			gl, beta := make([]float32, n), make([]float32, n)
			for i := range gl {
				gl[i], beta[i] = float32(-g.Float64()*0.5), float32(g.Float64())
			}
			O1, O2 := make([]float32, n*dv), make([]float32, n*dv)
			deltaChunk(S1, Q, K, V, gl, beta, O1, newChunkScratch(64, dv))
			v, v2 := vecReady, vec2Ready
			vecReady, vec2Ready = false, false
			deltaChunk(S2, Q, K, V, gl, beta, O2, newChunkScratch(64, dv))
			vecReady, vec2Ready = v, v2
			for i := range S1 {
				if !sameBits(S1[i], S2[i]) {
					t.Fatalf("dk %d dv %d n %d: S[%d] = %v, scalar %v", dk, dv, n, i, S1[i], S2[i])
				}
			}
			for i := range O1 {
				if !sameBits(O1[i], O2[i]) {
					t.Fatalf("dk %d dv %d n %d: O[%d] = %v, scalar %v", dk, dv, n, i, O1[i], O2[i])
				}
			}
		}
	}
}

// TestScores16: the sixteen-position kernel (scores16x16) gives the dot
// products of scores16's one-position loop bit for bit, for n = 1…40,
// 130 and 300 positions (whole passes, a remainder, none), D = 64, 128
// and 256, and key rows at a stride wider than D from an offset (a KV
// head that is not the first), for one query head and for three reading
// the same keys (their scores at a stride), keys in float32 and in fp16
// (scoresF16x16). Keys include zeros of both signs and
// magnitudes spread over a few orders, where the order of the sums shows
// in the last bits.
func TestScores16(t *testing.T) {
	if !vecReady {
		t.Skip("no AVX-512: the vector kernels do not run")
	}
	g := rand.New(rand.NewPCG(11, 12))
	ns := []int{130, 300}
	for n := 1; n <= 40; n++ {
		ns = append(ns, n)
	}
	for _, D := range []int{64, 128, 256} {
		stride, off := 3*D, D
		q := make([]float32, 3*D) // three query heads of one KV head
		for i := range q {
			q[i] = float32(g.NormFloat64() * math.Exp(g.NormFloat64()))
		}
		for _, n := range ns {
			K := make([]float32, n*stride)
			for i := range K {
				K[i] = float32(g.NormFloat64() * math.Exp(g.NormFloat64()))
				if g.IntN(8) == 0 {
					K[i] = float32(math.Copysign(0, g.NormFloat64()))
				}
			}
			for _, heads := range []int{1, 3} {
				ws := n + 40
				wa, wg := make([]float32, heads*ws), make([]float32, heads*ws)
				useScores16 = false
				scores16(wg, ws, q[:heads*D], heads, K, n, stride, off)
				useScores16 = true
				scores16(wa, ws, q[:heads*D], heads, K, n, stride, off)
				checkScores(t, "f32", D, n, heads, ws, wa, wg)
				// The same keys in fp16 (the int8 cache's), with
				// subnormals and zeros of both signs among them.
				K16 := make([]uint16, len(K))
				tensor.F32ToF16Slice(K16, K)
				for i := 0; i < len(K16); i += 5 {
					K16[i] = uint16(g.Uint32()) &^ 0x7c00
				}
				useScores16 = false
				scoresF16(wg, ws, q[:heads*D], heads, K16, n, stride, off)
				useScores16 = true
				scoresF16(wa, ws, q[:heads*D], heads, K16, n, stride, off)
				checkScores(t, "fp16", D, n, heads, ws, wa, wg)
			}
		}
	}
}

// checkScores compares the kernel's scores wa with the loop's wg.
func checkScores(t *testing.T, keys string, D, n, heads, ws int, wa, wg []float32) {
	t.Helper()
	for i := range heads {
		for p := range n {
			if a, b := wa[i*ws+p], wg[i*ws+p]; math.Float32bits(a) != math.Float32bits(b) {
				t.Fatalf("%s keys, D=%d n=%d head %d of %d: position %d = %v, one position at a time %v", keys, D, n, i, heads, p, a, b)
			}
		}
	}
}

// TestValues4: the four-head weighted sums (values4x16, and valuesI8x16
// for the int8 cache's values and scales) give each head attendValues'
// (attendValuesInt8's) bits, for n = 1…20 and 130 positions, D = 64, 128 and
// 256, value rows at a stride wider than D from an offset, and 4, 5 and
// 8 heads (a remainder runs head by head).
func TestValues4(t *testing.T) {
	if !vecReady {
		t.Skip("no AVX-512: the vector kernels do not run")
	}
	g := rand.New(rand.NewPCG(13, 14))
	ns := []int{130}
	for n := 1; n <= 20; n++ {
		ns = append(ns, n)
	}
	for _, D := range []int{64, 128, 256} {
		stride, off := 3*D, D
		for _, n := range ns {
			V := make([]float32, n*stride)
			for i := range V {
				V[i] = float32(g.NormFloat64() * math.Exp(g.NormFloat64()))
			}
			for _, heads := range []int{4, 5, 8} {
				ws := n + 40
				w := make([]float32, heads*ws)
				for i := range w {
					w[i] = float32(g.Float64())
				}
				oa, og := make([]float32, heads*D), make([]float32, heads*D)
				attendValuesHeads(oa, w, ws, V, heads, n, stride, off)
				for i := range heads {
					attendValues(og[i*D:(i+1)*D], w[i*ws:], V, n, stride, off)
				}
				for i := range oa {
					if math.Float32bits(oa[i]) != math.Float32bits(og[i]) {
						t.Fatalf("D=%d n=%d heads=%d: o[%d] = %v, head by head %v", D, n, heads, i, oa[i], og[i])
					}
				}
				// The int8 cache's values: KV head 1 of 3 (V8 at stride
				// 3·D from offset D), one scale per position and KV head.
				V8, vs := make([]int8, len(V)), make([]float32, 3*n)
				for i := range V8 {
					V8[i] = int8(g.IntN(256) - 128)
				}
				for i := range vs {
					vs[i] = float32(g.Float64() / 100)
				}
				wa, wg := append([]float32(nil), w...), append([]float32(nil), w...)
				attendValuesInt8Heads(oa, wa, ws, V8, vs, heads, n, stride, off, 1, 3)
				for i := range heads {
					attendValuesInt8(og[i*D:(i+1)*D], wg[i*ws:], V8, vs, n, stride, off, 1, 3)
				}
				for i := range oa {
					if math.Float32bits(oa[i]) != math.Float32bits(og[i]) {
						t.Fatalf("int8 values, D=%d n=%d heads=%d: o[%d] = %v, head by head %v", D, n, heads, i, oa[i], og[i])
					}
				}
			}
		}
	}
}

// BenchmarkAttendHeads times the attention of one KV head's four query
// heads at a decode step over 512 cached positions of D = 64 (forge-tiny's
// heads; per KV head the synth-1.4b has four of D = 256): the scores with
// their softmax, by scores16x16 and by the one-position loop it replaced
// (the peer, in the same run), the same for fp16 keys (the int8 KV
// cache's), then the weighted sums, four heads a row of
// values (values4x16, valuesI8x16 for int8 values) and head by head.
func BenchmarkAttendHeads(b *testing.B) {
	if !vecReady {
		b.Skip("no AVX-512: the vector kernels do not run")
	}
	const n, D, heads = 512, 64, 4
	g := rand.New(rand.NewPCG(5, 6))
	q, K, V := make([]float32, heads*D), make([]float32, n*D), make([]float32, n*D)
	for i := range K {
		K[i], V[i] = float32(g.NormFloat64()), float32(g.NormFloat64())
	}
	for i := range q {
		q[i] = float32(g.NormFloat64())
	}
	ws := n + 32
	w, o := make([]float32, heads*ws), make([]float32, heads*D)
	for _, fast := range []bool{true, false} {
		b.Run(fmt.Sprintf("scores/kernel=%v", fast), func(b *testing.B) {
			useScores16 = fast
			defer func() { useScores16 = true }()
			for b.Loop() {
				attendScoresHeads(w, ws, q, K, heads, n, D, 0, 0.125)
			}
		})
	}
	K16 := make([]uint16, len(K))
	tensor.F32ToF16Slice(K16, K)
	for _, fast := range []bool{true, false} {
		b.Run(fmt.Sprintf("scoresF16/kernel=%v", fast), func(b *testing.B) {
			useScores16 = fast
			defer func() { useScores16 = true }()
			for b.Loop() {
				attendScoresF16Heads(w, ws, q, K16, heads, n, D, 0, 0.125)
			}
		})
	}
	b.Run("values/kernel=true", func(b *testing.B) {
		for b.Loop() {
			attendValuesHeads(o, w, ws, V, heads, n, D, 0)
		}
	})
	b.Run("values/kernel=false", func(b *testing.B) {
		for b.Loop() {
			for i := range heads {
				attendValues(o[i*D:(i+1)*D], w[i*ws:], V, n, D, 0)
			}
		}
	})
	V8, vs := make([]int8, n*D), make([]float32, n)
	for i := range V8 {
		V8[i] = int8(g.IntN(256) - 128)
	}
	for i := range vs {
		vs[i] = 1 // weights stay as they are, call after call
	}
	b.Run("valuesInt8/kernel=true", func(b *testing.B) {
		for b.Loop() {
			attendValuesInt8Heads(o, w, ws, V8, vs, heads, n, D, 0, 0, 1)
		}
	})
	b.Run("valuesInt8/kernel=false", func(b *testing.B) {
		for b.Loop() {
			for i := range heads {
				attendValuesInt8(o[i*D:(i+1)*D], w[i*ws:], V8, vs, n, D, 0, 0, 1)
			}
		}
	})
}
