package model

import (
	"math"

	"forge/tensor"
)

// chunkLen is C of the chunked delta rule (docs/model.md §8.2); upstream uses 64.
const chunkLen = 64

// deltaNet is one Gated DeltaNet token mixer (docs/model.md §7).
type deltaNet struct {
	qkv, z, a, b, out Linear
	conv              []float32 // [K][convDim] depthwise taps (transposed at load), j = K−1 the current token
	rate              []float64 // [Hv] A = exp(A_log) > 0 (the decay is −A·softplus(·))
	dtBias            []float32 // [Hv]
	normW             []float32 // [dv] gated-norm weight, plain scale (no +1)
}

// forward runs the mixer on u [T, H] and writes dst [T, H].
func (d *deltaNet) forward(m *Model, s *State, li int, u, dst *tensor.Matrix) {
	c := &m.cfg
	T := u.Rows
	ls := &s.layers[li]
	sc := &s.sc
	cd, kt, vt, hv := c.ConvDim(), c.KeyTotal(), c.ValueTotal(), c.ValueHeads
	x0, xc := sc.x0, sc.xc // restored at the end of a verify block's layer
	if s.verify {
		// A verify block's raw and conv'd rows are written straight into
		// the layer's pending rows, which Commit replays (keepPending), and
		// not copied there afterwards (8 rows of the synth-1.4b: 256 KB a
		// layer, ~0.5 ms of a ~35 ms block).
		sc.x0 = tensor.Matrix{Rows: T, Cols: cd, Data: pendingRows(&ls.px0, T*cd)}
		sc.xc = tensor.Matrix{Rows: T, Cols: cd, Data: pendingRows(&ls.pxc, T*cd)}
	}
	sc.x0.Resize(T, cd)
	sc.z.Resize(T, vt)
	sc.ga.Resize(T, hv)
	sc.gb.Resize(T, hv)
	s.products(u).add(d.qkv, &sc.x0).add(d.z, &sc.z).add(d.a, &sc.ga).add(d.b, &sc.gb).do()
	s.observeLayer(li, "linear_attn.qkv_proj", &sc.x0)
	s.observeLayer(li, "linear_attn.z", &sc.z)

	sc.xc.Resize(T, cd)
	if s.num != nil {
		if s.verify || s.rows != nil {
			panic("model: a Numerics does not run Verify or StepBatch")
		}
		sc.o.Resize(T, c.ValueTotal())
		d.forwardNum(c, s, li)
		s.products(&sc.o).add(d.out, dst).do()
		s.observeLayer(li, "linear_attn.mixer_out", dst)
		return
	}
	switch {
	case s.rows != nil: // a StepBatch: each row against its own State (batch.go)
		d.convBatch(c, s, li)
	case s.verify:
		d.convolve(sc, &sc.xc, &sc.x0, ls.wconv, c.ConvKernel) // the block's working copy (verify.go)
	default:
		d.convolve(sc, &sc.xc, &sc.x0, ls.conv, c.ConvKernel)
	}
	s.observeLayer(li, "linear_attn.conv_silu", &sc.xc)

	// L2-normalise q and k per head; q then takes the 1/√dk scale (docs/model.md §7.5).
	for t := range T {
		row := sc.xc.Row(t)
		for h := range 2 * c.KeyHeads {
			l2Norm(row[h*c.KeyDim:(h+1)*c.KeyDim], 1)
		}
	}
	if s.Observe != nil {
		s.observeLayer(li, "linear_attn.q_l2", sliceCols(&sc.obs, &sc.xc, 0, kt))
		s.observeLayer(li, "linear_attn.k_l2", sliceCols(&sc.obs, &sc.xc, kt, 2*kt))
		s.observeLayer(li, "linear_attn.v", sliceCols(&sc.obs, &sc.xc, 2*kt, cd))
	}
	qs := float32(1 / math.Sqrt(float64(c.KeyDim)))
	for t := range T {
		q := sc.xc.Row(t)[:kt]
		for i := range q {
			q[i] *= qs
		}
	}
	// Gates (docs/model.md §7.4), in place: ga ← g = −A·softplus(a + dt_bias), gb ← β = σ(b).
	for t := range T {
		ga, gb := sc.ga.Row(t), sc.gb.Row(t)
		for h := range hv {
			ga[h] = float32(-d.rate[h] * softplus(float64(ga[h])+float64(d.dtBias[h])))
			gb[h] = sigmoid(gb[h])
		}
	}
	s.observeLayer(li, "linear_attn.g", &sc.ga)
	s.observeLayer(li, "linear_attn.beta", &sc.gb)

	sc.o.Resize(T, vt)
	switch {
	case s.rows != nil:
		d.ruleBatch(c, s, li)
	case s.verify:
		d.ruleRows(c, s, ls)
		s.keepPending(ls)
	default:
		d.rule(c, s, ls)
	}
	s.observeLayer(li, "linear_attn.core_out", &sc.o)

	// Gated output norm per value head (docs/model.md §4): ô = RMSNorm(o)·w·silu(z).
	for t := range T {
		o, z := sc.o.Row(t), sc.z.Row(t)
		for h := range hv {
			oh, zh := o[h*c.ValueDim:(h+1)*c.ValueDim], z[h*c.ValueDim:(h+1)*c.ValueDim]
			rmsNorm(oh, oh, d.normW, c.Eps)
			mulSilu(oh, zh)
		}
	}
	s.observeLayer(li, "linear_attn.gated_norm_out", &sc.o)
	s.products(&sc.o).add(d.out, dst).do()
	s.observeLayer(li, "linear_attn.mixer_out", dst)
	if s.verify {
		sc.x0, sc.xc = x0, xc
	}
}

