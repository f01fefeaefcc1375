package model

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkDeltaStep runs the decode-time delta rule over many value heads
// of the synth-1.4b's shape (dk = dv = 128) whose states together (64 MiB)
// are larger than the last-level cache, as a decode step meets them after
// streaming the weights: ns per head, and the state bytes read and written
// per second.
func BenchmarkDeltaStep(b *testing.B) {
	const dk, dv, heads = 128, 128, 1024
	r := rand.New(rand.NewPCG(1, 2))
	S := make([]float32, heads*dk*dv)
	for i := range S {
		S[i] = float32(r.NormFloat64()) * 0.01
	}
	q, k, v := make([]float32, dk), make([]float32, dk), make([]float32, dv)
	for i := range k {
		q[i], k[i] = float32(r.NormFloat64())/11, float32(r.NormFloat64())/11
	}
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	o, w := make([]float32, dv), make([]float32, dv)
	h := 0
	for b.Loop() {
		deltaStep(S[h*dk*dv:(h+1)*dk*dv], q, k, v, -0.01, 0.5, o, w)
		h = (h + 1) % heads
	}
	b.ReportMetric(float64(2*dk*dv*4)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
}

// BenchmarkDeltaRows: a verify block's eight rows on a head of the
// synth-1.4b's shape (128×128), as Verify meets them: the first from the
// committed state (evicted from the caches: 1,024 heads, 64 MiB) into the
// working one, the others in place, row by row ("steps", deltaStepFrom,
// 2T passes over the state) and through deltaRows ("rows", T + 1 passes
// where its assembly runs); ns per head.
func BenchmarkDeltaRows(b *testing.B) {
	const dk, dv, heads, T = 128, 128, 1024, 8
	r := rand.New(rand.NewPCG(1, 2))
	rec, wrec := make([]float32, heads*dk*dv), make([]float32, heads*dk*dv)
	for i := range rec {
		rec[i] = float32(r.NormFloat64()) * 0.01
	}
	rows := make([]deltaRow, T)
	for t := range rows {
		q, k, v := make([]float32, dk), make([]float32, dk), make([]float32, dv)
		for i := range k {
			q[i], k[i] = float32(r.NormFloat64())/11, float32(r.NormFloat64())/11
		}
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		rows[t] = deltaRow{q: q, k: k, v: v, o: make([]float32, dv), g: -0.01, beta: 0.5}
	}
	w, u := make([]float32, dv), make([]float32, dv)
	for _, mode := range []string{"steps", "rows"} {
		b.Run(mode, func(b *testing.B) {
			h := 0
			for b.Loop() {
				S, src := wrec[h*dk*dv:(h+1)*dk*dv], rec[h*dk*dv:(h+1)*dk*dv]
				if mode == "rows" {
					deltaRows(S, src, rows, w, u)
				} else {
					for _, row := range rows {
						deltaStepFrom(S, src, row.q, row.k, row.v, row.g, row.beta, row.o, w)
						src = S
					}
				}
				h = (h + 1) % heads
			}
		})
	}
}
