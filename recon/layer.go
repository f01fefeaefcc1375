package recon

import (
	"fmt"
	"math"
)

// Layer is one Qwen3.5 decoder layer (docs/model.md §5, §10):
//
//	h = x + mixer(RMSNorm(x)·(1+w_in))
//	y = h + down(silu(gate(v)) ⊙ up(v)),   v = RMSNorm(h)·(1+w_post)
//
// RMSNorm(x) = x·(mean(x²) + ε)^(−½) per row.
type Layer struct {
	H        int
	Eps      float64
	InNorm   []float64 // [H] 1+w
	PostNorm []float64 // [H] 1+w
	Mixer    Mixer
	Gate, Up Linear // [I, H]
	Down     Linear // [H, I]
}

// layerTape is what Layer.Backward needs from a Forward.
type layerTape struct {
	T        int
	x, h     []float64 // [T][H] input, mid-residual
	u, v     []float64 // [T][H] normed mixer and MLP inputs
	rx, rh   []float64 // [T] the rows' (mean(x²)+ε)^(−½)
	mix      any
	g, up, a []float64 // [T][I] gate, up, silu(g)·up
	I        int
}

// Forward returns y [T][H] for x [T][H] (x is kept for Backward).
func (l *Layer) Forward(x []float64, T int) ([]float64, any) {
	H := l.H
	I, _ := l.Gate.Dims()
	tp := &layerTape{T: T, I: I, x: x}
	tp.u, tp.rx = rmsNorm(x, l.InNorm, T, H, l.Eps)
	m, mt := l.Mixer.Forward(tp.u, T)
	tp.mix = mt
	tp.h = make([]float64, T*H)
	for i := range tp.h {
		tp.h[i] = x[i] + m[i]
	}
	tp.v, tp.rh = rmsNorm(tp.h, l.PostNorm, T, H, l.Eps)
	tp.g, tp.up, tp.a = make([]float64, T*I), make([]float64, T*I), make([]float64, T*I)
	l.Gate.Forward(tp.g, tp.v, T)
	l.Up.Forward(tp.up, tp.v, T)
	for i, g := range tp.g {
		tp.a[i] = silu(g) * tp.up[i]
	}
	y := make([]float64, T*H)
	l.Down.Forward(y, tp.a, T)
	for i := range y {
		y[i] += tp.h[i]
	}
	return y, tp
}

// Backward returns dL/dx for dL/dy, adding every Linear's gradients.
func (l *Layer) Backward(tape any, dy []float64) []float64 {
	tp := tape.(*layerTape)
	T, H, I := tp.T, l.H, tp.I
	da := make([]float64, T*I)
	l.Down.Backward(da, tp.a, dy, T)
	dg, du := make([]float64, T*I), make([]float64, T*I)
	for i, g := range tp.g {
		sg := sigmoid(g)
		du[i] = da[i] * g * sg
		dg[i] = da[i] * tp.up[i] * sg * (1 + g*(1-sg)) // silu′(g) = σ(g)(1 + g(1−σ(g)))
	}
	dv := make([]float64, T*H)
	tmp := make([]float64, T*H)
	l.Gate.Backward(dv, tp.v, dg, T)
	l.Up.Backward(tmp, tp.v, du, T)
	for i := range dv {
		dv[i] += tmp[i]
	}
	dh := rmsNormBackward(tp.h, l.PostNorm, tp.rh, dv, T, H)
	for i := range dh {
		dh[i] += dy[i]
	}
	dm := l.Mixer.Backward(tp.mix, dh)
	dx := rmsNormBackward(tp.x, l.InNorm, tp.rx, dm, T, H)
	for i := range dx {
		dx[i] += dh[i]
	}
	return dx
}

// rmsNorm returns u = x·r·w per row, r = (mean(x²)+ε)^(−½), and the r.
func rmsNorm(x, w []float64, T, H int, eps float64) (u, r []float64) {
	u, r = make([]float64, T*H), make([]float64, T)
	for t := range T {
		row := x[t*H : (t+1)*H]
		var ss float64
		for _, v := range row {
			ss += v * v
		}
		r[t] = 1 / math.Sqrt(ss/float64(H)+eps)
		for i, v := range row {
			u[t*H+i] = v * r[t] * w[i]
		}
	}
	return u, r
}

// rmsNormBackward returns dL/dx for u = x·r·w given dL/du:
// dx = r·(w⊙du) − x·r³·Σ(w⊙du⊙x)/H.
func rmsNormBackward(x, w, r, du []float64, T, H int) []float64 {
	dx := make([]float64, T*H)
	for t := range T {
		row, d := x[t*H:(t+1)*H], du[t*H:(t+1)*H]
		var s float64
		for i, v := range row {
			s += w[i] * d[i] * v
		}
		rt := r[t]
		c := rt * rt * rt * s / float64(H)
		for i, v := range row {
			dx[t*H+i] = rt*w[i]*d[i] - v*c
		}
	}
	return dx
}

func sigmoid(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

func silu(x float64) float64 { return x * sigmoid(x) }

// check reports a Linear whose shape is not [out, in].
func checkDims(role string, l Linear, out, in int) error {
	if l == nil {
		return fmt.Errorf("no %q matrix", role)
	}
	if o, i := l.Dims(); o != out || i != in {
		return fmt.Errorf("%q is %dx%d, want %dx%d", role, o, i, out, in)
	}
	return nil
}
