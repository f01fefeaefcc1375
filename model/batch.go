package model

import (
	"errors"
	"fmt"
	"time"

	"forge/tensor"
)

// Batch is the scratch of StepBatch: the activations of one forward whose
// rows are decode steps of different States (server slots decoding at
// the same time). It belongs to one Model and one goroutine at a time.
type Batch struct {
	s   *State // carries the forward's scratch and settings; its own layers are unused
	pos []int  // each row's position
}

// NewBatch returns a Batch for StepBatch calls on m.
func (m *Model) NewBatch() *Batch { return &Batch{s: m.NewState()} }

// StepBatch runs one decode step of each of states — tokens[i] at
// states[i].Pos() — in one forward and returns their logits [n, vocab]
// (owned by b, valid until its next call). Every row is computed as that
// State's own decode step computes it, bit for bit (the verify block's
// row-by-row products, each row's mixers on its own State), so batching
// never changes a reply; what the rows share is the weights (read once
// for all rows where the kernels allow: lut's multi-row int8 kernel,
// tensor.Dense.RowsExact) and the hand-offs to the worker pool. The
// States must be distinct, of m, settled (no pending verify rows, no
// cancelled forward) and alike in KV format and activation precision;
// each advances by one position. It panics on a State of another model
// or a pending one (programmer errors) and refuses tokens outside the
// vocabulary and a State whose context is full.
func (m *Model) StepBatch(b *Batch, states []*State, tokens []int) (*tensor.Matrix, error) {
	n := len(states)
	switch {
	case n == 0 || n != len(tokens):
		return nil, fmt.Errorf("step batch: %d states, %d tokens", n, len(tokens))
	case n > maxVerify:
		return nil, fmt.Errorf("step batch: %d states, at most %d", n, maxVerify)
	}
	if err := m.CheckIDs(tokens); err != nil {
		return nil, fmt.Errorf("step batch: %w", err)
	}
	c := &m.cfg
	b.pos = b.pos[:0]
	for i, s := range states {
		if s.cfg != c {
			panic("model: StepBatch with a State of another Model")
		}
		if s.broken {
			panic("model: StepBatch with a State used after a cancelled call")
		}
		s.settled("StepBatch")
		if s.kv != states[0].kv || s.act != states[0].act {
			return nil, errors.New("step batch: the states differ in KV format or activation precision")
		}
		for _, o := range states[:i] {
			if o == s {
				return nil, errors.New("step batch: a state appears twice")
			}
		}
		if c.MaxContext > 0 && s.pos+1 > c.MaxContext {
			return nil, fmt.Errorf("step batch: a state at position %d: %w of %d tokens", s.pos, ErrContext, c.MaxContext)
		}
		b.pos = append(b.pos, s.pos)
	}
	bs := b.s
	bs.rows, bs.kv, bs.act = states, states[0].kv, states[0].act
	defer func() { bs.rows = nil }()
	m.beginRows(bs, b.pos)
	sc := &bs.sc
	if md := m.chooser(bs, n); md != nil {
		md.begin()
		sc.alone = md.alone
		defer md.end(time.Now())
	}
	sc.logits.Resize(n, c.Vocab)
	m.Embed(&sc.x, tokens)
	for li := range m.layers {
		m.layerForward(bs, li)
	}
	bs.doRows(opNorm, m.norm, c.Eps, n)
	bs.products(&sc.u).add(m.head, &sc.logits).do()
	for _, s := range states {
		s.pos++
	}
	return &sc.logits, nil
}

// beginRows readies s's scratch for a batch of rows at positions pos.
func (m *Model) beginRows(s *State, pos []int) {
	c, sc := &m.cfg, &s.sc
	T, last := len(pos), 0
	for _, p := range pos {
		last = max(last, p)
	}
	if len(sc.w) != c.ValueTotal() {
		sc.w = make([]float32, c.ValueTotal())
	}
	if need := c.Heads * (last + 32); len(sc.scores) < need {
		sc.scores = make([]float32, 2*need)
	}
	sc.alone = false
	sc.x.Resize(T, c.Hidden)
	sc.u.Resize(T, c.Hidden)
	sc.y.Resize(T, c.Hidden)
	half := len(m.rope.invFreq)
	sc.cos, sc.sin = resize(sc.cos, T*half), resize(sc.sin, T*half)
	for t, p := range pos { // row t's tables are those of a decode step at p (rope.fill)
		m.rope.fillRow(sc, t, p)
	}
}

// attendRows is the attention of a batch: each row appends its key and
// value to its own State's cache and attends as that State's decode step.
func (a *attention) attendRows(c *Config, s *State, li int) {
	sc := &s.sc
	w := c.KVHeads * c.HeadDim
	for t, r := range s.rows {
		ls := &r.layers[li]
		k, v := sc.kp.Row(t), sc.vp.Row(t)
		if r.kv == KVInt8 {
			ls.q.append(k, v, c.KVHeads, c.HeadDim)
		} else {
			ls.k = append(ls.k, k[:w]...)
			ls.v = append(ls.v, v[:w]...)
		}
		a.attendStep(c, r.pos, t, ls, sc)
	}
}

// convBatch is the conv of a batch: each row against its own State's
// window, which then moves on by the row.
func (d *deltaNet) convBatch(c *Config, s *State, li int) {
	sc := &s.sc
	cd := c.ConvDim()
	for t, r := range s.rows {
		ls := &r.layers[li]
		x := tensor.Matrix{Rows: 1, Cols: cd, Data: sc.x0.Row(t)}
		y := tensor.Matrix{Rows: 1, Cols: cd, Data: sc.xc.Row(t)}
		d.convRows(&y, &x, ls.conv, c.ConvKernel, 0, 1)
		shiftConv(ls.conv, &x, c.ConvKernel)
	}
}

// ruleBatch is the delta rule of a batch: each row's recurrent step on
// its own State, heads split over the pool as a decode step splits them.
func (d *deltaNet) ruleBatch(c *Config, s *State, li int) {
	for t, r := range s.rows {
		s.sc.step.all(d, c, &s.sc, &r.layers[li], 0, t)
	}
}
