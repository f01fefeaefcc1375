package recon

import (
	"fmt"
	"math"

	"forge/model"
)

// Attention is a gated full-attention token mixer (docs/model.md §6) in
// float64, on one sequence at positions 0…T−1:
//
//	P = u·W_qᵀ                        [T][2·Hq·D]  per head h: [query_h ‖ gate_h]
//	k = u·W_kᵀ, v = u·W_vᵀ            [T][Hkv·D]
//	q̂_h = RoPE(RMS(query_h)·(1+w_q))  [T][D]  per head, w_q = q_norm
//	k̂_j = RoPE(RMS(k_j)·(1+w_k))      [T][D]  w_k = k_norm, v not normed
//	RMS(x) = x·(Σx²/D + ε)^(−1/2)
//	s_{t,τ} = q̂_{h,t}·k̂_{j,τ}/√D, τ ≤ t, j = ⌊h/r_q⌋, r_q = Hq/Hkv
//	o_{h,t} = Σ_τ softmax_τ(s_{t,·})·v_{j,τ}   [Hq][T][D]
//	a = O ⊙ σ(G)                      [T][Hq·D]  O, G head-major, σ the sigmoid
//	y = a·W_oᵀ                        [T][H]
//
// RoPE rotates the first R = c.RotaryDim() components of a head at
// position p: with m = R/2 and φ_i = p·θ^(−2i/R), the pair (x_i, x_{i+m})
// becomes (x_i·cos φ_i − x_{i+m}·sin φ_i, x_{i+m}·cos φ_i + x_i·sin φ_i);
// components R…D−1 pass through. This is model/attention.go's forward
// (with model/rope.go and model/ops.go) in float64.
//
// The backward pass recomputes the softmax from the saved log-sum-exp of
// each score row, so a tape holds O(T·Hq·D) floats, not the Hq·T²
// probabilities; the scores are computed per query head as full [T][T]
// products (O(T²·D), the upper triangle dropped). An Attention holds no
// scratch: Forward may run on several sequences at once (Backward adds to
// the Linears' gradients, so it may not unless they allow it).
type Attention struct {
	q, k, v, o   Linear
	qNorm, kNorm []float64 // [D] effective scales 1+w
	hidden       int       // H
	hq, hkv, d   int       // Hq, Hkv, D
	eps          float64   // ε
	invFreq      []float64 // [R/2] θ^(−2i/R)
}

// NewAttention builds the mixer of an attention layer of c from p: Linears
// "q" [2·Hq·D, H] (per head [query_h ‖ gate_h]), "k" and "v" [Hkv·D, H],
// "o" [H, Hq·D]; Vectors "q_norm" and "k_norm" [D], zero-centred (the
// effective scale 1+w is applied here). The Linears are kept, not copied.
func NewAttention(c *model.Config, p Params) (*Attention, error) {
	if c == nil {
		return nil, fmt.Errorf("recon: attention: no config")
	}
	H, hq, hkv, D, R := c.Hidden, c.Heads, c.KVHeads, c.HeadDim, c.RotaryDim()
	switch {
	case H <= 0 || hq <= 0 || hkv <= 0 || D <= 0:
		return nil, fmt.Errorf("recon: attention: hidden %d, heads %d, kv heads %d, head dim %d: want all > 0", H, hq, hkv, D)
	case hq%hkv != 0:
		return nil, fmt.Errorf("recon: attention: %d query heads are not a multiple of %d kv heads", hq, hkv)
	case R < 0 || R > D || R%2 != 0:
		return nil, fmt.Errorf("recon: attention: rotary dim %d, want even and in [0, %d]", R, D)
	case !(c.Eps > 0):
		return nil, fmt.Errorf("recon: attention: rms_norm_eps %v, want > 0", c.Eps)
	case R > 0 && !(c.RopeTheta > 0):
		return nil, fmt.Errorf("recon: attention: rope_theta %v, want > 0", c.RopeTheta)
	}
	a := &Attention{hidden: H, hq: hq, hkv: hkv, d: D, eps: c.Eps, invFreq: make([]float64, R/2)}
	for i := range a.invFreq {
		a.invFreq[i] = math.Pow(c.RopeTheta, -2*float64(i)/float64(R))
	}
	lins := []struct {
		role    string
		dst     *Linear
		out, in int
	}{
		{"q", &a.q, 2 * hq * D, H},
		{"k", &a.k, hkv * D, H},
		{"v", &a.v, hkv * D, H},
		{"o", &a.o, H, hq * D},
	}
	for _, l := range lins {
		lin := p.Linears[l.role]
		if lin == nil {
			return nil, fmt.Errorf("recon: attention: no Linear %q", l.role)
		}
		if out, in := lin.Dims(); out != l.out || in != l.in {
			return nil, fmt.Errorf("recon: attention: Linear %q is %dx%d, want %dx%d", l.role, out, in, l.out, l.in)
		}
		*l.dst = lin
	}
	for _, n := range []struct {
		role string
		dst  *[]float64
	}{{"q_norm", &a.qNorm}, {"k_norm", &a.kNorm}} {
		w, ok := p.Vectors[n.role]
		if !ok {
			return nil, fmt.Errorf("recon: attention: no vector %q", n.role)
		}
		if len(w) != D {
			return nil, fmt.Errorf("recon: attention: vector %q has %d values, want %d", n.role, len(w), D)
		}
		s := make([]float64, D)
		for i, x := range w {
			s[i] = 1 + x
		}
		*n.dst = s
	}
	return a, nil
}

