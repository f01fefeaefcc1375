package recon

import (
	"math"
	"math/rand/v2"
)

// Finite-difference helpers shared by the gradient tests.

// fdRand returns n values uniform in [−s, s).
func fdRand(rng *rand.Rand, n int, s float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = s * (2*rng.Float64() - 1)
	}
	return v
}

// fdDot is Σ a⊙b: the loss L = Σ y⊙r of a gradient test, whose dL/dy is r.
func fdDot(a, b []float64) float64 {
	var s float64
	for i, v := range a {
		s += v * b[i]
	}
	return s
}

// fdCentral returns the central difference (f(x+h) − f(x−h)) / 2h in x[i],
// h = step·max(1, |x[i]|), and restores x[i]. Its error is the truncation
// h²·f‴/6 plus the rounding ~ε₆₄·|f|/h.
func fdCentral(f func() float64, x []float64, i int, step float64) float64 {
	x0 := x[i]
	h := step * math.Max(1, math.Abs(x0))
	x[i] = x0 + h
	fp := f()
	x[i] = x0 - h
	fm := f()
	x[i] = x0
	return (fp - fm) / (2 * h)
}

// fdSample returns all of 0…n−1 when n ≤ k, else k distinct indices of it.
func fdSample(rng *rand.Rand, n, k int) []int {
	p := rng.Perm(n)
	if n > k {
		p = p[:k]
	}
	return p
}

// fdErr is the relative error |a − b| / max(|a|, |b|, floor): floor (the
// caller's scale of the gradient, e.g. 1e-3 of its largest entry) keeps
// entries that are zero up to rounding from dividing by nothing.
func fdErr(a, b, floor float64) float64 {
	return math.Abs(a-b) / math.Max(math.Max(math.Abs(a), math.Abs(b)), floor)
}

// fdMaxAbs is max |v|.
func fdMaxAbs(v []float64) float64 {
	var m float64
	for _, x := range v {
		m = math.Max(m, math.Abs(x))
	}
	return m
}