// convolve computes the causal depthwise conv + SiLU of docs/model.md §7.2 over the raw
// rows X [T, convDim], with the K−1 rows of hist as left context, writes
// dst [T, convDim], and advances hist to the last K−1 raw rows. Rows are
// split over the pool in chunks of at least convGrain elements, unless
// the call runs alone (stepMode).
func (d *deltaNet) convolve(sc *scratch, dst, X *tensor.Matrix, hist []float32, K int) {
	T := X.Rows
	if T == 1 || sc.alone {
		d.convRows(dst, X, hist, K, 0, T)
	} else {
		j := &sc.conv
		if j.run == nil {
			j.run = j.rows
		}
		j.d, j.dst, j.X, j.hist, j.K = d, dst, X, hist, K
		tensor.ParallelGrain(T, max(1, convGrain/max(X.Cols, 1)), j.run)
		j.d, j.dst, j.X, j.hist = nil, nil, nil, nil
	}
	shiftConv(hist, X, K) // the last K−1 rows of [hist ‖ X], oldest first
}

// convGrain is the least elements of a chunk of convolve's rows: the
// synth-1.4b's rows of 4096 go two to a chunk (a verify block's eight
// rows ran on one core, 0.8 ms of a block's 30, before), forge-tiny's
// 320 all on one core.
const convGrain = 8 << 10

// convJob carries convolve's rows to the pool; run is the method value
// j.rows, built once per State so that a call allocates nothing.
type convJob struct {
	d      *deltaNet
	dst, X *tensor.Matrix
	hist   []float32
	K      int
	run    func(lo, hi int)
}

func (j *convJob) rows(lo, hi int) { j.d.convRows(j.dst, j.X, j.hist, j.K, lo, hi) }

// convRows computes conv + SiLU output rows [lo, hi) (hist is only read).
func (d *deltaNet) convRows(dst, X *tensor.Matrix, hist []float32, K, lo, hi int) {
	for t := lo; t < hi; t++ {
		d.convSum(dst.Row(t), X, hist, K, t)
		siluInPlace(dst.Row(t))
	}
}

