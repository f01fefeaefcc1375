package model

// Elementwise loops of the forward over whole rows. Each runs a vector
// kernel on as much of the row as it can (vec_simd.go: AVX-512 with
// GOEXPERIMENT=simd; none otherwise, vec_go.go) and the scalar definition
// on the rest. The vector kernels make the same float32 operations in the
// same order as the scalar code (products rounded before they are added,
// no FMA), so every build and CPU gives the same bits; vec_test.go checks
// that against the scalar twins.

// swiglu sets g[i] = silu(g[i])·up[i] (docs/model.md §10).
func swiglu(g, up []float32) {
	up = up[:len(g)]
	for i := swigluFast(g, up); i < len(g); i++ {
		g[i] = silu(g[i]) * up[i]
	}
}

// siluInPlace sets x[i] = silu(x[i]).
func siluInPlace(x []float32) {
	for i := siluFast(x); i < len(x); i++ {
		x[i] = silu(x[i])
	}
}

// mulSilu sets o[i] *= silu(z[i]) (the DeltaNet output gate).
func mulSilu(o, z []float32) {
	z = z[:len(o)]
	for i := mulSiluFast(o, z); i < len(o); i++ {
		o[i] *= silu(z[i])
	}
}

// mulSigmoid sets o[i] *= σ(g[i]) (the attention output gate).
func mulSigmoid(o, g []float32) {
	g = g[:len(o)]
	for i := mulSigmoidFast(o, g); i < len(o); i++ {
		o[i] *= sigmoid(g[i])
	}
}

// addTo sets dst[i] += src[i] (the residual stream).
func addTo(dst, src []float32) {
	src = src[:len(dst)]
	for i := addFast(dst, src); i < len(dst); i++ {
		dst[i] += src[i]
	}
}

// mulAdd sets y[i] += a[i]·b[i] (a product rounded, then added).
func mulAdd(y, a, b []float32) {
	a, b = a[:len(y)], b[:len(y)]
	for i := mulAddFast(y, a, b); i < len(y); i++ {
		y[i] += a[i] * b[i]
	}
}

// sumSquares is Σ x[i]² in float64 (docs/model.md §11.7), summed in a
// fixed order that vector kernels follow exactly: sixteen partial sums,
// part l taking x[i] for i ≡ l (mod 16) over the whole groups of sixteen,
// folded pairwise (sumLanes), then the last len(x) mod 16 in order. Each
// x[i]² is exact in float64 (a float32 has 24 significant bits), so a
// fused multiply-add rounds as the separate add does. One running sum was
// a chain of dependent float64 adds, four cycles each: a norm of 256 took
// longer than the row's int8 quantization.
func sumSquares(x []float32) float64 {
	var acc [16]float64
	n := sumSquaresFast(&acc, x)
	for ; n+16 <= len(x); n += 16 {
		for l, v := range x[n : n+16] {
			acc[l] += float64(v) * float64(v)
		}
	}
	s := sumLanes(&acc)
	for _, v := range x[n:] {
		s += float64(v) * float64(v)
	}
	return s
}

// sumLanes folds sixteen partial sums pairwise: lanes l and l+8, then l
// and l+4, l+2, l+1.
func sumLanes(a *[16]float64) float64 {
	for w := 8; w >= 1; w /= 2 {
		for l := range w {
			a[l] += a[l+w]
		}
	}
	return a[0]
}

// mulScale sets dst[i] = x[i]·r·scale[i] (the product with r rounded
// first; a norm's output). dst may alias x.
func mulScale(dst, x []float32, r float32, scale []float32) {
	x, scale = x[:len(dst)], scale[:len(dst)]
	for i := mulScaleFast(dst, x, r, scale); i < len(dst); i++ {
		dst[i] = x[i] * r * scale[i]
	}
}

// mulScalar sets x[i] *= r.
func mulScalar(x []float32, r float32) {
	for i := mulScalarFast(x, r); i < len(x); i++ {
		x[i] *= r
	}
}
