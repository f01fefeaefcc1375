package model

import (
	"math"

	"forge/tensor"
)

// attention is one gated full-attention token mixer (docs/model.md §6).
type attention struct {
	q, k, v, o   Linear
	qNorm, kNorm []float32 // [D] effective scales 1+w
}

// forward runs the mixer on u [T, H] at positions s.pos…s.pos+T−1 and
// writes dst [T, H]. It appends the call's keys and values to the KV cache.
func (a *attention) forward(m *Model, s *State, li int, u, dst *tensor.Matrix) {
	c := &m.cfg
	T, D, hq, hkv := u.Rows, c.HeadDim, c.Heads, c.KVHeads
	sc := &s.sc
	ls := &s.layers[li]
	sc.p.Resize(T, 2*hq*D)
	sc.kp.Resize(T, hkv*D)
	sc.vp.Resize(T, hkv*D)
	s.products(u).add(a.q, &sc.p).add(a.k, &sc.kp).add(a.v, &sc.vp).do()

	// Split q_proj per head into [query_h ‖ gate_h] (docs/model.md §3.2), norm, RoPE.
	sc.q.Resize(T, hq*D)
	sc.gate.Resize(T, hq*D)
	for t := range T {
		p, q, g := sc.p.Row(t), sc.q.Row(t), sc.gate.Row(t)
		cos, sin := m.rope.at(sc, t)
		for h := range hq {
			qh := q[h*D : (h+1)*D]
			rmsNorm(qh, p[h*2*D:h*2*D+D], a.qNorm, c.Eps)
			m.rope.apply(qh, cos, sin)
			copy(g[h*D:(h+1)*D], p[h*2*D+D:(h+1)*2*D])
		}
		k := sc.kp.Row(t)
		for h := range hkv {
			kh := k[h*D : (h+1)*D]
			rmsNorm(kh, kh, a.kNorm, c.Eps)
			m.rope.apply(kh, cos, sin)
		}
	}
	if s.num != nil {
		if s.verify || s.rows != nil {
			panic("model: a Numerics does not run Verify or StepBatch")
		}
		s.storeRows(SiteNorm, li, &sc.q)
		s.storeRows(SiteKV, li, &sc.kp)
		s.storeRows(SiteKV, li, &sc.vp)
	}
	switch {
	case s.rows != nil: // a StepBatch: each row in its own State's cache (batch.go)
	case s.kv == KVInt8:
		ls.q.append(sc.kp.Data, sc.vp.Data, hkv, D)
	default:
		ls.k = append(ls.k, sc.kp.Data...)
		ls.v = append(ls.v, sc.vp.Data...)
	}
	s.observeLayer(li, "self_attn.q_rope", &sc.q)
	s.observeLayer(li, "self_attn.k_rope", &sc.kp)
	s.observeLayer(li, "self_attn.v", &sc.vp)
	s.observeLayer(li, "self_attn.gate", &sc.gate)

	sc.att.Resize(T, hq*D)
	if s.num != nil {
		scores := make([]float32, s.pos+T)
		for t := range T {
			for h := range hq {
				a.attendNum(c, s, li, s.pos, t, h, scores)
			}
		}
		s.observeLayer(li, "self_attn.attn_out", &sc.att)
		for i, g := range sc.gate.Data {
			sc.gate.Data[i] = sigmoid(g)
		}
		s.storeRows(SiteAct, li, &sc.gate)
		for i, g := range sc.gate.Data {
			sc.att.Data[i] *= g
		}
		s.storeRows(SiteAct, li, &sc.att)
		s.products(&sc.att).add(a.o, dst).do()
		s.observeLayer(li, "self_attn.mixer_out", dst)
		return
	}
	if s.rows != nil {
		a.attendRows(c, s, li)
	} else if T == 1 {
		a.attendStep(c, s.pos+s.pend, 0, ls, sc)
	} else if s.verify {
		a.attendBlock(c, s.pos+s.pend, T, ls, sc)
	} else {
		hk, rq, ws := c.KVHeads, hq/c.KVHeads, s.pos+T+32
		tensor.Parallel(T*hk, func(lo, hi int) { // (row, KV head) pairs
			scores := make([]float32, rq*ws)
			for i := lo; i < hi; i++ {
				h0 := (i % hk) * rq
				a.attendRowHeads(c, s.pos, ls, sc, i/hk, h0, h0+rq, scores, ws)
			}
		})
	}
	s.observeLayer(li, "self_attn.attn_out", &sc.att)
	mulSigmoid(sc.att.Data, sc.gate.Data) // output gate: σ, not silu (docs/model.md §6.5)
	s.products(&sc.att).add(a.o, dst).do()
	s.observeLayer(li, "self_attn.mixer_out", dst)
}

