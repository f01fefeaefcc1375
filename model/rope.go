package model

import "math"

// rope is the partial rotate-half rotary embedding of docs/model.md §6.3: the first
// R = rotary_dim components of each head rotate, component i pairing with
// i + R/2, at angles φ_i = p·θ^(−2i/R) computed in float64 (§11.9).
type rope struct {
	invFreq []float64 // [R/2] θ^(−2i/R)
}

func newRope(c *Config) rope {
	half := c.RotaryDim() / 2
	r := rope{invFreq: make([]float64, half)}
	for i := range half {
		r.invFreq[i] = math.Pow(c.RopeTheta, -2*float64(i)/float64(c.RotaryDim()))
	}
	return r
}

// fill writes cos and sin tables [T][R/2] for positions pos…pos+T−1 into sc.
func (r *rope) fill(sc *scratch, pos, T int) {
	half := len(r.invFreq)
	sc.cos = resize(sc.cos, T*half)
	sc.sin = resize(sc.sin, T*half)
	for t := range T {
		r.fillRow(sc, t, pos+t)
	}
}

// fillRow writes row t of the tables (already sized) for position p.
func (r *rope) fillRow(sc *scratch, t, p int) {
	half := len(r.invFreq)
	for i, f := range r.invFreq {
		s, c := math.Sincos(float64(p) * f)
		sc.cos[t*half+i] = float32(c)
		sc.sin[t*half+i] = float32(s)
	}
}

// at returns row t of the tables made by fill.
func (r *rope) at(sc *scratch, t int) (cos, sin []float32) {
	half := len(r.invFreq)
	return sc.cos[t*half : (t+1)*half], sc.sin[t*half : (t+1)*half]
}

// apply rotates x (one head) in place.
func (r *rope) apply(x, cos, sin []float32) {
	m := len(cos)
	for i := range m {
		a, b := x[i], x[i+m]
		x[i] = a*cos[i] - b*sin[i]
		x[i+m] = b*cos[i] + a*sin[i]
	}
}

func resize(b []float32, n int) []float32 {
	if cap(b) < n {
		return make([]float32, n)
	}
	return b[:n]
}
