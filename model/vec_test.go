package model

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// vecInputs returns n float32s for the elementwise kernels: special
// values (±0, ±Inf, NaN, exp32's clamps, arguments whose exponential is
// subnormal or overflows), then normal values over many magnitudes.
func vecInputs(n int, seed uint64) []float32 {
	inf := float32(math.Inf(1))
	x := []float32{0, float32(math.Copysign(0, -1)), 1, -1, inf, -inf, float32(math.NaN()),
		88.72284, 88.72285, 88.7, -103.97208, -103.9721, -87.3, -87.4, -95, -100, 1e30, -1e30, 1e-40, -1e-40}
	g := rand.New(rand.NewPCG(seed, 1))
	for len(x) < n {
		x = append(x, float32(g.NormFloat64()*math.Pow(10, 4*g.Float64()-2)))
	}
	return x[:n]
}

func sameBits(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || a != a && b != b
}

// TestVecElementwise checks that the row loops of vec.go (vector kernels
// where the build has them) give bit for bit the scalar definitions, on
// lengths with and without a partial last vector.
func TestVecElementwise(t *testing.T) {
	for _, n := range []int{0, 5, 16, 37, 300} {
		a, b, c := vecInputs(n, 1), vecInputs(n, 2), vecInputs(max(n, 1), 3)
		check := func(name string, got []float32, want func(i int) float32) {
			t.Helper()
			for i, v := range got {
				if w := want(i); !sameBits(v, w) {
					t.Fatalf("%s, n = %d: [%d] = %v (%#x), want %v (%#x); inputs %v, %v, %v",
						name, n, i, v, math.Float32bits(v), w, math.Float32bits(w), a[i], b[i], c[i])
				}
			}
		}
		y := append([]float32(nil), a...)
		swiglu(y, b)
		check("swiglu", y, func(i int) float32 { return silu(a[i]) * b[i] })
		y = append(y[:0], a...)
		siluInPlace(y)
		check("silu", y, func(i int) float32 { return silu(a[i]) })
		y = append(y[:0], a...)
		mulSilu(y, b)
		check("mulSilu", y, func(i int) float32 { return a[i] * silu(b[i]) })
		y = append(y[:0], a...)
		mulSigmoid(y, b)
		check("mulSigmoid", y, func(i int) float32 { return a[i] * sigmoid(b[i]) })
		y = append(y[:0], a...)
		mulAdd(y, b, c)
		check("mulAdd", y, func(i int) float32 { return a[i] + b[i]*c[i] })
		y = append(y[:0], a...)
		addTo(y, b)
		check("addTo", y, func(i int) float32 { return a[i] + b[i] })
		y = append(y[:0], a...)
		mulScale(y, y, c[0], b)
		check("mulScale", y, func(i int) float32 { p := a[i] * c[0]; return p * b[i] })
		y = append(y[:0], a...)
		mulScalar(y, c[0])
		check("mulScalar", y, func(i int) float32 { return a[i] * c[0] })
		if n > 0 {
			y = append(y[:0], a...)
			axpy(y, c[0], b)
			check("axpy", y, func(i int) float32 { p := c[0] * b[i]; return a[i] + p })
		}
	}
}