// attParallel is the least cached keys times query heads times D (floats
// read) for which a decode step's attention heads are split over the pool
// (forge-tiny: 256 positions), unless the step runs alone.
const attParallel = 1 << 16

// attendStep is attend for a decode step (one row, every query head), by
// attendScores and attendValues where this build has them. Query head h
// scores into its own part of sc.scores (pos+32 floats, as attendScores
// needs).
func (a *attention) attendStep(c *Config, pos, t int, ls *layerState, sc *scratch) {
	j := &sc.attJob
	if j.run == nil {
		j.run = j.heads // built once, so that a step allocates nothing
	}
	j.a, j.c, j.pos, j.t, j.ls, j.sc = a, c, pos, t, ls, sc
	if sc.alone || (pos+1)*c.Heads*c.HeadDim < attParallel {
		j.heads(0, c.Heads)
		return
	}
	tensor.ParallelGrain(c.Heads, 1, j.run)
}

// attendBlock is attend for a verify block of T rows at positions pos…:
// each row's heads as the decode step at its position computes them
// (attendRowHeads, as attJob.heads), the rows' (row, KV head) pairs in one
// call on the pool, where a call a row cost a hand-off each and left the
// cores waiting for each other at the end of every row (the synth-1.4b:
// 8 rows × 8 heads over ~260 positions, six layers a block).
func (a *attention) attendBlock(c *Config, pos, T int, ls *layerState, sc *scratch) {
	j := &sc.attBlock
	if j.run == nil {
		j.run = j.pairs // built once, so that a block allocates nothing
	}
	j.a, j.c, j.pos, j.ls, j.sc = a, c, pos, ls, sc
	n := T * c.KVHeads
	if sc.alone || T*(pos+T)*c.Heads*c.HeadDim < attParallel {
		j.pairs(0, n)
	} else {
		tensor.ParallelGrain(n, 1, j.run)
	}
	j.a, j.c, j.ls, j.sc = nil, nil, nil, nil
}

// attBlockJob spreads a verify block's (row, KV head) pairs over the
// worker pool: pair i is row i / KVHeads and KV head i % KVHeads, whose
// query heads' scores take their own part of sc.scores.
type attBlockJob struct {
	a   *attention
	c   *Config
	pos int // the block's first position
	ls  *layerState
	sc  *scratch
	run func(lo, hi int)
}

func (j *attBlockJob) pairs(lo, hi int) {
	c := j.c
	hk, rq := c.KVHeads, c.Heads/c.KVHeads
	T := j.sc.q.Rows
	wmax := j.pos + T + 32 // more than any row's ws: each pair's part of sc.scores (Model.begin sizes it)
	for i := lo; i < hi; i++ {
		t, h0 := i/hk, (i%hk)*rq
		ws := j.pos + t + 32 // as the decode step at pos+t lays its heads' scores out (attJob.heads)
		j.a.attendRowHeads(c, j.pos, j.ls, j.sc, t, h0, h0+rq, j.sc.scores[i*rq*wmax:], ws)
	}
}

// attJob spreads a decode step's query heads over the worker pool.
type attJob struct {
	a   *attention
	c   *Config
	pos int // the step's position
	t   int // its row of the call
	ls  *layerState
	sc  *scratch
	run func(lo, hi int)
}

func (j *attJob) heads(lo, hi int) {
	rq, ws := j.c.Heads/j.c.KVHeads, j.pos+32
	for h := lo; h < hi; {
		e := min(hi, (h/rq+1)*rq) // the query heads of h's KV head
		j.a.attendRowHeads(j.c, j.pos-j.t, j.ls, j.sc, j.t, h, e, j.sc.scores[h*ws:], ws)
		h = e
	}
}

// attendRowHeads is attend for call row t (at position pos+t) and query
// heads [h0, h1) of one KV head by a decode step's vector kernels where
// this build has them: the heads' scores (attendScoresHeads, or its fp16
// twin), each head's ws floats apart in scores (pos+t+33 floats each),
// then their weighted sums (attendValuesHeads, attendValuesInt8Heads),
// while the KV head's keys and values are in cache; by attend otherwise.
// A decode step runs it for its heads, a prompt for each of its rows, so
// that a prompt's rows get the attention a decode step at their position
// computes.
func (a *attention) attendRowHeads(c *Config, pos int, ls *layerState, sc *scratch, t, h0, h1 int, scores []float32, ws int) {
	D, kvw, rq := c.HeadDim, c.KVHeads*c.HeadDim, c.Heads/c.KVHeads
	n, off, hk := pos+t+1, (h0/rq)*D, h0/rq
	scale := float32(1 / math.Sqrt(float64(D)))
	q, o := sc.q.Row(t)[h0*D:h1*D], sc.att.Row(t)[h0*D:h1*D]
	if kq := &ls.q; kq.k != nil { // the int8 cache: keys fp16, values int8
		if attendScoresF16Heads(scores, ws, q, kq.k, h1-h0, n, kvw, off, scale) {
			attendValuesInt8Heads(o, scores, ws, kq.v, kq.vs, h1-h0, n, kvw, off, hk, c.KVHeads)
			return
		}
	} else if attendScoresHeads(scores, ws, q, ls.k, h1-h0, n, kvw, off, scale) {
		attendValuesHeads(o, scores, ws, ls.v, h1-h0, n, kvw, off)
		return
	}
	a.attend(c, pos, ls, sc, t, h0, h1, scores)
}

