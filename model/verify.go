package model

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"forge/tensor"
)

// A verify block (speculative decoding, docs/architecture.md): the target
// model runs an anchor token and k drafted tokens as T = k+1 decode steps
// in one forward, and keeps only the rows the sampler accepts.
//
// Every row is computed exactly as a decode step at its position computes
// it — the same kernels on the same values in the same order — so the
// block's logits are the single steps' logits bit for bit, and a
// committed prefix leaves the State as those steps would (tests:
// verify_test.go). What the block shares is the weights: a stage of
// products reads each weight once for all T rows (it walks the output rows
// in pieces small enough to stay in cache while every row of x meets
// them), and the rows share one pass of hand-offs to the worker pool.
//
// Rejected rows never reach the State. The KV caches take all T rows
// (row t attends to the rows before it) and Commit truncates them; each
// DeltaNet layer runs its rows on a working copy of its conv window and
// a working recurrent state, which the block's first row writes as it
// steps from the committed state (no copy: the step that reads and
// writes the state anyway reads one and writes the other), and keeps the
// rows' inputs.
// Commit(n) then either takes the working copies as they are (n = every
// pending row: no work at all) or replays the n accepted rows' recurrent
// steps onto the committed state (n steps of the rule, no products, no
// attention). Copying the whole state per row, the alternative the
// reference's per-row snapshots take, would cost T reads and writes of it.

// Verify runs tokens through s as len(tokens) decode steps would, at
// positions s.Pos()+Pending()…, and returns their logits [T, vocab]
// (owned by s, valid until its next call). The rows stay pending: s.Pos()
// does not move until Commit, and further Verify calls stack more
// pending rows after them (a drafter proposing one token at a time). A
// pending State can only Verify, Commit, Reset or Rewind; anything else
// panics. Tokens outside the vocabulary or beyond the context are an
// error before anything runs.
func (m *Model) Verify(s *State, tokens []int) (*tensor.Matrix, error) {
	if err := m.checkRun(s.pos+s.pend, tokens); err != nil {
		return nil, err
	}
	if len(tokens) == 0 {
		return nil, errors.New("verify: no tokens")
	}
	if s.pend == 0 {
		for i := range s.layers {
			if ls := &s.layers[i]; ls.rec != nil {
				ls.wconv = append(ls.wconv[:0], ls.conv...)
				if cap(ls.wrec) < len(ls.rec) {
					ls.wrec = make([]float32, len(ls.rec))
				}
				ls.wrec, ls.wfresh = ls.wrec[:len(ls.rec)], true // written by the first row's step (ruleRows)
			}
		}
	}
	s.verify = true
	defer func() { s.verify = false }()
	return m.forward(context.Background(), s, tokens, false)
}

// Pending returns the rows Verify has run that are not yet committed.
func (s *State) Pending() int { return s.pend }

// Commit keeps the first n pending rows of the Verify calls since the
// last Commit and drops the others: afterwards s is exactly the State
// that n decode steps of those tokens would have left, at s.Pos()+n. It
// panics unless 0 ≤ n ≤ Pending().
func (s *State) Commit(n int) {
	if n < 0 || n > s.pend {
		panic(fmt.Sprintf("model: Commit(%d) of %d pending rows", n, s.pend))
	}
	if n > 0 {
		for i := range s.layers {
			ls := &s.layers[i]
			if ls.rec == nil {
				continue
			}
			if n == s.pend {
				ls.conv, ls.wconv = ls.wconv, ls.conv
				ls.rec, ls.wrec = ls.wrec, ls.rec
				continue
			}
			s.replay(ls, n)
		}
	}
	s.pos += n
	s.drop()
}

// replay runs the first n pending rows' recurrent steps on ls's committed
// state and moves its conv window on by their raw rows. Each value head
// runs the rows in turn through deltaRows (in place: n + 1 passes over the
// head's state where dv is a multiple of 128, each row a decode step bit
// for bit), the heads on the pool when the state is large (as a decode
// step's, stepJob.all): row after row over every head, a synth-1.4b
// layer's 1 MB state came from memory for each row (Commit of 1, 4 and 7
// of 8 rows: 1.5–1.7, 3.0–3.7 and 4.2–5.1 ms; this way 1.0–1.2, 1.6–1.7
// and 2.1–2.4; BENCHMARKS.md issue 14).
func (s *State) replay(ls *layerState, n int) {
	c := s.cfg
	hv, dv := c.ValueHeads, c.ValueDim
	if len(s.sc.rw) < 3*hv*dv {
		s.sc.rw = make([]float32, 3*hv*dv)
	}
	j := &s.sc.replay
	if j.run == nil {
		j.run = j.heads
	}
	j.s, j.ls, j.n = s, ls, n
	if headsOnPool(ls, &s.sc) {
		tensor.ParallelGrain(hv, 2, j.run)
	} else {
		j.heads(0, hv)
	}
	j.s, j.ls = nil, nil
	raw := tensor.Matrix{Rows: n, Cols: c.ConvDim(), Data: ls.px0[:n*c.ConvDim()]} // not FromSlice: Commit allocates nothing
	shiftConv(ls.conv, &raw, c.ConvKernel)
}

