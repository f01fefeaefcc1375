package model

import (
	"sync/atomic"
	"time"

	"forge/lut"
	"forge/tensor"
)

// A decode step's products are small (forge-tiny's largest layer product
// reads 196 KB of LUT4 weights, ~20 µs of one core), so handing each one
// to the worker pool on its own costs a hand-off per product and leaves
// the smaller ones on one core. A stage runs the products of one input
// (a layer's mixer input projections, MLP gate and up) as one pool call
// whose chunks are ranges of their stacked output rows, balanced by
// weight bytes: every core gets a share of every product, and a layer
// makes a few hand-offs instead of one per matrix.

// rowsLinear is a Linear that computes a range of its outputs on the
// calling goroutine (lut.Matrix and tensor.Dense have MulRows).
type rowsLinear interface {
	Linear
	MulRows(dst, x *tensor.Matrix, lo, hi int)
}

const (
	// stageUnit is the row granularity of a stage's chunks: they split a
	// matrix at multiples of 32 rows, where MulRows gives Mul's bits.
	stageUnit = 32
	// stageBytes is the least weight bytes per chunk (~1.5 µs of the
	// LUT4 kernel on one core), so that a chunk is worth a hand-off.
	stageBytes = 16 << 10
	// maxStage is the most products a stage takes.
	maxStage = 4
	// rowsPiece is the weight bytes a verify block's chunk runs all its
	// rows of x over before moving on: well inside a core's L2.
	rowsPiece = 64 << 10
	// maxVerify is the most rows a verify block takes (a draft of 16
	// tokens and its anchor).
	maxVerify = 17
)

// stage is the products of one input x [T, in] of a decode step (T = 1) or
// a verify block (T rows, verify.go). Build it with products and add, run
// it with do. A verify block's rows are each computed as a decode step
// computes its one row; a chunk walks its output rows in pieces of about
// rowsPiece weight bytes, and every row of x meets a piece while it is in
// cache. Other calls of more than one row (prefill), or a Linear without
// MulRows, run the products one after another, each with Mul (which splits
// itself over the pool).
type stage struct {
	x     *tensor.Matrix
	n     int
	lin   [maxStage]Linear
	dst   [maxStage]*tensor.Matrix
	rows  [maxStage]int   // out of each product
	end   [maxStage]int   // units (stageUnit rows) of products 0…i
	size  [maxStage]int64 // weight bytes of each product
	bytes int64
	split bool // every product has MulRows and x has one row (or is a verify block)
	exact bool // a verify block: every row as a decode step
	alone bool // run the chunks on the caller (stepMode)
	act8  bool // int8 activations (State.SetAct)
	run   func(lo, hi int)

	q8  [maxStage]*lut.Int8Input // product i's int8 input (nil: float32), see quantize
	in8 [maxStage]lut.Int8Input  // their buffers

	// The inputs quantize prepared and, when it left their rows to the
	// chunks, the rows' count (qtotal = nq·T, 0 otherwise), the next to
	// claim and those done (quantizeRows).
	qin          [maxStage]*lut.Int8Input
	nq           int
	qtotal       int32
	qnext, qdone atomic.Int32

	xr [maxVerify]tensor.Matrix           // a verify block's rows of x, [1, in] each
	dr [maxStage][maxVerify]tensor.Matrix // and of each product's dst
}

// products starts a stage on input x (the State's one stage: stages do not
// nest).
func (s *State) products(x *tensor.Matrix) *stage {
	st := &s.sc.stage
	if st.run == nil {
		st.run = st.chunk // built once, so do allocates nothing
	}
	rows := x.Rows
	if s.verify || s.rows != nil {
		if rows > maxVerify {
			panic("model: a verify block or step batch of more than 17 rows")
		}
		rows = 1 // each row as a decode step
		for t := range x.Rows {
			st.xr[t] = tensor.Matrix{Rows: 1, Cols: x.Cols, Data: x.Row(t)}
		}
	}
	st.x, st.n, st.bytes, st.split, st.alone = x, 0, 0, rows == 1, s.sc.alone
	st.exact = s.verify || s.rows != nil
	st.act8 = s.int8Step(rows)
	return st
}

