package recon

import (
	"fmt"
	"math"

	"forge/model"
)

// DeltaNet is a Gated DeltaNet token mixer (docs/model.md §7–§8), the
// float64 twin of the model package's fp32 forward on one sequence from an
// empty state (zero conv history, S = 0). With Hk key heads of dk, Hv value
// heads of dv, K conv taps, convDim = 2·Hk·dk + Hv·dv:
//
//	X  = u·W_qkvᵀ                       [T][convDim]  channels q ‖ k ‖ v
//	Z  = u·W_zᵀ                         [T][Hv·dv]
//	a  = u·W_aᵀ,  b = u·W_bᵀ            [T][Hv]
//	X̃_t = silu(Σ_j w[j] ⊙ X_{t−(K−1)+j}) causal depthwise conv, X_{<0} = 0
//	q̂ = q·(Σq²+1e-6)^−½/√dk, k̂ = k·(Σk²+1e-6)^−½   per key head
//	g = −exp(A_log)·softplus(a + dt_bias),  α = e^g,  β = σ(b)
//
// then per value head h, reading key head ⌊h/(Hv/Hk)⌋ (grouped, §3.3.4),
// the gated delta rule in its recurrent form (§8.1), S [dk][dv]:
//
//	S ← α·S;  e = v − Sᵀk̂;  S ← S + k̂·(β·e)ᵀ;  o = Sᵀq̂
//
// and the gated output norm and the output projection:
//
//	ô_h = o_h·(mean(o_h²)+ε)^−½ ⊙ w ⊙ silu(Z_h),   y = ô·W_outᵀ   [T][H]
//
// Only the five Linears are trained; conv, A_log, dt_bias and the norm
// weight are held fixed (no gradients).
type DeltaNet struct {
	qkv, z, a, b, out Linear
	conv              []float64 // [K][convDim] taps (transposed from the stored [convDim][1][K]); j = K−1 the current token
	rate              []float64 // [Hv] A = exp(A_log)
	dtBias            []float64 // [Hv]
	normW             []float64 // [dv] gated-norm weight, plain scale (no +1)

	hidden, hk, hv, dk, dv, taps int
	eps                          float64
}

var _ Mixer = (*DeltaNet)(nil)

// NewDeltaNet builds the mixer of a linear-attention layer of c from p:
// Linears "qkv" [convDim, H], "z" [Hv·dv, H], "a" and "b" [Hv, H], "out"
// [H, Hv·dv]; Vectors "conv" (convDim·K, stored [convDim][1][K]), "A_log"
// and "dt_bias" (Hv), "gated_norm" (dv, plain scale). The vectors are
// copied; the Linears are kept.
func NewDeltaNet(c *model.Config, p Params) (*DeltaNet, error) {
	if c.KeyHeads <= 0 || c.ValueHeads%c.KeyHeads != 0 {
		return nil, fmt.Errorf("recon: deltanet: %d value heads over %d key heads", c.ValueHeads, c.KeyHeads)
	}
	d := &DeltaNet{
		hidden: c.Hidden, hk: c.KeyHeads, hv: c.ValueHeads, dk: c.KeyDim, dv: c.ValueDim,
		taps: c.ConvKernel, eps: c.Eps,
	}
	cd, vt, H := c.ConvDim(), c.ValueTotal(), c.Hidden
	for _, l := range []struct {
		role    string
		dst     *Linear
		out, in int
	}{
		{"qkv", &d.qkv, cd, H}, {"z", &d.z, vt, H}, {"a", &d.a, c.ValueHeads, H},
		{"b", &d.b, c.ValueHeads, H}, {"out", &d.out, H, vt},
	} {
		lin := p.Linears[l.role]
		if err := checkDims(l.role, lin, l.out, l.in); err != nil {
			return nil, fmt.Errorf("recon: deltanet: %w", err)
		}
		*l.dst = lin
	}
	vec := func(role string, n int) ([]float64, error) {
		v, ok := p.Vectors[role]
		if !ok {
			return nil, fmt.Errorf("recon: deltanet: no %q vector", role)
		}
		if len(v) != n {
			return nil, fmt.Errorf("recon: deltanet: %q has %d elements, want %d", role, len(v), n)
		}
		return append([]float64(nil), v...), nil
	}
	conv, err := vec("conv", cd*c.ConvKernel)
	if err != nil {
		return nil, err
	}
	d.conv = make([]float64, len(conv))
	for ch := range cd {
		for j := range c.ConvKernel {
			d.conv[j*cd+ch] = conv[ch*c.ConvKernel+j]
		}
	}
	aLog, err := vec("A_log", c.ValueHeads)
	if err != nil {
		return nil, err
	}
	d.rate = make([]float64, len(aLog))
	for h, v := range aLog {
		d.rate[h] = math.Exp(v)
	}
	if d.dtBias, err = vec("dt_bias", c.ValueHeads); err != nil {
		return nil, err
	}
	if d.normW, err = vec("gated_norm", c.ValueDim); err != nil {
		return nil, err
	}
	return d, nil
}