// attTape is what Attention.Backward needs of a Forward.
type attTape struct {
	T        int
	u        []float64 // [T][H] the input (not a copy)
	p        []float64 // [T][2·Hq·D] u·W_qᵀ: raw queries and gates
	kRaw     []float64 // [T][Hkv·D] u·W_kᵀ
	q        []float64 // [Hq][T][D] normed, rotated queries
	k        []float64 // [Hkv][T][D] normed, rotated keys
	v        []float64 // [Hkv][T][D] values
	rq       []float64 // [T][Hq] (Σx²/D + ε)^(−1/2) of each query
	rk       []float64 // [T][Hkv] the same of each key
	lse      []float64 // [Hq][T] log Σ_τ≤t exp s_{t,τ} of each score row
	o        []float64 // [Hq][T][D] softmax·v, before the gate
	sg       []float64 // [T][Hq·D] σ(G)
	a        []float64 // [T][Hq·D] O ⊙ σ(G), the input of W_o
	cos, sin []float64 // [T][R/2] cos φ, sin φ at positions 0…T−1
}

// Forward returns y [T][H] for u [T][H] (Mixer).
func (a *Attention) Forward(u []float64, T int) (y []float64, tape any) {
	H, hq, hkv, D := a.hidden, a.hq, a.hkv, a.d
	if len(u) < T*H {
		panic(fmt.Sprintf("recon: attention: %d inputs for %d rows of %d", len(u), T, H))
	}
	qw, kw, m := hq*D, hkv*D, len(a.invFreq)
	tp := &attTape{
		T: T, u: u,
		p: make([]float64, T*2*qw), kRaw: make([]float64, T*kw),
		q: make([]float64, T*qw), k: make([]float64, T*kw), v: make([]float64, T*kw),
		rq: make([]float64, T*hq), rk: make([]float64, T*hkv), lse: make([]float64, hq*T),
		o: make([]float64, T*qw), sg: make([]float64, T*qw), a: make([]float64, T*qw),
		cos: make([]float64, T*m), sin: make([]float64, T*m),
	}
	vRaw := make([]float64, T*kw) // [T][Hkv·D]
	a.q.Forward(tp.p, u, T)
	a.k.Forward(tp.kRaw, u, T)
	a.v.Forward(vRaw, u, T)
	for t := range T {
		for i, f := range a.invFreq {
			tp.sin[t*m+i], tp.cos[t*m+i] = math.Sincos(float64(t) * f)
		}
	}

	// Per-head norms and RoPE (head-major copies), the gates' σ, the values.
	for t := range T {
		cos, sin := tp.cos[t*m:(t+1)*m], tp.sin[t*m:(t+1)*m]
		p := tp.p[t*2*qw : (t+1)*2*qw]
		for h := range hq {
			dst := tp.q[(h*T+t)*D : (h*T+t+1)*D]
			tp.rq[t*hq+h] = attNorm(dst, p[h*2*D:h*2*D+D], a.qNorm, a.eps)
			attRotate(dst, cos, sin, false)
			sg := tp.sg[t*qw+h*D : t*qw+(h+1)*D]
			for i, g := range p[h*2*D+D : (h+1)*2*D] {
				sg[i] = attSigmoid(g)
			}
		}
		for j := range hkv {
			dst := tp.k[(j*T+t)*D : (j*T+t+1)*D]
			tp.rk[t*hkv+j] = attNorm(dst, tp.kRaw[t*kw+j*D:t*kw+(j+1)*D], a.kNorm, a.eps)
			attRotate(dst, cos, sin, false)
			copy(tp.v[(j*T+t)*D:(j*T+t+1)*D], vRaw[t*kw+j*D:t*kw+(j+1)*D])
		}
	}

	// Causal softmax attention, one query head at a time: S = q̂_h·k̂_jᵀ
	// [T][T] (the upper triangle computed and then dropped), P = softmax
	// of its lower triangle, o_h = P·v_j.
	S := make([]float64, T*T)
	scale := 1 / math.Sqrt(float64(D))
	rq := hq / hkv
	for h := range hq {
		j := h / rq
		qh, kj, vj := tp.q[h*T*D:(h+1)*T*D], tp.k[j*T*D:(j+1)*T*D], tp.v[j*T*D:(j+1)*T*D]
		gemm(S, false, qh, true, kj, T, T, D, false)
		for t := range T {
			row := S[t*T : (t+1)*T]
			mx := math.Inf(-1)
			for tau := range t + 1 {
				row[tau] *= scale
				mx = math.Max(mx, row[tau])
			}
			var sum float64
			for tau := range t + 1 {
				e := math.Exp(row[tau] - mx)
				row[tau] = e
				sum += e
			}
			inv := 1 / sum
			for tau := range t + 1 {
				row[tau] *= inv
			}
			clear(row[t+1:])
			tp.lse[h*T+t] = mx + math.Log(sum)
		}
		gemm(tp.o[h*T*D:(h+1)*T*D], false, S, false, vj, T, D, T, false)
	}

	// Output gate and projection.
	for t := range T {
		for h := range hq {
			o := tp.o[(h*T+t)*D : (h*T+t+1)*D]
			i0 := t*qw + h*D
			for d, x := range o {
				tp.a[i0+d] = x * tp.sg[i0+d]
			}
		}
	}
	y = make([]float64, T*H)
	a.o.Forward(y, tp.a, T)
	return y, tp
}

