package recon

import (
	"fmt"
	"math"

	"forge/lut"
)

// rotation is lut.Hadamard in float64: x' = x·M, M = diag(M_b),
// M_b = D_b·H_n/√n (n = the block width, D the signs, H_n Sylvester's
// Hadamard matrix, symmetric), applied by a fast Walsh–Hadamard transform
// per block. Mᵀ = diag(H_n·D_b/√n) undoes it: the backward pass of x' = x·M
// is dx = dx'·Mᵀ.
type rotation struct {
	width, block int
	scale        []float64 // [width] d_j/√n
}

// newRotation returns the float64 twin of a lut.Rotation (only
// *lut.Hadamard is known; nil gives nil).
func newRotation(r lut.Rotation) (*rotation, error) {
	if r == nil {
		return nil, nil
	}
	h, ok := r.(*lut.Hadamard)
	if !ok {
		return nil, fmt.Errorf("recon: rotation %T is not a lut.Hadamard", r)
	}
	n := h.Block()
	rt := &rotation{width: h.Width(), block: n, scale: make([]float64, h.Width())}
	inv := 1 / math.Sqrt(float64(n))
	for j := range rt.scale {
		rt.scale[j] = h.Sign(j) * inv
	}
	return rt, nil
}

// apply sets dst = x·M (transpose false) or x·Mᵀ (true) for T rows;
// dst may be x.
func (r *rotation) apply(dst, x []float64, T int, transpose bool) {
	w, n := r.width, r.block
	for t := range T {
		src, out := x[t*w:(t+1)*w], dst[t*w:(t+1)*w]
		if !transpose {
			for j := range out {
				out[j] = src[j] * r.scale[j]
			}
		} else if &src[0] != &out[0] {
			copy(out, src)
		}
		for b := 0; b < w; b += n {
			fwht(out[b : b+n])
		}
		if transpose {
			for j := range out {
				out[j] *= r.scale[j]
			}
		}
	}
}

// fwht sets v = v·H_n in place (n = len(v) a power of two), unnormalized.
func fwht(v []float64) {
	n := len(v)
	for h := 1; h < n; h *= 2 {
		for i := 0; i < n; i += 2 * h {
			for j := i; j < i+h; j++ {
				a, b := v[j], v[j+h]
				v[j], v[j+h] = a+b, a-b
			}
		}
	}
}