// deltaTape is what DeltaNet.Backward needs from a Forward. Per token it
// holds 2·convDim + 2·Hk·dk + 2·Hk + 4·Hv·dv + 4·Hv floats, plus the
// recurrent state of every value head at the start of each segment of
// seg ≈ √T tokens (Backward recomputes the states inside a segment).
type deltaTape struct {
	u       []float64 // [T][H] input (not copied)
	T, seg  int
	pre, xc []float64 // [T][convDim] conv output before / after the SiLU
	qk      []float64 // [T][2·Hk·dk] q̂ (scaled by 1/√dk) ‖ k̂
	rn      []float64 // [T][2·Hk] (Σx²+1e-6)^−½ of the q heads, then the k heads
	z       []float64 // [T][Hv·dv]
	alpha   []float64 // [T][Hv] e^g
	beta    []float64 // [T][Hv] σ(b)
	sa      []float64 // [T][Hv] σ(a + dt_bias) = softplus′
	e       []float64 // [T][Hv·dv] v − (αS)ᵀk̂
	o       []float64 // [T][Hv·dv] rule output Sᵀq̂
	rr      []float64 // [T][Hv] gated-norm (mean(o²)+ε)^−½
	on      []float64 // [T][Hv·dv] gated-norm output ô (W_out's input)
	ckpt    []float64 // [Hv][nseg][dk·dv] state entering each segment
}

// Forward returns y [T][H] for u [T][H] and the tape for Backward.
func (d *DeltaNet) Forward(u []float64, T int) ([]float64, any) {
	cd, kt, vt, hv := d.convDim(), d.hk*d.dk, d.hv*d.dv, d.hv
	seg := segLen(T)
	tp := &deltaTape{
		u: u, T: T, seg: seg,
		pre: make([]float64, T*cd), xc: make([]float64, T*cd),
		qk: make([]float64, T*2*kt), rn: make([]float64, T*2*d.hk),
		z:     make([]float64, T*vt),
		alpha: make([]float64, T*hv), beta: make([]float64, T*hv), sa: make([]float64, T*hv),
		e: make([]float64, T*vt), o: make([]float64, T*vt),
		rr: make([]float64, T*hv), on: make([]float64, T*vt),
		ckpt: make([]float64, hv*nSeg(T, seg)*d.dk*d.dv),
	}
	y := make([]float64, T*d.hidden)
	if T == 0 {
		return y, tp
	}

	// Projections.
	x0 := make([]float64, T*cd)
	a, b := make([]float64, T*hv), make([]float64, T*hv)
	d.qkv.Forward(x0, u, T)
	d.z.Forward(tp.z, u, T)
	d.a.Forward(a, u, T)
	d.b.Forward(b, u, T)

	// Causal depthwise conv over the raw rows, then SiLU (§7.2).
	K := d.taps
	for t := range T {
		out := tp.pre[t*cd : (t+1)*cd]
		for j := range K {
			r := t - (K - 1) + j
			if r < 0 {
				continue // zero history
			}
			w, x := d.conv[j*cd:(j+1)*cd], x0[r*cd:(r+1)*cd]
			for c := range out {
				out[c] += w[c] * x[c]
			}
		}
	}
	for i, p := range tp.pre {
		tp.xc[i] = silu(p)
	}

	// L2 norm of q and k per head, ε = 1e-6 inside the root; q × 1/√dk (§7.5).
	qs := 1 / math.Sqrt(float64(d.dk))
	for t := range T {
		row, dst := tp.xc[t*cd:], tp.qk[t*2*kt:(t+1)*2*kt]
		for h := range 2 * d.hk {
			x := row[h*d.dk : (h+1)*d.dk]
			var ss float64
			for _, v := range x {
				ss += v * v
			}
			r := 1 / math.Sqrt(ss+1e-6)
			tp.rn[t*2*d.hk+h] = r
			mul := r
			if h < d.hk {
				mul *= qs
			}
			for i, v := range x {
				dst[h*d.dk+i] = v * mul
			}
		}
	}

	// Gates (§7.4): g = −A·softplus(a + dt_bias), α = e^g, β = σ(b).
	for t := range T {
		for h := range hv {
			i := t*hv + h
			x := a[i] + d.dtBias[h]
			tp.sa[i] = sigmoid(x)
			tp.alpha[i] = math.Exp(-d.rate[h] * deltaSoftplus(x))
			tp.beta[i] = sigmoid(b[i])
		}
	}

	// Gated delta rule per value head (§8.1).
	S := make([]float64, d.dk*d.dv)
	for h := range hv {
		d.ruleHead(tp, h, S)
	}

	// Gated output norm per value head (§4): ô = o·(mean(o²)+ε)^−½·w·silu(z).
	for t := range T {
		for h := range hv {
			o := tp.o[t*vt+h*d.dv : t*vt+(h+1)*d.dv]
			z := tp.z[t*vt+h*d.dv : t*vt+(h+1)*d.dv]
			on := tp.on[t*vt+h*d.dv : t*vt+(h+1)*d.dv]
			var ss float64
			for _, v := range o {
				ss += v * v
			}
			r := 1 / math.Sqrt(ss/float64(d.dv)+d.eps)
			tp.rr[t*hv+h] = r
			for j, v := range o {
				on[j] = v * r * d.normW[j] * silu(z[j])
			}
		}
	}
	d.out.Forward(y, tp.on, T)
	return y, tp
}

