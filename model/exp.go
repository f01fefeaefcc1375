package model

import "math"

// exp32 is eˣ in float32 to within 2 ulp (tested against math.Exp over the
// whole finite range): x = n·ln2 + r with |r| ≤ ln2/2 (ln2 split in a high
// and a low part, Cody–Waite), a degree-7 Taylor polynomial for e^r, and
// the result scaled by 2ⁿ through the exponent bits. It underflows to 0
// below −103.97 (passing through subnormals) and overflows to +Inf above
// 88.72; NaN propagates. It replaces math.Exp in σ and silu, the hottest
// transcendental of prefill.
func exp32(x float32) float32 {
	switch {
	case x != x:
		return x
	case x > 88.72284:
		return float32(math.Inf(1))
	case x < -103.97208:
		return 0
	}
	const (
		log2e = 1.44269504088896341
		ln2hi = 0.693359375
		ln2lo = -2.12194440e-4
	)
	// Every product is rounded to float32 before it is added (the
	// conversions forbid fusing it into an FMA, which Go may do on CPUs
	// that have one), so exp32 gives the same bits everywhere, and the same
	// as its vector twin (exp32x16, vec_simd.go).
	n := float32(math.Floor(float64(float32(x*log2e) + 0.5)))
	r := x - float32(n*ln2hi) - float32(n*ln2lo)
	p := 1.0/720 + float32(r*(1.0/5040))
	p = 1.0/120 + float32(r*p)
	p = 1.0/24 + float32(r*p)
	p = 1.0/6 + float32(r*p)
	p = 0.5 + float32(r*p)
	p = 1 + float32(r*p)
	p = 1 + float32(r*p)
	k := int32(n)
	if k < -125 { // subnormal result: scale in two steps
		return p * math.Float32frombits(uint32(k+125+127)<<23) * math.Float32frombits(uint32(-125+127)<<23)
	}
	if k > 127 {
		return p * 2 * math.Float32frombits(uint32(k-1+127)<<23)
	}
	return p * math.Float32frombits(uint32(k+127)<<23)
}

// minNormalExp is ln(2⁻¹²⁶): below it eˣ is not a normal float32.
const minNormalExp = -87.33654

// decay is eˣ for x ≤ 0 (a decay or a softmax weight) in float32, flushed
// to 0 where eˣ would be subnormal (x < −87.34). Subnormal factors are
// worthless — below 2⁻¹²⁶ against terms of order one — and costly: every
// later product with one takes a microcode assist, which made forge-tiny's
// prefill 2.5× slower on an x86 core whose trained DeltaNet heads decay
// fast (their states and scores then fill with subnormals). Accelerators
// flush them the same way.
func decay(x float64) float32 {
	if x < minNormalExp {
		return 0
	}
	return float32(math.Exp(x))
}

// decay32 is decay for a float32 exponent, through exp32.
func decay32(x float32) float32 {
	if x < minNormalExp {
		return 0
	}
	return exp32(x)
}