// Backward returns dL/du [T][H] for dL/dy [T][H] (Mixer), adding the
// gradients of W_q, W_k, W_v and W_o. With δ_t = dO_t·O_t per head and row,
// the softmax backward is dS = P ⊙ (dO·vᵀ − δ)/√D; then dq̂ = dS·k̂,
// dk̂ = dSᵀ·q̂, dv = Pᵀ·dO; RoPE's backward is the inverse rotation; the
// norm's is dx = r·(g⊙s − x·r²·Σ(g⊙s⊙x)/D), r = (Σx²/D + ε)^(−1/2).
func (a *Attention) Backward(tape any, dy []float64) (du []float64) {
	tp := tape.(*attTape)
	T, H, hq, hkv, D := tp.T, a.hidden, a.hq, a.hkv, a.d
	qw, kw, m := hq*D, hkv*D, len(a.invFreq)

	// Through W_o and the gate: a = o⊙σ(g), σ' = σ(1−σ).
	da := make([]float64, T*qw) // [T][Hq·D]
	a.o.Backward(da, tp.a, dy, T)
	dp := make([]float64, T*2*qw) // [T][2·Hq·D]
	dO := make([]float64, T*qw)   // [Hq][T][D]
	for t := range T {
		for h := range hq {
			i0, o0 := t*qw+h*D, (h*T+t)*D
			dg := dp[t*2*qw+h*2*D+D : t*2*qw+(h+1)*2*D]
			for d := range D {
				s, g := tp.sg[i0+d], da[i0+d]
				dO[o0+d] = g * s
				dg[d] = g * tp.o[o0+d] * s * (1 - s)
			}
		}
	}

	// Through the softmax attention, recomputing P from the log-sum-exp.
	dq := make([]float64, T*qw) // [Hq][T][D]
	dk := make([]float64, T*kw) // [Hkv][T][D]
	dv := make([]float64, T*kw) // [Hkv][T][D]
	P := make([]float64, T*T)
	dS := make([]float64, T*T)
	scale := 1 / math.Sqrt(float64(D))
	rq := hq / hkv
	for h := range hq {
		j := h / rq
		qh, kj, vj := tp.q[h*T*D:(h+1)*T*D], tp.k[j*T*D:(j+1)*T*D], tp.v[j*T*D:(j+1)*T*D]
		oh, dOh := tp.o[h*T*D:(h+1)*T*D], dO[h*T*D:(h+1)*T*D]
		gemm(P, false, qh, true, kj, T, T, D, false)
		for t := range T {
			row, l := P[t*T:(t+1)*T], tp.lse[h*T+t]
			for tau := range t + 1 {
				row[tau] = math.Exp(row[tau]*scale - l)
			}
			clear(row[t+1:])
		}
		gemm(dv[j*T*D:(j+1)*T*D], true, P, false, dOh, T, D, T, true) // dv_j += Pᵀ·dO_h
		gemm(dS, false, dOh, true, vj, T, T, D, false)                // dP = dO_h·v_jᵀ
		for t := range T {
			row, prow := dS[t*T:(t+1)*T], P[t*T:(t+1)*T]
			var delta float64 // Σ_τ P·dP = dO_t·O_t
			for d := range D {
				delta += dOh[t*D+d] * oh[t*D+d]
			}
			for tau := range t + 1 {
				row[tau] = prow[tau] * (row[tau] - delta) * scale
			}
			clear(row[t+1:])
		}
		gemm(dq[h*T*D:(h+1)*T*D], false, dS, false, kj, T, D, T, false) // dq̂_h = dS·k̂_j
		gemm(dk[j*T*D:(j+1)*T*D], true, dS, false, qh, T, D, T, true)   // dk̂_j += dSᵀ·q̂_h
	}

	// Through RoPE and the norms, back to the projections' outputs.
	dkRaw := make([]float64, T*kw) // [T][Hkv·D]
	dvRaw := make([]float64, T*kw) // [T][Hkv·D]
	for t := range T {
		cos, sin := tp.cos[t*m:(t+1)*m], tp.sin[t*m:(t+1)*m]
		for h := range hq {
			g := dq[(h*T+t)*D : (h*T+t+1)*D]
			attRotate(g, cos, sin, true)
			o0 := t*2*qw + h*2*D
			attNormBack(dp[o0:o0+D], g, tp.p[o0:o0+D], a.qNorm, tp.rq[t*hq+h])
		}
		for j := range hkv {
			g := dk[(j*T+t)*D : (j*T+t+1)*D]
			attRotate(g, cos, sin, true)
			o0 := t*kw + j*D
			attNormBack(dkRaw[o0:o0+D], g, tp.kRaw[o0:o0+D], a.kNorm, tp.rk[t*hkv+j])
			copy(dvRaw[o0:o0+D], dv[(j*T+t)*D:(j*T+t+1)*D])
		}
	}

	// Through the input projections.
	du = make([]float64, T*H)
	tmp := make([]float64, T*H)
	a.q.Backward(du, tp.u, dp, T)
	a.k.Backward(tmp, tp.u, dkRaw, T)
	for i, x := range tmp {
		du[i] += x
	}
	a.v.Backward(tmp, tp.u, dvRaw, T)
	for i, x := range tmp {
		du[i] += x
	}
	return du
}

