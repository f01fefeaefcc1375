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
