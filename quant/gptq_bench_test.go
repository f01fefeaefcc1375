package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"forge/tensor"
)

// factorRows returns rows×in inputs with correlated columns, cheap to
// make at large widths: x[t][j] = e^{g_j}·z[t][j] + Σ_k a[j][k]·f[t][k]
// with k < 32 shared factors (z, f, a, g standard normal, seeded).
func factorRows(rows, in int, seed uint64) *tensor.Matrix {
	const k = 32
	r := rand.New(rand.NewPCG(seed, 0xfac))
	a, g := make([]float64, in*k), make([]float64, in)
	for i := range a {
		a[i] = r.NormFloat64() / math.Sqrt(k)
	}
	for j := range g {
		g[j] = math.Exp(0.5 * r.NormFloat64())
	}
	x := tensor.New(rows, in)
	f := make([]float64, k)
	for t := range rows {
		for i := range f {
			f[i] = r.NormFloat64()
		}
		for j := range in {
			s := g[j] * r.NormFloat64()
			for i, v := range f {
				s += a[j*k+i] * v
			}
			x.Data[t*in+j] = float32(s)
		}
	}
	return x
}

// BenchmarkHessianAdd times Hessian.Add of 1024 rows (8 chunks) at the
// 27B's hidden width (5120) and a smaller one, on the build's backend.
// GFLOP/s counts the symmetric work only: 2·rows·in²/2 = rows·in² flops
// per op (what dsyrk does; the pure-Go backend's GEMM also computes the
// upper halves of its diagonal panels, ≈ 5% more).
func BenchmarkHessianAdd(b *testing.B) {
	const rows = 1024
	for _, in := range []int{5120, 2048} {
		b.Run(fmt.Sprintf("%s/in=%d", la.name(), in), func(b *testing.B) {
			x := factorRows(rows, in, 1)
			var h Hessian
			h.Add(x) // allocate the matrix outside the timing
			b.ResetTimer()
			for b.Loop() {
				h.Add(x)
				h.flush()
			}
			b.ReportMetric(float64(rows)*float64(in)*float64(in)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkGPTQ times GPTQ on one 17408×5120 matrix (the 27B's MLP
// gate/up shape) with H from 2048 correlated rows, per format, on the
// build's backend. It reports seconds per matrix and how long the
// factorization alone takes (factor-s).
func BenchmarkGPTQ(b *testing.B) {
	const out, in = 17408, 5120
	w := gaussian(out, in, true, 1)
	h := hessianOf(factorRows(2048, in, 2))
	t0 := time.Now()
	if _, _, err := gptqFactor(h, 0.01); err != nil {
		b.Fatal(err)
	}
	factor := time.Since(t0).Seconds()
	for _, name := range []string{"LUT4 per-tensor + pcs", "vector 2x16 + pcs"} {
		q := GPTQ{Format: mustFormat(b, name), Options: Options{Seed: 1}}
		b.Run(fmt.Sprintf("%s/%s", la.name(), q.Format), func(b *testing.B) {
			for b.Loop() {
				if _, err := q.Quantize(w, h); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s")
			b.ReportMetric(factor, "factor-s")
		})
	}
}