// TestSumSquares: sumSquares (the vector kernel where the build has one)
// gives bit for bit its definition — sixteen partial sums, each checked,
// folded pairwise, then the remainder in order — on lengths with and
// without whole groups and values over sixty orders of magnitude or of
// one magnitude (where another order of the adds changes the last bits);
// and its error against the exact sum (math/big) stays within the bound
// of that order of adds, (⌊n/16⌋ + 4 + n mod 16)·2⁻⁵³ relative (each term
// passes through at most that many roundings; the squares are exact).
func TestSumSquares(t *testing.T) {
	for _, tc := range [][2]int{{0, 0}, {1, 0}, {15, 0}, {16, 0}, {17, 0}, {37, 0}, {300, 0}, {2048, 0},
		{64, 1}, {256, 1}, {300, 1}, {2048, 1}} {
		n := tc[0]
		g := rand.New(rand.NewPCG(uint64(n), 5))
		x := make([]float32, n)
		for i := range x {
			if tc[1] == 0 {
				x[i] = float32(g.NormFloat64() * math.Pow(10, 30*g.Float64()-15))
			} else { // one magnitude: every add rounds, so any other order of adds shows
				x[i] = float32(0.5 + g.Float64())
			}
		}
		var acc [16]float64
		k := 0
		for ; k+16 <= n; k += 16 {
			for l := range 16 {
				v := float64(x[k+l])
				acc[l] += v * v
			}
		}
		var fast [16]float64 // the vector kernel's parts, where the build has one
		if m := sumSquaresFast(&fast, x); m > 0 {
			if m != k {
				t.Fatalf("n = %d: sumSquaresFast took %d values, want %d", n, m, k)
			}
			for l := range fast {
				if math.Float64bits(fast[l]) != math.Float64bits(acc[l]) {
					t.Fatalf("n = %d: part %d = %v, want %v", n, l, fast[l], acc[l])
				}
			}
		}
		for _, w := range []int{8, 4, 2, 1} {
			for l := range w {
				acc[l] += acc[l+w]
			}
		}
		want := acc[0]
		for _, v := range x[k:] {
			want += float64(v) * float64(v)
		}
		got := sumSquares(x)
		if math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("n = %d: sumSquares = %v (%#x), want %v (%#x)", n, got, math.Float64bits(got), want, math.Float64bits(want))
		}
		exact := new(big.Float).SetPrec(2000)
		for _, v := range x {
			f := new(big.Float).SetPrec(2000).SetFloat64(float64(v))
			exact.Add(exact, f.Mul(f, f))
		}
		e, _ := exact.Float64()
		if bound := float64(n/16+4+n%16) * 0x1p-53 * e; n > 0 && math.Abs(got-e) > bound {
			t.Errorf("n = %d: sumSquares = %v, exact %v (relative error %.2g)", n, got, e, math.Abs(got-e)/e)
		}
	}
}

// TestDeltaStepTwins: deltaStep (the vector kernel where the build has
// one) leaves the same state and output bits as the scalar recurrence,
// for value widths with and without whole vectors, over several steps;
// deltaStepFrom from a copy of the state into another gives the same bits
// and leaves its source as it was.
func TestDeltaStepTwins(t *testing.T) {
	g := rand.New(rand.NewPCG(5, 6))
	for _, dims := range [][2]int{{32, 32}, {16, 48}, {8, 56}, {8, 20}, {128, 128}, {16, 272}, {64, 256}} {
		dk, dv := dims[0], dims[1]
		S1 := make([]float32, dk*dv)
		for i := range S1 {
			S1[i] = float32(g.NormFloat64())
		}
		S2 := append([]float32(nil), S1...)
		o1, o2, w := make([]float32, dv), make([]float32, dv), make([]float32, dv)
		for step := range 4 {
			q, k, v, gl, beta := randDeltaRow(g, dk, dv)
			prev, kept := append([]float32(nil), S1...), append([]float32(nil), S1...)
			deltaStep(S1, q, k, v, gl, beta, o1, w)
			deltaStepGo(S2, S2, q, k, v, decay(float64(gl)), beta, o2, w)
			// From another state: a stale S3 stepped from prev gets S1's
			// bits, and prev is only read.
			S3, o3 := make([]float32, dk*dv), make([]float32, dv)
			for i := range S3 {
				S3[i] = 7
			}
			deltaStepFrom(S3, prev, q, k, v, gl, beta, o3, w)
			for i := range S3 {
				if !sameBits(S3[i], S1[i]) || !sameBits(prev[i], kept[i]) {
					t.Fatalf("dk %d dv %d step %d: from another state S[%d] = %v (in place %v), its source %v (was %v)", dk, dv, step, i, S3[i], S1[i], prev[i], kept[i])
				}
			}
			for i := range o3 {
				if !sameBits(o3[i], o1[i]) {
					t.Fatalf("dk %d dv %d step %d: from another state o[%d] = %v, in place %v", dk, dv, step, i, o3[i], o1[i])
				}
			}
			for i := range S1 {
				if !sameBits(S1[i], S2[i]) {
					t.Fatalf("dk %d dv %d step %d: S[%d] = %v, scalar %v", dk, dv, step, i, S1[i], S2[i])
				}
			}
			for i := range o1 {
				if !sameBits(o1[i], o2[i]) {
					t.Fatalf("dk %d dv %d step %d: o[%d] = %v, scalar %v", dk, dv, step, i, o1[i], o2[i])
				}
			}
		}
	}
}