// attNorm sets dst = x·r·s, r = (Σx²/n + ε)^(−1/2) (model/ops.go rmsNorm
// with the effective scale s), and returns r. dst may not alias x.
func attNorm(dst, x, s []float64, eps float64) float64 {
	var ss float64
	for _, v := range x {
		ss += v * v
	}
	r := 1 / math.Sqrt(ss/float64(len(x))+eps)
	for i, v := range x {
		dst[i] = v * r * s[i]
	}
	return r
}

// attNormBack sets dx = dL/dx of dst = attNorm(x, s) for g = dL/dst and
// the forward's r: dx_i = r·(g_i·s_i − x_i·r²·Σ_j g_j·s_j·x_j / n).
func attNormBack(dx, g, x, s []float64, r float64) {
	var c float64
	for i, v := range x {
		c += g[i] * s[i] * v
	}
	c *= r * r / float64(len(x))
	for i, v := range x {
		dx[i] = r * (g[i]*s[i] - v*c)
	}
}

// attRotate applies RoPE to x (one head) in place, or with inverse set its
// transpose, the rotation by −φ (RoPE's backward).
func attRotate(x, cos, sin []float64, inverse bool) {
	m := len(cos)
	for i := range m {
		c, s := cos[i], sin[i]
		if inverse {
			s = -s
		}
		a, b := x[i], x[i+m]
		x[i] = a*c - b*s
		x[i+m] = b*c + a*s
	}
}

// attSigmoid is σ(x) = 1/(1+e^−x), in the form that does not overflow.
func attSigmoid(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}