// add appends dst = x·Wᵀ to the stage; dst is already shaped.
func (st *stage) add(l Linear, dst *tensor.Matrix) *stage {
	out, in := l.Dims()
	_, ok := l.(rowsLinear)
	st.split = st.split && ok
	prev := 0
	if st.n > 0 {
		prev = st.end[st.n-1]
	}
	st.lin[st.n], st.dst[st.n], st.rows[st.n] = l, dst, out
	if st.exact {
		for t := range st.x.Rows {
			st.dr[st.n][t] = tensor.Matrix{Rows: 1, Cols: dst.Cols, Data: dst.Row(t)}
		}
	}
	st.end[st.n] = prev + (out+stageUnit-1)/stageUnit
	st.size[st.n] = 4 * int64(out) * int64(in)
	if b, ok := l.(interface{ Bytes() int64 }); ok {
		st.size[st.n] = b.Bytes()
	}
	st.bytes += st.size[st.n]
	st.n++
	return st
}

// do runs the stage's products and returns when all are done.
func (st *stage) do() {
	if st.act8 {
		// A large verify block's rows are quantized in the chunks, on
		// every core the products run on (quantizeRows).
		st.quantize(st.split && !st.alone && st.x.Rows > 1 && st.x.Rows*st.x.Cols >= quantSplit)
	} else {
		clear(st.q8[:])
	}
	if !st.split {
		for i := range st.n {
			switch q := st.q8[i]; {
			case q != nil:
				st.lin[i].(*lut.Matrix).MulInt8(st.dst[i], q)
			case st.exact:
				for t := range st.x.Rows {
					st.lin[i].Mul(&st.dr[i][t], &st.xr[t])
				}
			default:
				st.lin[i].Mul(st.dst[i], st.x)
			}
		}
		return
	}
	units := st.end[st.n-1]
	if st.alone { // stepMode found the pool slower: no hand-offs
		st.chunk(0, units)
		tensor.ClearUpper()
		return
	}
	grain := int((int64(units)*stageBytes + st.bytes - 1) / max(st.bytes, 1))
	// Guided chunks: a chunk's rows are computed alike wherever it starts,
	// and the last chunks are short, so neither core waits long for the
	// other at the end of a stage (97 stages a token on the synth-1.4b).
	tensor.ParallelGuided(units, max(grain, 1), st.run)
	st.qtotal = 0 // the rows quantize left to the chunks are done
}

// chunk computes units [lo, hi) of the stacked output rows.
func (st *stage) chunk(lo, hi int) {
	if st.qtotal > 0 {
		st.quantizeRows()
	}
	start := 0
	for i := range st.n {
		if end := st.end[i]; lo < end && hi > start {
			a, b := max(lo, start)-start, min(hi, end)-start
			if st.x.Rows == 1 || st.together(i) {
				st.units(i, a, b)
			} else {
				// A verify block: pieces of ~rowsPiece bytes, all rows each.
				unit := max(1, st.size[i]/int64(st.rows[i])*stageUnit) // bytes of a unit
				p := int(max(1, rowsPiece/unit))
				for u := a; u < b; u += p {
					st.units(i, u, min(u+p, b))
				}
			}
		}
		start = st.end[i]
	}
}

// rowsExact is a Linear that can tell when a product of T rows gives each
// row the bits of a one-row product (tensor.Dense).
type rowsExact interface{ RowsExact(T int) bool }

// together reports whether product i may multiply a verify block's rows
// together: its kernels give each row a decode step's bits.
func (st *stage) together(i int) bool {
	e, ok := st.lin[i].(rowsExact)
	return ok && st.q8[i] == nil && e.RowsExact(st.x.Rows)
}

// units computes units [a, b) of product i for every row of x, each row
// as a decode step computes it (MulRowsInt8 runs its rows one by one).
func (st *stage) units(i, a, b int) {
	lo, hi := a*stageUnit, min(b*stageUnit, st.rows[i])
	if q := st.q8[i]; q != nil {
		st.lin[i].(*lut.Matrix).MulRowsInt8(st.dst[i], q, lo, hi)
		return
	}
	l := st.lin[i].(rowsLinear)
	if st.x.Rows == 1 || st.together(i) {
		l.MulRows(st.dst[i], st.x, lo, hi)
		return
	}
	for t := range st.x.Rows {
		l.MulRows(&st.dr[i][t], &st.xr[t], lo, hi)
	}
}