// ruleHead runs value head h's recurrence over the whole sequence on the
// scratch state S [dk][dv], writing e and o and the segment checkpoints.
func (d *DeltaNet) ruleHead(tp *deltaTape, h int, S []float64) {
	q, k, v := d.headRows(tp, h)
	kt2, cd, vt, hv := 2*d.hk*d.dk, d.convDim(), d.hv*d.dv, d.hv
	ns := d.dk * d.dv
	ck := tp.ckpt[h*nSeg(tp.T, tp.seg)*ns:]
	clear(S)
	for t := range tp.T {
		if t%tp.seg == 0 {
			copy(ck[(t/tp.seg)*ns:(t/tp.seg+1)*ns], S)
		}
		e := tp.e[t*vt+h*d.dv : t*vt+(h+1)*d.dv]
		deltaStep(S, k[t*kt2:t*kt2+d.dk], v[t*cd:t*cd+d.dv], tp.alpha[t*hv+h], tp.beta[t*hv+h], e)
		o := tp.o[t*vt+h*d.dv : t*vt+(h+1)*d.dv]
		readState(o, S, q[t*kt2:t*kt2+d.dk])
	}
}

// headRows returns value head h's q̂, k̂ (row stride 2·Hk·dk) and v (row
// stride convDim) slices starting at token 0.
func (d *DeltaNet) headRows(tp *deltaTape, h int) (q, k, v []float64) {
	kh := h / (d.hv / d.hk) // grouped: value head h reads key head ⌊h/r_v⌋ (docs/model.md §3.3.4)
	kt := d.hk * d.dk
	return tp.qk[kh*d.dk:], tp.qk[kt+kh*d.dk:], tp.xc[2*kt+h*d.dv:]
}

// deltaStep is one recurrent step of the gated delta rule on S [dk][dv]:
// S ← α·S; e = v − Sᵀk; S ← S + k·(β·e)ᵀ. It writes e.
func deltaStep(S, k, v []float64, alpha, beta float64, e []float64) {
	dv := len(v)
	clear(e)
	for i, ki := range k {
		row := S[i*dv : (i+1)*dv]
		for j := range row {
			row[j] *= alpha
			e[j] += ki * row[j]
		}
	}
	for j := range e {
		e[j] = v[j] - e[j]
	}
	for i, ki := range k {
		row := S[i*dv : (i+1)*dv]
		kb := ki * beta
		for j := range row {
			row[j] += kb * e[j]
		}
	}
}

// readState sets o = Sᵀq.
func readState(o, S, q []float64) {
	dv := len(o)
	clear(o)
	for i, qi := range q {
		row := S[i*dv : (i+1)*dv]
		for j := range o {
			o[j] += qi * row[j]
		}
	}
}

func (d *DeltaNet) convDim() int { return 2*d.hk*d.dk + d.hv*d.dv }

// segLen is the recurrence checkpoint interval for T tokens, ⌈√T⌉: it
// balances the stored states (T/seg) against Backward's segment buffer.
func segLen(T int) int {
	s := int(math.Ceil(math.Sqrt(float64(T))))
	return max(s, 1)
}

// nSeg is the number of segments of seg tokens covering T.
func nSeg(T, seg int) int { return (T + seg - 1) / seg }

// deltaSoftplus is ln(1+eˣ) in the overflow-free form max(x,0) + log1p(e^−|x|).
func deltaSoftplus(x float64) float64 {
	return math.Max(x, 0) + math.Log1p(math.Exp(-math.Abs(x)))
}
