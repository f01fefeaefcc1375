package recon

import (
	"context"
	"errors"
	"fmt"
	"math"
)

// Sample is one calibration row: the layer's input (the quantized stream)
// and the output it should produce.
type Sample struct {
	T         int
	X, Target []float64 // [T][H]
}

// Options tune Fit; the zero value is the reference's defaults
// (reference-pipeline.md §2).
type Options struct {
	Steps   int     // Adam steps (0: 100)
	Batch   int     // rows per step, step k using batch k mod ⌈rows/Batch⌉ (0: 2)
	LRLUT   float64 // codebook learning rate (0: 1e-3)
	LRScale float64 // log-scale learning rate (0: 1e-3)
	LRRank  float64 // low-rank factor learning rate (0: 1e-4)
	// Context, if set, is checked before every step.
	Context context.Context
	// Progress, if set, is called after every step.
	Progress func(step, steps int)
}

func (o Options) steps() int { return pickInt(o.Steps, 100) }
func (o Options) batch() int { return pickInt(o.Batch, 2) }
func (o Options) lrs() [3]float64 {
	return [3]float64{pickF(o.LRLUT, 1e-3), pickF(o.LRScale, 1e-3), pickF(o.LRRank, 1e-4)}
}

func pickInt(v, d int) int {
	if v == 0 {
		return d
	}
	return v
}

func pickF(v, d float64) float64 {
	if v == 0 {
		return d
	}
	return v
}

// Check reports settings that cannot be used: negative steps or batch, a
// learning rate ≤ 0 (0 is the default) or not finite.
func (o Options) Check() error {
	if o.Steps < 0 {
		return fmt.Errorf("recon: %d steps", o.Steps)
	}
	if o.Batch < 0 {
		return fmt.Errorf("recon: batch of %d rows", o.Batch)
	}
	for i, lr := range []float64{o.LRLUT, o.LRScale, o.LRRank} {
		if lr < 0 || math.IsNaN(lr) || math.IsInf(lr, 0) {
			return fmt.Errorf("recon: %s learning rate %v must be > 0", [3]string{"codebook", "scale", "low-rank"}[i], lr)
		}
	}
	return nil
}

// Report is what Fit did to one layer. Losses are the per-channel
// normalized MSE mean(((y − target)/σ_c)²) (σ_c the standard deviation of
// channel c of the training targets, at least 1e-3).
type Report struct {
	HeldBefore, HeldAfter float64 // held-out loss with the starting and the trained fp16 values
	TrainFirst, TrainLast float64 // training loss of the first and last step's batch
	Steps                 int     // steps run
	Kept                  bool    // the trained values are kept (HeldAfter < HeldBefore)
	Reverted              string  // why the layer kept its starting values besides the keep rule ("" if none)
}

// ErrLoss is wrapped by Fit's error when the held-out loss of the starting
// values is not finite.
var ErrLoss = errors.New("loss is not finite")

// Fit trains the Matrices ms of layer l (their codebooks, log-scales and
// factors; every other weight fixed) by Adam (β = 0.9, 0.999, ε = 1e-8,
// one learning rate per parameter group) on the normalized MSE between
// l(train[i].X) and train[i].Target, then applies the held-out keep rule
// of reference-pipeline.md §2: the trained values, rounded to fp16, are
// kept only if the held-out loss drops; otherwise, and whenever a step's
// loss or a parameter is not finite (Report.Reverted says so), every
// Matrix gets its starting values back. It is deterministic: the batches
// are taken in order and every sum runs in a fixed order.
func Fit(l *Layer, ms []*Matrix, train, held []Sample, opt Options) (Report, error) {
	var rep Report
	if err := opt.Check(); err != nil {
		return rep, err
	}
	if len(train) == 0 || len(held) == 0 {
		return rep, fmt.Errorf("recon: %d training and %d held-out rows (both needed)", len(train), len(held))
	}
	ctx := opt.Context
	if ctx == nil {
		ctx = context.Background()
	}
	inv := channelScale(train, l.H)
	start := make([][][]float64, len(ms))
	for i, m := range ms {
		start[i] = m.snapshot()
	}
	revert := func() {
		for i, m := range ms {
			m.restore(start[i])
		}
	}
	rep.HeldBefore = loss(l, held, inv)
	if math.IsNaN(rep.HeldBefore) || math.IsInf(rep.HeldBefore, 0) {
		return rep, fmt.Errorf("recon: held-out loss of the starting values is %v: %w", rep.HeldBefore, ErrLoss)
	}
	ad := newAdam(ms, opt.lrs())
	B := opt.batch()
	nb := (len(train) + B - 1) / B
	steps := opt.steps()
	for k := range steps {
		if err := ctx.Err(); err != nil {
			revert()
			return rep, err
		}
		batch := train[(k%nb)*B : min((k%nb+1)*B, len(train))]
		for _, m := range ms {
			m.ZeroGrads()
		}
		lv := step(l, batch, inv)
		for _, m := range ms {
			m.Grads()
		}
		if k == 0 {
			rep.TrainFirst = lv
		}
		rep.TrainLast, rep.Steps = lv, k+1
		if math.IsNaN(lv) || math.IsInf(lv, 0) || !ad.finiteGrads() {
			revert()
			rep.Reverted = fmt.Sprintf("the loss or a gradient is not finite at step %d: the layer keeps its starting values", k+1)
			return rep, nil
		}
		ad.update()
		for _, m := range ms {
			m.Refresh()
		}
		if opt.Progress != nil {
			opt.Progress(k+1, steps)
		}
	}
	for _, m := range ms {
		if err := m.Round(); err != nil {
			revert()
			rep.Reverted = fmt.Sprintf("a trained value does not fit fp16 (%v): the layer keeps its starting values", err)
			return rep, nil
		}
	}
	rep.HeldAfter = loss(l, held, inv)
	if rep.HeldAfter < rep.HeldBefore {
		rep.Kept = true
		return rep, nil
	}
	revert()
	if math.IsNaN(rep.HeldAfter) {
		rep.Reverted = "the held-out loss of the trained values is NaN: the layer keeps its starting values"
	}
	return rep, nil
}