// stepMode chooses, decode step by decode step, whether the step hands
// work to the worker pool (its stages, a large delta rule, many attention
// heads) or runs alone on the calling goroutine, by timing both. On an
// idle machine the pool wins; when other processes keep the cores busy,
// a hand-off can cost a descheduled caller tens of microseconds and
// running alone wins (BENCHMARKS.md, issue 12). The results are the same
// bits either way (stages split where MulRows gives Mul's bits), so only
// the speed depends on the choice. Calls of T rows computed as decode
// steps (verify blocks, step batches) choose the same way, with a
// stepMode for each T (Model.chooser): on a host where forge-tiny's steps
// ran alone, its verify blocks of one row took 1.6× a step on the pool.
//
// Only models whose decode step reads less than modeBytes of weights
// choose: a larger step splits into chunks of milliseconds, whose
// hand-offs cost little even on a busy machine, and running alone would
// lose the second core's memory bandwidth (the first steps' turns alone
// would cost a large model seconds).
//
// Steps run in the mode with the lower running mean step time, changing
// modes only when the other is modeGain faster, except that every
// modeProbe steps two run in the other mode, to keep its mean current as
// the load changes; at first the modes take turns. A chooser that starts
// when another of its State has timed both modes (a verify block's first
// T after the State's decode steps, seed) starts from that one's pick
// instead: it runs in that mode and times the other only at probes, one
// pair in modeProbe/4 steps, until both are timed modeWarm times. The
// turns cost a forge-tiny State's first calls of each T ~2× on a host
// where the pool loses (decode steps 92–97 µs alone, 165–202 µs on the
// pool), and a drafted reply tries several T for a few calls each
// (BENCHMARKS.md, issue 14). Only the second step of each turn is
// timed: the first after running alone wakes the pool's parked workers,
// which a steady run in that mode does not pay. Step times are noisy,
// with a tail on a busy machine that the mean must see (it is what costs
// throughput) but single outliers it must not follow (a step the
// operating system preempted, the cold first steps): each time counts at
// most modeClip times its mode's running median, which moves modeStep
// towards every time.
type stepMode struct {
	alone  bool       // the current step runs on the caller alone
	timed  bool       // the current step's time is recorded
	pick   bool       // the chosen mode: alone
	seeded bool       // pick came from another chooser (seed): no turns
	steps  int        // decode steps begun
	mean   [2]float64 // running mean step time (ns): [0] with the pool, [1] alone
	med    [2]float64 // running median step time (ns)
	runs   [2]int     // steps timed in each mode
}

const (
	modeBytes = 64 << 20 // weights read per step below which a model's steps choose
	modeWarm  = 3        // steps timed in each mode before choosing
	modeProbe = 64       // two steps in modeProbe run in the other mode
	modeGain  = 0.03     // the other mode must be this much faster to switch
	modeAvg   = 16       // each time moves its mode's mean 1/modeAvg of the way
	modeStep  = 0.03     // each time moves its mode's median by this fraction
	modeClip  = 3        // a time counts at most modeClip medians in the mean
)

// warm reports whether m has timed both modes modeWarm times.
func (m *stepMode) warm() bool { return m.runs[0] >= modeWarm && m.runs[1] >= modeWarm }

// seed starts m, which has not begun a step, from the pick of from, the
// warm chooser with the most timed steps (nil: none, m takes turns).
func (m *stepMode) seed(from ...*stepMode) {
	var best *stepMode
	for _, o := range from {
		if o.warm() && (best == nil || o.runs[0]+o.runs[1] > best.runs[0]+best.runs[1]) {
			best = o
		}
	}
	if best != nil {
		m.pick, m.seeded = best.pick, true
	}
}

// begin picks the mode of the next decode step.
func (m *stepMode) begin() {
	k := m.steps
	m.steps++
	switch {
	case m.warm():
		if a, p := m.mean[1], m.mean[0]; m.pick && p < (1-modeGain)*a || !m.pick && a < (1-modeGain)*p {
			m.pick = !m.pick
		}
	case !m.seeded:
		m.alone, m.timed = k/2%2 == 1, k%2 == 1
		m.pick = m.mean[1] < m.mean[0]
		return
	}
	m.alone, m.timed = m.pick, true
	every := modeProbe
	if !m.warm() { // seeded: time the other mode sooner
		every = modeProbe / 4
	}
	if p := k % every; p >= every-2 {
		m.alone, m.timed = !m.pick, p == every-1
	}
}

// end records the time of the step begun at t0.
func (m *stepMode) end(t0 time.Time) {
	if !m.timed {
		return
	}
	i, ns := 0, float64(time.Since(t0))
	if m.alone {
		i = 1
	}
	switch {
	case m.runs[i] == 0:
		m.mean[i], m.med[i] = ns, ns
	case m.runs[i] < modeWarm: // the first steps (cold caches): start at their least
		m.med[i] = min(m.med[i], ns)
		m.mean[i] = m.med[i]
	default:
		m.mean[i] += (min(ns, modeClip*m.med[i]) - m.mean[i]) / modeAvg
		if ns > m.med[i] {
			m.med[i] *= 1 + modeStep
		} else {
			m.med[i] *= 1 - modeStep
		}
	}
	m.runs[i]++
}
