package model

import "forge/tensor"

// rowOp is a row-wise step of the forward that prefill spreads over the
// worker pool: norms of the residual stream and the SwiGLU activation.
type rowOp int

const (
	opNorm   rowOp = iota // sc.u[t] = RMSNorm(sc.x[t]) · scale
	opSwiGLU              // sc.g[t] = silu(sc.g[t]) ⊙ sc.up[t]
)

// rowJob carries one row-wise step to the pool. run is the method value
// j.rows, built once per State so that dispatching allocates nothing.
type rowJob struct {
	op    rowOp
	sc    *scratch
	scale []float32
	eps   float64
	run   func(lo, hi int)
}

func (j *rowJob) rows(lo, hi int) {
	sc := j.sc
	for t := lo; t < hi; t++ {
		switch j.op {
		case opNorm:
			rmsNorm(sc.u.Row(t), sc.x.Row(t), j.scale, j.eps)
		case opSwiGLU:
			swiglu(sc.g.Row(t), sc.up.Row(t))
		}
	}
}

// doRows runs op over the T rows of the call, in parallel when there are
// enough of them to pay for waking the workers.
func (s *State) doRows(op rowOp, scale []float32, eps float64, T int) {
	j := &s.sc.job
	if j.run == nil {
		j.run = j.rows
	}
	j.op, j.sc, j.scale, j.eps = op, &s.sc, scale, eps
	if s.sc.alone {
		j.rows(0, T)
		return
	}
	tensor.ParallelGrain(T, 4, j.run)
}
