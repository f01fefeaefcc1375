package model

import (
	"fmt"
	"math"

	"forge/tensor"
)

// Site names a kind of tensor that the forward hands to a Numerics as it
// makes it. The kinds follow what a device graph would hold in a buffer
// of its own.
type Site uint8

const (
	SiteHidden Site = iota // the residual stream: embedding rows, and after each sub-block's add
	SiteNorm               // RMSNorm outputs: input norms, attention q after norm and RoPE, the gated norm, the final norm
	SiteMatmul             // products of a Linear (reported by a decorator of the Linears, not by the forward)
	SiteConv               // the DeltaNet causal conv, before its SiLU
	SiteAct                // activations: SiLU outputs, SwiGLU and gate products, the scaled down-projection input
	SiteQK                 // DeltaNet q and k after the L2 norm and their scaling
	SiteV                  // DeltaNet v (after the fix's scaling, if any)
	SiteGate               // DeltaNet decay g, its factor e^g, and the write strength β
	SiteState              // the DeltaNet recurrent state S after each decay and each update
	SiteUpdate             // DeltaNet Sᵀk, v − Sᵀk, u = β(v − Sᵀk) and the rows of k uᵀ
	SiteCore               // the DeltaNet core output o = Sᵀq
	SiteKV                 // attention keys (after norm and RoPE) and values: the KV cache
	SiteScore              // attention scores q·k/√D
	SiteProb               // attention softmax terms: e^{s−max}, sums, probabilities
	SiteAttn               // attention output before the output gate (and a block's partial numerator)
	NumSites               // the number of sites
)

var siteNames = [NumSites]string{"hidden", "norm", "matmul", "conv", "act", "gdn_qk", "gdn_v", "gdn_gate",
	"gdn_state", "gdn_update", "gdn_core", "kv", "att_score", "att_prob", "att_out"}

func (s Site) String() string {
	if s < NumSites {
		return siteNames[s]
	}
	return fmt.Sprintf("Site(%d)", uint8(s))
}

// Numerics emulates a device that holds tensors in a narrower type than
// fp32 and computes some ops its own way (package ane: Apple's Neural
// Engine in fp16). A State with a Numerics runs the model's own forward —
// the same ops in the same order, the same weights behind the same
// Linears — and hands every tensor such a device would store to Store as
// soon as it is made, so that what the next op reads is what the device
// would read. SiLU and softplus go through the Numerics too, since a
// device's forms of them differ; Scaling turns on rescalings that are
// exact in real arithmetic and exist only to keep fp16 values in range.
//
// With a Numerics the DeltaNet runs the recurrent form row by row at every
// T (the state stored after each update, as a device's recurrent
// buffers are), attention runs one row and head at a time, and nothing
// uses the vector kernels that reorder arithmetic; it is a measuring
// path, not a fast one. Products of Linears are not stored by the
// forward: a Numerics decorates the Linears it loads (ane.Source).
type Numerics interface {
	// Store rounds x in place to what the device would hold for a
	// tensor of kind site made in layer li (−1 outside the layers).
	Store(site Site, li int, x []float32)
	// Silu sets x[i] = silu(x[i]) as the device computes it.
	Silu(x []float32)
	// Softplus is the device's ln(1 + eˣ).
	Softplus(x float32) float32
	// Scaling returns the rescalings to apply (its zero value: none).
	Scaling() Scaling
}

// Scaling holds rescalings that leave the model's function unchanged in
// real arithmetic and move fp16 values away from subnormals or overflow
// (docs/ane.md §1; reference-pipeline §3.2).
type Scaling struct {
	// GDNQuery and GDNValue multiply the DeltaNet q and v (0 or 1: off).
	// S and u scale by GDNValue and o = Sᵀq by GDNQuery·GDNValue, which
	// the gated RMSNorm removes exactly when its ε is multiplied by
	// (GDNQuery·GDNValue)²: RMSNorm(c·o; c²ε) = RMSNorm(o; ε).
	GDNQuery, GDNValue float32
	// DownInput multiplies the MLP down-projection's input and divides
	// its output (0 or 1: off) — the variant the reference rejected.
	DownInput float32
	// AttBlock splits attention's keys into blocks of this many (0: one
	// block): e^{s−max} with one global max, each block's denominator
	// and numerator summed on its own and then combined, o = num/den.
	AttBlock int
}

func (sc Scaling) gdn() (q, v float32) {
	q, v = sc.GDNQuery, sc.GDNValue
	if q == 0 {
		q = 1
	}
	if v == 0 {
		v = 1
	}
	return q, v
}

