package model

import "math"

// Elementwise primitives of docs/model.md §4 and the numerics rules of §11. All act on
// fp32 vectors; sums of squares accumulate in float64 (§11.7).

// sigmoid is σ(x) = 1/(1+e^−x), evaluated so that neither branch overflows
// (docs/model.md §11.6): 1/(1+e^−x) for x ≥ 0 and eˣ/(1+eˣ) for x < 0.
func sigmoid(x float32) float32 {
	if x >= 0 {
		return 1 / (1 + exp32(-x))
	}
	e := exp32(x)
	return e / (1 + e)
}

// silu is x·σ(x).
func silu(x float32) float32 { return x * sigmoid(x) }

// softplus is ln(1+eˣ) in the overflow-free form max(x,0) + log1p(e^−|x|) (docs/model.md §11.1).
func softplus(x float64) float64 {
	return math.Max(x, 0) + math.Log1p(math.Exp(-math.Abs(x)))
}

// rmsNorm writes dst = x · (mean(x²) + eps)^(−1/2) · scale, where scale is
// the effective weight: 1+w for the offset norms (precomputed at load time,
// docs/model.md §3.3.1) or w for the plain ones. dst may alias x.
func rmsNorm(dst, x, scale []float32, eps float64) {
	r := float32(1 / math.Sqrt(sumSquares(x)/float64(len(x))+eps))
	mulScale(dst[:len(x)], x, r, scale)
}

// l2Norm scales x in place by (Σx² + 1e−6)^(−1/2) · mul: the DeltaNet q/k
// normalisation of docs/model.md §4 (ε fixed at 1e−6, inside the root; a zero vector stays
// zero, §11.8), with the 1/√dk query scale folded into mul.
func l2Norm(x []float32, mul float64) {
	r := float32(mul / math.Sqrt(sumSquares(x)+1e-6))
	mulScalar(x, r)
}

// dot is Σ a[i]·b[i] with fp32 accumulation in four lanes.
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// axpy does y += a·x (each product rounded, then added: the vector twin
// axpyFast gives the same bits).
func axpy(y []float32, a float32, x []float32) {
	x = x[:len(y)]
	for i := axpyFast(y, a, x); i < len(y); i++ {
		y[i] += a * x[i]
	}
}