// attendValuesInt8Heads is attendValuesHeads for the int8 cache's values
// (KV head hk of hkv, their scales vs): each head gets attendValuesInt8's
// bits, four at a time by valuesI8 where the build has it.
func attendValuesInt8Heads(o, w []float32, ws int, V []int8, vs []float32, heads, n, stride, off, hk, hkv int) {
	D := len(o) / heads
	i := 0
	for ; i+4 <= heads && valuesI8(o[i*D:(i+4)*D], w[i*ws:], ws, V, vs, n, stride, off, hk, hkv); i += 4 {
	}
	for ; i < heads; i++ {
		attendValuesInt8(o[i*D:(i+1)*D], w[i*ws:], V, vs, n, stride, off, hk, hkv)
	}
}

// attendValuesHeads is attendValues for heads query heads that read the
// same values (a KV head's), each with attendValues' bits: o holds their
// outputs one after another, w their weights ws floats apart. Four at a
// time share each load of a row of values (values4) where the build has
// the kernel.
func attendValuesHeads(o, w []float32, ws int, V []float32, heads, n, stride, off int) {
	D := len(o) / heads
	i := 0
	for ; i+4 <= heads && values4(o[i*D:(i+4)*D], w[i*ws:], ws, V, n, stride, off); i += 4 {
	}
	for ; i < heads; i++ {
		attendValues(o[i*D:(i+1)*D], w[i*ws:], V, n, stride, off)
	}
}

// sum64 is the softmax's denominator Σ w in float64, in four partial
// sums (w[i] into sum i mod 4, then (s0 + s1) + (s2 + s3)): one running
// sum waits ~4 cycles on each addition, four keep the adder busy. Every
// build's attention sums this way (attend, softmaxScores and its AVX2
// twin), so their weights stay the same bits.
func sum64(w []float32) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(w); i += 4 {
		s0 += float64(w[i])
		s1 += float64(w[i+1])
		s2 += float64(w[i+2])
		s3 += float64(w[i+3])
	}
	for ; i < len(w); i++ {
		s0 += float64(w[i])
	}
	return (s0 + s1) + (s2 + s3)
}

// attend computes softmax(q·Kᵀ/√D)·V for call row t and query heads
// [h0, h1) over cache positions 0…pos+t (causal), into sc.att. Query head
// h reads KV head ⌊h/r_q⌋ (docs/model.md §6.4). scores needs pos+t+1 floats.
func (a *attention) attend(c *Config, pos int, ls *layerState, sc *scratch, t, h0, h1 int, scores []float32) {
	D, kvw := c.HeadDim, c.KVHeads*c.HeadDim
	n := pos + t + 1
	scale := float32(1 / math.Sqrt(float64(D))) // 1/√D with the full head_dim
	rq := c.Heads / c.KVHeads
	for h := h0; h < h1; h++ {
		q := sc.q.Row(t)[h*D : (h+1)*D]
		off := (h / rq) * D
		w := scores[:n]
		mx := float32(math.Inf(-1))
		for tau := range n {
			var v float32
			if ls.q.k == nil {
				v = dot(q, ls.k[tau*kvw+off:tau*kvw+off+D]) * scale
			} else {
				v = dotF16(q, ls.q.k[tau*kvw+off:tau*kvw+off+D]) * scale
			}
			w[tau] = v
			mx = max(mx, v)
		}
		for tau := range w {
			w[tau] = decay32(w[tau] - mx)
		}
		sum := sum64(w)
		o := sc.att.Row(t)[h*D : (h+1)*D]
		clear(o)
		inv := float32(1 / sum)
		if ls.q.v != nil {
			hk := h / rq
			for tau := range n {
				axpyInt8(o, w[tau]*inv*ls.q.vs[tau*c.KVHeads+hk], ls.q.v[tau*kvw+off:tau*kvw+off+D])
			}
			continue
		}
		for tau := range n {
			axpy(o, w[tau]*inv, ls.v[tau*kvw+off:tau*kvw+off+D])
		}
	}
}