// SetNumerics makes s's forwards emulate n (nil: back to fp32). It panics
// on a State with the int8 KV cache or int8 activations, which emulate
// another device. Verify and StepBatch do not take a Numerics.
func (s *State) SetNumerics(n Numerics) {
	if n != nil && (s.kv != KVFloat32 || s.act != ActFloat32) {
		panic("model: SetNumerics on a State with an int8 KV cache or int8 activations")
	}
	s.num = n
	if n != nil {
		s.nsc = make([]float32, 2*s.cfg.ValueDim+1)
	}
}

// store hands x to the State's Numerics, if any.
func (s *State) store(site Site, li int, x []float32) {
	if s.num != nil {
		s.num.Store(site, li, x)
	}
}

// swigluNum is opSwiGLU as the Numerics computes it: silu(g), stored, then
// its product with up, stored.
func (s *State) swigluNum(li int) {
	sc := &s.sc
	s.num.Silu(sc.g.Data)
	s.store(SiteAct, li, sc.g.Data)
	for i, u := range sc.up.Data {
		sc.g.Data[i] *= u
	}
	s.store(SiteAct, li, sc.g.Data)
}

// downNum runs the MLP down-projection of sc.g into sc.y with the
// Numerics' input scaling c: y = (c·g)·W_downᵀ / c.
func (s *State) downNum(L *layer, li int) {
	sc := &s.sc
	c := s.num.Scaling().DownInput
	if c == 0 || c == 1 {
		s.products(&sc.g).add(L.down, &sc.y).do()
		return
	}
	for i := range sc.g.Data {
		sc.g.Data[i] *= c
	}
	s.store(SiteAct, li, sc.g.Data)
	s.products(&sc.g).add(L.down, &sc.y).do()
	for i := range sc.y.Data {
		sc.y.Data[i] /= c
	}
	s.store(SiteAct, li, sc.y.Data)
}

// forwardNum is the DeltaNet mixer from its raw projections on, as the
// State's Numerics computes it (deltaNet.forward calls it with x0, z, ga,
// gb made): conv, SiLU, L2 norms and scalings, gates, the recurrent rule
// row by row, the gated norm. Each tensor is stored as it is made.
func (d *deltaNet) forwardNum(c *Config, s *State, li int) {
	sc, ls, n := &s.sc, &s.layers[li], s.num
	T := sc.x0.Rows
	cd, kt, hv := c.ConvDim(), c.KeyTotal(), c.ValueHeads
	sq, sv := n.Scaling().gdn()
	for t := range T {
		d.convSum(sc.xc.Row(t), &sc.x0, ls.conv, c.ConvKernel, t)
	}
	shiftConv(ls.conv, &sc.x0, c.ConvKernel)
	s.store(SiteConv, li, sc.xc.Data)
	n.Silu(sc.xc.Data)
	s.store(SiteAct, li, sc.xc.Data)
	qs := float32(1/math.Sqrt(float64(c.KeyDim))) * sq
	for t := range T {
		row := sc.xc.Row(t)
		for h := range 2 * c.KeyHeads {
			l2Norm(row[h*c.KeyDim:(h+1)*c.KeyDim], 1)
		}
		for i := range row[:kt] {
			row[i] *= qs
		}
		for i := range row[2*kt : cd] {
			row[2*kt+i] *= sv
		}
		s.store(SiteQK, li, row[:2*kt])
		s.store(SiteV, li, row[2*kt:cd])
	}
	for t := range T {
		ga, gb := sc.ga.Row(t), sc.gb.Row(t)
		for h := range hv {
			ga[h] = float32(-d.rate[h]) * n.Softplus(ga[h]+d.dtBias[h])
			gb[h] = sigmoid(gb[h])
		}
		s.store(SiteGate, li, ga)
		s.store(SiteGate, li, gb)
	}
	for t := range T {
		for h := range hv {
			d.stepNum(c, s, li, ls.rec, h, t)
		}
	}
	eps := c.Eps * float64(sq) * float64(sq) * float64(sv) * float64(sv)
	for t := range T {
		o, z := sc.o.Row(t), sc.z.Row(t)
		for h := range hv {
			oh := o[h*c.ValueDim : (h+1)*c.ValueDim]
			rmsNorm(oh, oh, d.normW, eps)
		}
		s.store(SiteNorm, li, o)
		n.Silu(z)
		s.store(SiteAct, li, z)
		for i := range o {
			o[i] *= z[i]
		}
		s.store(SiteAct, li, o)
	}
}