// convSum writes the causal depthwise conv of raw row t (before the SiLU)
// into out: Σ_j conv[j] ⊙ x_{t−(K−1)+j}, rows before the call read from
// hist.
func (d *deltaNet) convSum(out []float32, X *tensor.Matrix, hist []float32, K, t int) {
	cd := X.Cols
	clear(out)
	for j := range K {
		r := t - (K - 1) + j // raw row r relative to the call; r < 0 reads the history
		var src []float32
		if r < 0 {
			src = hist[(K-1+r)*cd : (K+r)*cd]
		} else {
			src = X.Row(r)
		}
		mulAdd(out, d.conv[j*cd:(j+1)*cd], src)
	}
}

// stepParallel is the least recurrent state (bytes, all value heads) for
// which a decode step's delta rule is split over the pool: below it the
// step takes a few microseconds, less than a hand-off (forge-tiny: 24 KB).
const stepParallel = 256 << 10

// rule runs the gated delta rule for every value head over the call's T
// tokens: the recurrent form for a single token, the chunked form otherwise.
// Heads run in parallel on prefill, and on a decode step with a large
// state unless the step runs alone (stepMode).
func (d *deltaNet) rule(c *Config, s *State, ls *layerState) {
	sc := &s.sc
	T := sc.xc.Rows
	if T == 1 {
		sc.step.all(d, c, sc, ls, 0, 0)
		return
	}
	sc.ensureChunk(c, chunkLen)
	tensor.Parallel(c.ValueHeads, func(lo, hi int) {
		for h := lo; h < hi; h++ {
			d.chunkHead(c, sc, ls, h)
		}
	})
}

// stepJob spreads a decode step's value heads over the worker pool; run is
// the method value j.heads, built once per State so a step allocates nothing.
// With rows > 0 (a verify block) each head runs the call's rows in turn on
// the layer's working state; otherwise it runs row row (0 but in a
// StepBatch) on ls's state.
type stepJob struct {
	d    *deltaNet
	c    *Config
	sc   *scratch
	ls   *layerState
	rows int
	row  int
	run  func(lo, hi int)
}

// all runs the recurrent steps of rows rows (0: row row alone) of the
// call on ls over every value head: on the caller when the state is small
// (a hand-off would cost more) or the step runs alone, else on the pool.
func (j *stepJob) all(d *deltaNet, c *Config, sc *scratch, ls *layerState, rows, row int) {
	if j.run == nil {
		j.run = j.heads
	}
	j.d, j.c, j.sc, j.ls, j.rows, j.row = d, c, sc, ls, rows, row
	if headsOnPool(ls, sc) {
		tensor.ParallelGrain(c.ValueHeads, 2, j.run)
	} else {
		j.heads(0, c.ValueHeads)
	}
	j.rows, j.row = 0, 0
}

// headsOnPool reports whether ls's value heads run on the pool: a large
// state (stepParallel) and a call that does not run alone.
func headsOnPool(ls *layerState, sc *scratch) bool {
	return 4*len(ls.rec) >= stepParallel && !sc.alone
}

// headQKV returns value head h's q, k and v in a conv'd row [convDim]: q
// and k of its key head (grouped: value head h uses key head ⌊h/r_v⌋,
// docs/model.md §3.3.4), its own v.
func headQKV(c *Config, row []float32, h int) (q, k, v []float32) {
	dk, dv, kt := c.KeyDim, c.ValueDim, c.KeyTotal()
	kh := h / (c.ValueHeads / c.KeyHeads)
	return row[kh*dk : (kh+1)*dk], row[kt+kh*dk : kt+(kh+1)*dk], row[2*kt+h*dv : 2*kt+(h+1)*dv]
}

