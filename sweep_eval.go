package forge

import (
	"context"
	"fmt"
	"math"
	"slices"

	"forge/eval"
	"forge/internal/budget"
	"forge/model"
	"forge/plan"
	"forge/tensor"
)

// cacheInputs runs the reference over the sweep's trace rows once, layer
// by layer, keeping every layer's input (and the head's): cache[r][ℓ] is
// row r's residual stream entering layer ℓ, [T, H].
func (w *sweepRun) cacheInputs(ctx context.Context, m *model.Model) error {
	c := m.Config()
	L := len(c.Layers)
	rows := w.s.Trace.Rows
	var need int64
	for _, n := range w.tr.RowPositions()[:rows] {
		need += 4 * int64(n+1) * int64(c.Hidden) * int64(L+1)
	}
	if err := budget.Memory(fmt.Sprintf("the layer inputs of %d trace rows", rows), need); err != nil {
		return fmt.Errorf("sweep: %w (score fewer rows)", err)
	}
	w.cache = make([][]tensor.Matrix, rows)
	st := m.NewState()
	for r := range rows {
		toks, err := w.tr.Tokens(r)
		if err != nil {
			return err
		}
		if err := m.CheckTokens(toks); err != nil {
			return fmt.Errorf("sweep: trace %s row %d: %w", w.cfg.Trace, r, err)
		}
		w.cache[r] = make([]tensor.Matrix, L+1)
		m.Embed(&w.cache[r][0], toks)
		for li := range L {
			if err := ctx.Err(); err != nil {
				return err
			}
			x := &w.cache[r][li+1]
			x.Resize(len(toks), c.Hidden)
			copy(x.Data, w.cache[r][li].Data)
			st.Reset()
			m.ForwardLayer(st, li, x)
		}
	}
	return nil
}

// score scores m against the trace's sweep rows, running each row from
// its cached input of layer from on (Model.ForwardLayer, then
// Model.Head: bit for bit a whole forward).
func (w *sweepRun) score(ctx context.Context, m *model.Model, from int) (*eval.Result, error) {
	L := len(m.Config().Layers)
	st := m.NewState()
	var x tensor.Matrix
	return eval.Score(ctx, m, w.tr, eval.ScoreOptions{Rows: w.s.Trace.Rows,
		Logits: func(ctx context.Context, r int, tokens []int) (*tensor.Matrix, error) {
			in := &w.cache[r][from]
			x.Resize(in.Rows, in.Cols)
			copy(x.Data, in.Data)
			for li := from; li < L; li++ {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				st.Reset()
				m.ForwardLayer(st, li, &x)
			}
			st.Reset()
			return m.Head(st, &x), nil
		}})
}

// rowMeans is the mean of v over each row's positions.
func rowMeans(v []float64, rowPositions []int) []float64 {
	out := make([]float64, len(rowPositions))
	off := 0
	for r, n := range rowPositions {
		s := 0.0
		for _, x := range v[off : off+n] {
			s += x
		}
		out[r] = s / float64(max(n, 1))
		off += n
	}
	return out
}

// measurement summarizes a unit's scores against the base's: ΔKL = Σ_r
// n_r·(u_r − b_r) / N over rows r of n_r positions (u_r, b_r the row's
// mean KL with and without the unit quantized), its standard error as a
// ratio estimator over rows, se² = R/(R−1) · Σ_r (n_r/N)²·(d_r − ΔKL)²
// (positions of one row are not independent; rows are), the 99th
// percentile of the per-position KL (eval.Percentile, as forge eval
// reports it) and the top-1 agreement.
func measurement(res *eval.Result, base []float64) (dkl, se, p99, top1 float64) {
	u := rowMeans(res.KL, res.RowPositions)
	N := 0
	for _, n := range res.RowPositions {
		N += n
	}
	R := float64(len(u))
	for r, n := range res.RowPositions {
		dkl += float64(n) * (u[r] - base[r])
	}
	dkl /= float64(N)
	for r, n := range res.RowPositions {
		d := float64(n) / float64(N) * (u[r] - base[r] - dkl)
		se += d * d
	}
	se = math.Sqrt(se * R / (R - 1))
	kl := slices.Clone(res.KL)
	slices.Sort(kl)
	p99 = eval.Percentile(kl, 0.99)
	same := 0
	for _, s := range res.Same {
		if s {
			same++
		}
	}
	return dkl, se, p99, float64(same) / float64(len(res.Same))
}

// measure scores every unmeasured item of the shard, in work order,
// keeping each in OUT.partial as it finishes.
func (w *sweepRun) measure(ctx context.Context, m *model.Model) error {
	s := w.s
	C := len(s.Candidates)
	done := w.measured()
	for k := range s.Items() {
		if done[k] || !w.shard.Owns(k) {
			continue
		}
		u, c := &s.Units[k/C], s.Candidates[k%C]
		bytes, err := u.Bytes(c)
		if err != nil {
			return err
		}
		x := plan.Measurement{Unit: u.Key, Candidate: c, Bytes: bytes,
			P99: w.baseP99, Top1: s.Base.Top1}
		if quantized(c) {
			if x.DKL, x.SE, x.P99, x.Top1, err = w.measureOne(ctx, m, u, k%C); err != nil {
				return err
			}
		}
		s.Measurements = append(s.Measurements, x)
		if err := w.savePartial(); err != nil {
			return fmt.Errorf("sweep: %w", err)
		}
		w.log("%-8s %-32s %10d B  ΔKL %.6f ± %.6f  p99 %.4f  top-1 %.2f%%", u.Key, c, bytes, x.DKL, x.SE, x.P99, 100*x.Top1)
		w.step()
	}
	return nil
}

// measureOne puts unit u's matrices in candidate ci into m's slots,
// scores the model from u's first layer on, and restores the slots.
func (w *sweepRun) measureOne(ctx context.Context, m *model.Model, u *plan.Unit, ci int) (dkl, se, p99, top1 float64, err error) {
	old := make([]model.Linear, len(u.Names))
	for i, n := range u.Names {
		lm, _, ok, err := w.wds[ci].Load(n)
		if err != nil || !ok {
			return 0, 0, 0, 0, fmt.Errorf("sweep: %s in %s is not in %s (%v)", n, w.s.Candidates[ci], w.wds[ci].Dir(), err)
		}
		slot := m.Slot(n)
		old[i], *slot = *slot, lm
	}
	defer func() {
		for i, n := range u.Names {
			*m.Slot(n) = old[i]
		}
	}()
	res, err := w.score(ctx, m, u.Layer)
	if err != nil {
		return 0, 0, 0, 0, fmt.Errorf("sweep: unit %s in %s: %w", u.Key, w.s.Candidates[ci], err)
	}
	dkl, se, p99, top1 = measurement(res, w.base)
	return dkl, se, p99, top1, nil
}