// replayJob carries replay's value heads to the pool; run is the method
// value j.heads, built once per State so that Commit allocates nothing.
type replayJob struct {
	s   *State
	ls  *layerState
	n   int
	run func(lo, hi int)
}

// heads replays value heads [lo, hi): the pending rows' q, k, v from the
// conv'd rows, their gates, the outputs (not kept) into the head's scratch,
// at most maxVerify rows a deltaRows call.
func (j *replayJob) heads(lo, hi int) {
	c, ls := j.s.cfg, j.ls
	cd, hv, dk, dv := c.ConvDim(), c.ValueHeads, c.KeyDim, c.ValueDim
	rw := j.s.sc.rw
	var rows [maxVerify]deltaRow
	for h := lo; h < hi; h++ {
		o, w, u := rw[h*dv:(h+1)*dv], rw[(hv+h)*dv:(hv+h+1)*dv], rw[(2*hv+h)*dv:(2*hv+h+1)*dv]
		S := ls.rec[h*dk*dv : (h+1)*dk*dv]
		for t0 := 0; t0 < j.n; t0 += maxVerify {
			m := min(maxVerify, j.n-t0)
			for i := range m {
				t := t0 + i
				q, k, v := headQKV(c, ls.pxc[t*cd:(t+1)*cd], h)
				rows[i] = deltaRow{q: q, k: k, v: v, o: o, g: ls.pg[t*hv+h], beta: ls.pb[t*hv+h]}
			}
			deltaRows(S, S, rows[:m], w, u)
		}
	}
}

// shiftConv moves a conv window hist ([K−1][convDim], oldest first) on by
// the raw rows X: it becomes the last K−1 rows of [hist ‖ X].
func shiftConv(hist []float32, X *tensor.Matrix, K int) {
	T, cd := X.Rows, X.Cols
	if T >= K-1 {
		copy(hist, X.Data[(T-(K-1))*cd:T*cd])
		return
	}
	copy(hist, hist[T*cd:])
	copy(hist[(K-1-T)*cd:], X.Data[:T*cd])
}

// drop forgets the pending rows: the KV caches go back to s.pos rows and
// the DeltaNet layers' pending inputs are cleared (the committed state was
// never touched).
func (s *State) drop() {
	if s.pend == 0 {
		return
	}
	kv := s.cfg.KVHeads * s.cfg.HeadDim
	for i := range s.layers {
		ls := &s.layers[i]
		switch {
		case ls.rec != nil:
			ls.px0, ls.pxc, ls.pg, ls.pb = ls.px0[:0], ls.pxc[:0], ls.pg[:0], ls.pb[:0]
		case s.kv == KVInt8:
			ls.q.truncate(s.pos, s.cfg.KVHeads, s.cfg.HeadDim)
		default:
			ls.k, ls.v = ls.k[:s.pos*kv], ls.v[:s.pos*kv]
		}
	}
	s.pend = 0
}

// pendingRows extends *p by n floats and returns them: where a verify
// block's rows are written in place (deltaNet.forward). It allocates only
// when *p grows.
func pendingRows(p *[]float32, n int) []float32 {
	m := len(*p)
	*p = slices.Grow(*p, n)[:m+n]
	return (*p)[m:]
}

// settled panics when s has pending rows: what would be saved or run on
// is not a State any decode steps reached.
func (s *State) settled(op string) {
	if s.pend > 0 {
		panic(fmt.Sprintf("model: %s of a State with %d pending verify rows (Commit first)", op, s.pend))
	}
}

// keepPending records a verify block's DeltaNet gates for Commit (its
// raw and conv'd rows are already there: deltaNet.forward writes them in
// place, pendingRows).
func (s *State) keepPending(ls *layerState) {
	sc := &s.sc
	ls.pg = append(ls.pg, sc.ga.Data...)
	ls.pb = append(ls.pb, sc.gb.Data...)
}

// ruleRows is the delta rule of a verify block: every row's recurrent
// step in turn on the working state, heads split over the pool as a
// decode step splits them. In the block's first call the first row steps
// from the committed state into the working one (stepJob.heads,
// deltaStepFrom), so the working state is never copied. The copy of each
// head before its rows cost ~5 ms of CPU a block of eight rows of the
// synth-1.4b; most of that moved into the first row, which now fetches
// the committed state itself (~1 ms of CPU a block saved, and 19 MB of
// writes; BENCHMARKS.md).
func (d *deltaNet) ruleRows(c *Config, s *State, ls *layerState) {
	s.sc.step.all(d, c, &s.sc, ls, s.sc.xc.Rows, 0)
	ls.wfresh = false
}