func (j *stepJob) heads(lo, hi int) {
	for h := lo; h < hi; h++ {
		if j.rows == 0 {
			j.d.stepHead(j.c, j.sc, j.ls.rec, j.ls.rec, h, j.row)
			continue
		}
		src := j.ls.wrec
		if j.ls.wfresh { // a verify block's first row: from the committed state (ruleRows)
			src = j.ls.rec
		}
		j.d.rowsHead(j.c, j.sc, j.ls.wrec, src, h, j.rows)
	}
}

// rowsHead runs value head h's recurrent steps for the call's first n
// rows, the first from the state src into rec (deltaRows).
func (d *deltaNet) rowsHead(c *Config, sc *scratch, rec, src []float32, h, n int) {
	dk, dv := c.KeyDim, c.ValueDim
	var rows [maxVerify]deltaRow
	for t := range n {
		q, k, v := headQKV(c, sc.xc.Row(t), h)
		rows[t] = deltaRow{q: q, k: k, v: v, o: sc.o.Row(t)[h*dv : (h+1)*dv], g: sc.ga.Row(t)[h], beta: sc.gb.Row(t)[h]}
	}
	hs := dk * dv
	deltaRows(rec[h*hs:(h+1)*hs], src[h*hs:(h+1)*hs], rows[:n], sc.w[h*dv:(h+1)*dv], sc.wu[h*dv:(h+1)*dv])
}

// stepHead runs value head h's recurrent step for row t of the call from
// the state src into rec (the same state but for a verify block's first
// row).
func (d *deltaNet) stepHead(c *Config, sc *scratch, rec, src []float32, h, t int) {
	dk, dv := c.KeyDim, c.ValueDim
	q, k, v := headQKV(c, sc.xc.Row(t), h)
	S, from := rec[h*dk*dv:(h+1)*dk*dv], src[h*dk*dv:(h+1)*dk*dv]
	deltaStepFrom(S, from, q, k, v, sc.ga.Row(t)[h], sc.gb.Row(t)[h], sc.o.Row(t)[h*dv:(h+1)*dv], sc.w[h*dv:(h+1)*dv])
}

// chunkHead gathers head h's q, k, v, g, β rows chunk by chunk into
// contiguous buffers, runs deltaChunk and scatters the outputs.
func (d *deltaNet) chunkHead(c *Config, sc *scratch, ls *layerState, h int) {
	dk, dv, kt := c.KeyDim, c.ValueDim, c.KeyTotal()
	kh := h / (c.ValueHeads / c.KeyHeads)
	hs := sc.heads[h]
	S := ls.rec[h*dk*dv : (h+1)*dk*dv]
	T := sc.xc.Rows
	for t0 := 0; t0 < T; t0 += chunkLen {
		n := min(chunkLen, T-t0)
		for i := range n {
			row := sc.xc.Row(t0 + i)
			copy(hs.q[i*dk:(i+1)*dk], row[kh*dk:(kh+1)*dk])
			copy(hs.k[i*dk:(i+1)*dk], row[kt+kh*dk:kt+(kh+1)*dk])
			copy(hs.v[i*dv:(i+1)*dv], row[2*kt+h*dv:2*kt+(h+1)*dv])
			hs.g[i] = sc.ga.Row(t0 + i)[h]
			hs.beta[i] = sc.gb.Row(t0 + i)[h]
		}
		deltaChunk(S, hs.q[:n*dk], hs.k[:n*dk], hs.v[:n*dv], hs.g[:n], hs.beta[:n], hs.o[:n*dv], hs.cs)
		for i := range n {
			copy(sc.o.Row(t0 + i)[h*dv:(h+1)*dv], hs.o[i*dv:(i+1)*dv])
		}
	}
}

// sliceCols copies columns [lo, hi) of src into dst (for observers).
func sliceCols(dst, src *tensor.Matrix, lo, hi int) *tensor.Matrix {
	dst.Resize(src.Rows, hi-lo)
	for t := range src.Rows {
		copy(dst.Row(t), src.Row(t)[lo:hi])
	}
	return dst
}