// stepNum is deltaStep for value head h and row t as the Numerics holds
// it: S ← e^g·S (stored); w = Sᵀk, v − w, u = β(v − w) (each stored);
// S ← S + k uᵀ, each row of k uᵀ stored before it is added and S after;
// o = Sᵀq (stored).
func (d *deltaNet) stepNum(c *Config, s *State, li int, rec []float32, h, t int) {
	sc := &s.sc
	dk, dv := c.KeyDim, c.ValueDim
	q, k, v := headQKV(c, sc.xc.Row(t), h)
	S := rec[h*dk*dv : (h+1)*dk*dv]
	o := sc.o.Row(t)[h*dv : (h+1)*dv]
	w, r, a := s.nsc[:dv], s.nsc[dv:2*dv], s.nsc[2*dv:2*dv+1]
	a[0] = decay(float64(sc.ga.Row(t)[h]))
	s.store(SiteGate, li, a)
	for i := range S {
		S[i] *= a[0]
	}
	s.store(SiteState, li, S)
	clear(w)
	for i, ki := range k {
		axpy(w, ki, S[i*dv:(i+1)*dv])
	}
	s.store(SiteUpdate, li, w)
	for j := range w {
		w[j] = v[j] - w[j]
	}
	s.store(SiteUpdate, li, w)
	beta := sc.gb.Row(t)[h]
	for j := range w {
		w[j] *= beta
	}
	s.store(SiteUpdate, li, w)
	for i, ki := range k {
		for j := range r {
			r[j] = ki * w[j]
		}
		s.store(SiteUpdate, li, r)
		addTo(S[i*dv:(i+1)*dv], r)
	}
	s.store(SiteState, li, S)
	clear(o)
	for i, qi := range q {
		axpy(o, qi, S[i*dv:(i+1)*dv])
	}
	s.store(SiteCore, li, o)
}

// attendNum is attend for call row t (position pos+t) and query head h as
// the Numerics holds it: scores (stored), e^{s−max} with the global max
// (stored), then either one block — den = Σe, p = e/den (stored), o = Σ p·v
// — or blocks of Scaling.AttBlock keys, each with its own den_b and
// numerator Σ e·v (stored), combined into den and num (each partial sum
// stored) and o = num/den. o is stored.
func (a *attention) attendNum(c *Config, s *State, li, pos, t, h int, scores []float32) {
	sc, ls := &s.sc, &s.layers[li]
	D, kvw := c.HeadDim, c.KVHeads*c.HeadDim
	n := pos + t + 1
	off := (h / (c.Heads / c.KVHeads)) * D
	scale := float32(1 / math.Sqrt(float64(D)))
	q := sc.q.Row(t)[h*D : (h+1)*D]
	w := scores[:n]
	for tau := range n {
		w[tau] = dot(q, ls.k[tau*kvw+off:tau*kvw+off+D]) * scale
	}
	s.store(SiteScore, li, w)
	mx := float32(math.Inf(-1))
	for _, v := range w {
		mx = max(mx, v)
	}
	for tau, v := range w {
		w[tau] = float32(math.Exp(float64(v - mx)))
	}
	s.store(SiteProb, li, w)
	o := sc.att.Row(t)[h*D : (h+1)*D]
	one := s.nsc[:1]
	B := s.num.Scaling().AttBlock
	if B <= 0 || B >= n {
		var sum float32
		for _, e := range w {
			sum += e
		}
		one[0] = sum
		s.store(SiteProb, li, one)
		for tau := range w {
			w[tau] /= one[0]
		}
		s.store(SiteProb, li, w)
		clear(o)
		for tau := range n {
			axpy(o, w[tau], ls.v[tau*kvw+off:tau*kvw+off+D])
		}
		s.store(SiteAttn, li, o)
		return
	}
	num := make([]float32, 2*D) // the running numerator, then one block's
	part := num[D:]
	num = num[:D]
	var den float32
	for b0 := 0; b0 < n; b0 += B {
		b1 := min(n, b0+B)
		var sum float32
		clear(part)
		for tau := b0; tau < b1; tau++ {
			sum += w[tau]
			axpy(part, w[tau], ls.v[tau*kvw+off:tau*kvw+off+D])
		}
		one[0] = sum
		s.store(SiteProb, li, one)
		s.store(SiteAttn, li, part)
		one[0] += den
		s.store(SiteProb, li, one)
		den = one[0]
		addTo(num, part)
		s.store(SiteAttn, li, num)
	}
	for i := range o {
		o[i] = num[i] / den
	}
	s.store(SiteAttn, li, o)
}

// storeRows hands each row of m to the Numerics (a whole matrix at once
// when its rows are contiguous, which tensor.Matrix's are).
func (s *State) storeRows(site Site, li int, m *tensor.Matrix) {
	s.store(site, li, m.Data[:m.Rows*m.Cols])
}