// TestAttendStep compares a decode step's attention (attendScores and
// attendValues, or their int8-cache twins, where the build has them; heads
// split over the pool at this size, and alone) with attend on a KV cache
// (f32, and int8) of 300 positions, two KV heads and four query heads each. The dot products are summed in
// another order, so scores differ by float32 rounding: the outputs,
// convex combinations of V rows of order one, agree to 1e-5.
func TestAttendStep(t *testing.T) {
	c := &Config{Heads: 8, KVHeads: 2, HeadDim: 64}
	const pos = 299
	g := rand.New(rand.NewPCG(7, 8))
	kvw := c.KVHeads * c.HeadDim
	ls := &layerState{k: make([]float32, (pos+1)*kvw), v: make([]float32, (pos+1)*kvw)}
	for i := range ls.k {
		ls.k[i] = float32(g.NormFloat64() * 2)
		ls.v[i] = float32(g.NormFloat64())
	}
	sc := &scratch{scores: make([]float32, c.Heads*(pos+32))}
	sc.q.Resize(1, c.Heads*c.HeadDim)
	for i := range sc.q.Data {
		sc.q.Data[i] = float32(g.NormFloat64())
	}
	var a attention
	sc.att.Resize(1, c.Heads*c.HeadDim)
	// The same keys and values in the int8 cache (keys fp16, values int8).
	l8 := &layerState{}
	l8.q.append(ls.k, ls.v, c.KVHeads, c.HeadDim)
	for _, cache := range []*layerState{ls, l8} {
		a.attend(c, pos, cache, sc, 0, 0, c.Heads, sc.scores)
		want := append([]float32(nil), sc.att.Data...)
		for _, alone := range []bool{false, true} {
			clear(sc.att.Data)
			for i := range sc.scores { // stale scores past n must not count (the kernels mask them)
				sc.scores[i] = 1e30
			}
			sc.alone = alone
			a.attendStep(c, pos, 0, cache, sc)
			for i, v := range sc.att.Data {
				if d := math.Abs(float64(v - want[i])); !(d <= 1e-5) {
					t.Fatalf("int8 cache %v, alone %v: att[%d] = %v, attend %v", cache == l8, alone, i, v, want[i])
				}
			}
		}
	}
}

// randDeltaRow returns a random row of the delta rule for one head: q and
// k (dk) of a normalised row's size, v (dv), log decay g ∈ (−3, 0] and
// β ∈ [0, 1).
func randDeltaRow(g *rand.Rand, dk, dv int) (q, k, v []float32, gl, beta float32) {
	q, k, v = make([]float32, dk), make([]float32, dk), make([]float32, dv)
	for i := range k {
		k[i] = float32(g.NormFloat64() / math.Sqrt(float64(dk)))
		q[i] = float32(g.NormFloat64() / float64(dk))
	}
	for i := range v {
		v[i] = float32(g.NormFloat64())
	}
	return q, k, v, float32(-g.Float64() * 3), float32(g.Float64())
}