// channelScale returns 1/σ_c over the training targets, σ_c ≥ 1e-3.
func channelScale(rows []Sample, H int) []float64 {
	sum, sq := make([]float64, H), make([]float64, H)
	var n float64
	for _, r := range rows {
		for t := range r.T {
			for c, v := range r.Target[t*H : (t+1)*H] {
				sum[c] += v
				sq[c] += v * v
			}
		}
		n += float64(r.T)
	}
	inv := make([]float64, H)
	for c := range inv {
		m := sum[c] / n
		v := sq[c]/n - m*m
		inv[c] = 1 / math.Max(math.Sqrt(math.Max(v, 0)), 1e-3)
	}
	return inv
}

// loss is the normalized MSE of l over rows, without gradients.
func loss(l *Layer, rows []Sample, inv []float64) float64 {
	var s, n float64
	H := l.H
	for _, r := range rows {
		y, _ := l.Forward(r.X, r.T)
		for i, v := range y {
			d := (v - r.Target[i]) * inv[i%H]
			s += d * d
		}
		n += float64(len(y))
	}
	return s / n
}

// step runs forward and backward over a batch and returns its loss; the
// gradients of mean(((y − target)·inv)²) accumulate in the Linears.
func step(l *Layer, rows []Sample, inv []float64) float64 {
	var n float64
	for _, r := range rows {
		n += float64(r.T * l.H)
	}
	var s float64
	H := l.H
	for _, r := range rows {
		y, tp := l.Forward(r.X, r.T)
		dy := make([]float64, len(y))
		for i, v := range y {
			c := inv[i%H]
			d := (v - r.Target[i]) * c
			s += d * d
			dy[i] = 2 * d * c / n
		}
		l.Backward(tp, dy)
	}
	return s / n
}

// adam is Adam (Kingma & Ba 2015) with bias correction over the
// Matrices' parameter groups.
type adam struct {
	lr   [3]float64
	p, g [3][][]float64
	m, v [3][][]float64
	t    int
}

func newAdam(ms []*Matrix, lr [3]float64) *adam {
	a := &adam{lr: lr}
	for _, x := range ms {
		p, g := x.params()
		for k := range 3 {
			for i, arr := range p[k] {
				a.p[k] = append(a.p[k], arr)
				a.g[k] = append(a.g[k], g[k][i])
				a.m[k] = append(a.m[k], make([]float64, len(arr)))
				a.v[k] = append(a.v[k], make([]float64, len(arr)))
			}
		}
	}
	return a
}

func (a *adam) finiteGrads() bool {
	for k := range 3 {
		for _, g := range a.g[k] {
			for _, v := range g {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					return false
				}
			}
		}
	}
	return true
}

// update takes one step: m ← β₁m + (1−β₁)g, v ← β₂v + (1−β₂)g²,
// θ ← θ − lr·m̂/(√v̂ + ε), m̂ = m/(1−β₁ᵗ), v̂ = v/(1−β₂ᵗ).
func (a *adam) update() {
	const b1, b2, eps = 0.9, 0.999, 1e-8
	a.t++
	c1, c2 := 1-math.Pow(b1, float64(a.t)), 1-math.Pow(b2, float64(a.t))
	for k := range 3 {
		for i, p := range a.p[k] {
			g, m, v := a.g[k][i], a.m[k][i], a.v[k][i]
			for j := range p {
				m[j] = b1*m[j] + (1-b1)*g[j]
				v[j] = b2*v[j] + (1-b2)*g[j]*g[j]
				p[j] -= a.lr[k] * (m[j] / c1) / (math.Sqrt(v[j]/c2) + eps)
			}
		}
	}
}
