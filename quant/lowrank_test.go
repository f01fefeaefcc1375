package quant

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"

	"forge/lut"
	"forge/tensor"
)

// lrSpectrum returns E [m, n] = U·diag(σ)·Vᵀ in float32 with U, V random
// orthonormal (QR of Gaussian matrices) and σᵢ = sigma(i).
func lrSpectrum(m, n int, sigma func(i int) float64, seed uint64) *tensor.Matrix {
	g := rand.New(rand.NewPCG(seed, 0x15c))
	k := min(m, n)
	u, v := make([]float64, m*k), make([]float64, n*k)
	for _, a := range [][]float64{u, v} {
		for i := range a {
			a[i] = g.NormFloat64()
		}
	}
	lrOrthonormalize(u, m, k)
	lrOrthonormalize(v, n, k)
	e := tensor.New(m, n)
	for o := range m {
		for j := range n {
			var s float64
			for c := range k {
				s += u[o*k+c] * sigma(c) * v[j*k+c]
			}
			e.Data[o*n+j] = float32(s)
		}
	}
	return e
}

// lrHessian returns H = XᵀX/N [n][n] for N = 4n rows whose columns have
// very different scales (e^{1.5z}) and are correlated (X = G·C, C a random
// mixing with a strong diagonal): the non-trivial weighting of a real
// layer's inputs.
func lrHessian(n int, seed uint64) []float64 {
	g := rand.New(rand.NewPCG(seed, 0x4e55))
	c := make([]float64, n*n)
	for i := range n {
		for j := range n {
			c[i*n+j] = 0.3 * g.NormFloat64() / math.Sqrt(float64(n))
		}
		c[i*n+i] += 1
	}
	scale := make([]float64, n)
	for j := range scale {
		scale[j] = math.Exp(1.5 * g.NormFloat64())
	}
	rows := 4 * n
	x := make([]float64, n)
	h := make([]float64, n*n)
	gr := make([]float64, n)
	for range rows {
		for i := range gr {
			gr[i] = g.NormFloat64()
		}
		for j := range n {
			var s float64
			for i := range n {
				s += gr[i] * c[i*n+j]
			}
			x[j] = s * scale[j]
		}
		for i := range n {
			for j := range n {
				h[i*n+j] += x[i] * x[j] / float64(rows)
			}
		}
	}
	return h
}

// lrDecode widens a fit's factors: A [m][r], B [r][n] in float64.
func lrDecode(f LowRankFit) (a, b []float64) {
	a, b = make([]float64, len(f.A)), make([]float64, len(f.B))
	for i, h := range f.A {
		a[i] = float64(tensor.F16ToF32(h))
	}
	for i, h := range f.B {
		b[i] = float64(tensor.F16ToF32(h))
	}
	return a, b
}

// lrErr2 returns the squared error ‖(E − A·B)·L‖²_F computed directly as
// Σ_o d_oᵀ·(H + λI)·d_o with d = E − A·B (h nil: plain ‖E − A·B‖²_F), an
// independent twin of what LowRank optimizes and reports. A and B may be
// nil (no correction).
func lrErr2(e *tensor.Matrix, a, b []float64, r int, h []float64) float64 {
	m, n := e.Rows, e.Cols
	hd := lrDamped(h, n)
	var total float64
	d := make([]float64, n)
	for o := range m {
		for j := range n {
			d[j] = float64(e.Data[o*n+j])
			for c := range r {
				d[j] -= a[o*r+c] * b[c*n+j]
			}
		}
		if hd == nil {
			for _, v := range d {
				total += v * v
			}
			continue
		}
		for i := range n {
			var s float64
			for j := range n {
				s += hd[i*n+j] * d[j]
			}
			total += d[i] * s
		}
	}
	return total
}

// lrDamped returns H + λI, λ = 0.01·mean diag H, symmetrized from the
// lower triangle (nil for nil).
func lrDamped(h []float64, n int) []float64 {
	if h == nil {
		return nil
	}
	var mean float64
	for j := range n {
		mean += h[j*n+j] / float64(n)
	}
	hd := make([]float64, n*n)
	for i := range n {
		for j := range i + 1 {
			hd[i*n+j], hd[j*n+i] = h[i*n+j], h[i*n+j]
		}
		hd[i*n+i] += 0.01 * mean
	}
	return hd
}

// lrOptimal returns the optimal squared rank-r error Σ_{i≥r} σᵢ² of E·L
// (E when h is nil), from gonum's exact SVD and Cholesky.
func lrOptimal(e *tensor.Matrix, r int, h []float64) float64 {
	m, n := e.Rows, e.Cols
	ed := mat.NewDense(m, n, nil)
	for o := range m {
		for j := range n {
			ed.Set(o, j, float64(e.Data[o*n+j]))
		}
	}
	if h != nil {
		var ch mat.Cholesky
		if !ch.Factorize(mat.NewSymDense(n, lrDamped(h, n))) {
			panic("not positive definite")
		}
		var l mat.TriDense
		ch.LTo(&l)
		ed.Mul(ed, &l)
	}
	var svd mat.SVD
	if !svd.Factorize(ed, mat.SVDNone) {
		panic("svd")
	}
	var s float64
	for _, v := range svd.Values(nil)[r:] {
		s += v * v
	}
	return s
}

// TestLowRankOptimal checks the unweighted fit against the exact truncated
// SVD on matrices with a decaying spectrum σᵢ = 0.8ⁱ. The randomized SVD
// (p = 10, q = 2) misses the optimum by a factor that shrinks like
// (σ_{r+p}/σ_r)^{2q+1} = 0.8⁵⁰ ≈ 1.4e-5 (Halko et al. §10), so before
// rounding the error is within 1e-6 relative of the optimum (measured:
// ~1e-12). Rounding A and B to fp16 (relative 2⁻¹¹ per entry, B with
// orthonormal rows) moves A·B by at most 2⁻¹¹·(‖A‖_F + σ₁·√r).
func TestLowRankOptimal(t *testing.T) {
	for _, c := range []struct{ m, n, r int }{{120, 80, 8}, {80, 120, 8}, {64, 64, 1}, {40, 30, 30}} {
		t.Run(fmt.Sprintf("%dx%d_r%d", c.m, c.n, c.r), func(t *testing.T) {
			e := lrSpectrum(c.m, c.n, func(i int) float64 { return math.Pow(0.8, float64(i)) }, 3)
			opt := math.Sqrt(lrOptimal(e, c.r, nil))
			op, err := newLowRankOp(e, LowRankOptions{})
			if err != nil {
				t.Fatal(err)
			}
			a, b, sigma := op.fit(c.r, LowRankOptions{Seed: 1})
			exact := math.Sqrt(lrErr2(e, a, b, c.r, nil))
			if exact > opt*(1+1e-6)+1e-6 {
				t.Errorf("float64 fit error %.9g, optimal %.9g", exact, opt)
			}
			if math.Abs(sigma[0]-1) > 1e-5 {
				t.Errorf("σ₁ = %v, want 1 (E rounded to float32)", sigma[0])
			}
			fit, err := LowRank(e, c.r, LowRankOptions{Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			if fit.Rank != c.r || len(fit.A) != c.m*c.r || len(fit.B) != c.r*c.n {
				t.Fatalf("rank %d, len A %d, len B %d", fit.Rank, len(fit.A), len(fit.B))
			}
			fa, fb := lrDecode(fit)
			got := math.Sqrt(lrErr2(e, fa, fb, c.r, nil))
			var normA float64
			for _, v := range a {
				normA += v * v
			}
			bound := opt + 0x1p-11*(math.Sqrt(normA)+sigma[0]*math.Sqrt(float64(c.r)))
			t.Logf("optimal %.6g, float64 fit %.6g, fp16 fit %.6g (bound %.6g)", opt, exact, got, bound)
			if got > bound {
				t.Errorf("fp16 fit error %.6g > %.6g", got, bound)
			}
		})
	}
}

// TestLowRankNeverWorse checks on several shapes, seeds and scales that
// the rounded correction never increases the error it fits, plain or
// weighted, and that Removed is that decrease. The tiny-scale case puts A
// into the fp16 subnormal range, where rounding loses most of its
// precision and whole columns can round to zero (LowRank drops those).
// Removed is
// compared with the direct float64 computation to 1e-9 of ‖E‖² (both sum
// in float64; they differ by rounding only).
func TestLowRankNeverWorse(t *testing.T) {
	type tc struct {
		m, n, r  int
		scale    float64
		seed     uint64
		weighted bool
	}
	var cases []tc
	for _, s := range []uint64{1, 2, 3} {
		for _, w := range []bool{false, true} {
			cases = append(cases, tc{64, 48, 5, 1, s, w}, tc{33, 97, 1, 0.01, s, w}, tc{50, 50, 50, 1, s, w}, tc{40, 60, 8, 3e-9, s, w})
		}
	}
	for _, c := range cases {
		name := fmt.Sprintf("%dx%d_r%d_scale%g_seed%d_w%v", c.m, c.n, c.r, c.scale, c.seed, c.weighted)
		e := gaussian(c.m, c.n, true, c.seed)
		for i := range e.Data {
			e.Data[i] *= float32(c.scale)
		}
		var h []float64
		if c.weighted {
			h = lrHessian(c.n, c.seed)
		}
		fit, err := LowRank(e, c.r, LowRankOptions{Seed: c.seed, Hessian: h})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		a, b := lrDecode(fit)
		before := lrErr2(e, nil, nil, 0, h)
		after := lrErr2(e, a, b, fit.Rank, h)
		if after > before || fit.Removed < 0 {
			t.Errorf("%s: error² %.6g → %.6g (Removed %.6g)", name, before, after, fit.Removed)
		}
		if math.Abs((before-after)-fit.Removed) > 1e-9*before {
			t.Errorf("%s: Removed %.9g, direct %.9g", name, fit.Removed, before-after)
		}
		if fit.Rank < c.r {
			t.Logf("%s: rank %d of %d kept (error² %.4g → %.4g)", name, fit.Rank, c.r, before, after)
		}
	}
}

// TestLowRankGuard checks the fallback for factors that would increase
// the error: LowRank never produces them (without rounding A·B projects
// E), so the test spoils a fit by hand, flipping and tripling its last
// component, and hands it to the rounding step, which must keep the
// helpful prefix: the first r−1 components, A repacked to [m][r−1].
func TestLowRankGuard(t *testing.T) {
	for _, weighted := range []bool{false, true} {
		const m, n, r = 30, 20, 3
		e := lrSpectrum(m, n, func(i int) float64 { return 1 / float64(i+1) }, 9)
		var h []float64
		if weighted {
			h = lrHessian(n, 9)
		}
		op, err := newLowRankOp(e, LowRankOptions{Hessian: h})
		if err != nil {
			t.Fatal(err)
		}
		a, b, _ := op.fit(r, LowRankOptions{Seed: 1})
		for o := range m {
			a[o*r+r-1] *= -3
		}
		fit, err := op.round(a, b, r)
		if err != nil {
			t.Fatal(err)
		}
		if fit.Rank != r-1 || len(fit.A) != m*(r-1) || len(fit.B) != (r-1)*n {
			t.Fatalf("weighted %v: rank %d, len A %d, len B %d", weighted, fit.Rank, len(fit.A), len(fit.B))
		}
		for o := range m {
			for c := range r - 1 {
				if fit.A[o*(r-1)+c] != tensor.F32ToF16(float32(a[o*r+c])) {
					t.Fatalf("weighted %v: A[%d][%d] not the rounded input", weighted, o, c)
				}
			}
		}
		fa, fb := lrDecode(fit)
		before, after := lrErr2(e, nil, nil, 0, h), lrErr2(e, fa, fb, fit.Rank, h)
		if after > before || math.Abs((before-after)-fit.Removed) > 1e-9*before {
			t.Errorf("weighted %v: error² %.6g → %.6g, Removed %.6g", weighted, before, after, fit.Removed)
		}
	}
}

// TestLowRankWeighted checks that with a non-trivial Hessian the weighted
// fit has a lower H-weighted error than the plain fit, never above
// ‖E·L‖, and close to the weighted optimum (E·L with a decaying spectrum
// when E has one: within the fp16 rounding, bounded loosely at 1%), and
// that B's rows have unit norm.
func TestLowRankWeighted(t *testing.T) {
	for _, seed := range []uint64{1, 2} {
		const m, n, r = 64, 48, 6
		e := lrSpectrum(m, n, func(i int) float64 { return math.Pow(0.7, float64(i)) }, seed)
		h := lrHessian(n, seed+10)
		plain, err := LowRank(e, r, LowRankOptions{Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		weighted, err := LowRank(e, r, LowRankOptions{Seed: seed, Hessian: h})
		if err != nil {
			t.Fatal(err)
		}
		pa, pb := lrDecode(plain)
		wa, wb := lrDecode(weighted)
		none := lrErr2(e, nil, nil, 0, h)
		errP, errW := lrErr2(e, pa, pb, r, h), lrErr2(e, wa, wb, r, h)
		opt := lrOptimal(e, r, h)
		t.Logf("seed %d: H-weighted error² none %.5g, plain fit %.5g, weighted fit %.5g, optimum %.5g", seed, none, errP, errW, opt)
		if !(errW < errP) || errW > none {
			t.Errorf("seed %d: weighted %.5g, plain %.5g, none %.5g", seed, errW, errP, none)
		}
		if math.Sqrt(errW) > 1.01*math.Sqrt(opt) {
			t.Errorf("seed %d: weighted error %.5g, optimum %.5g", seed, math.Sqrt(errW), math.Sqrt(opt))
		}
		for c := range r {
			var s float64
			for _, v := range wb[c*n : (c+1)*n] {
				s += v * v
			}
			// fp16 rounding moves the norm by at most 2⁻¹¹ relative.
			if math.Abs(math.Sqrt(s)-1) > 0x1p-11 {
				t.Errorf("seed %d: ‖B[%d]‖ = %v", seed, c, math.Sqrt(s))
			}
		}
	}
}

// TestLowRankDeterministic: the same seed gives identical bits, also with
// GOMAXPROCS = 1 (gonum's parallel products own whole output blocks, so
// the summation order does not depend on the worker count); another seed
// gives other bits.
func TestLowRankDeterministic(t *testing.T) {
	e := gaussian(300, 200, true, 4)
	h := lrHessian(200, 5)
	for _, hess := range [][]float64{nil, h} {
		opt := LowRankOptions{Seed: 7, Hessian: hess}
		a, err := LowRank(e, 16, opt)
		if err != nil {
			t.Fatal(err)
		}
		prev := runtime.GOMAXPROCS(1)
		b, err := LowRank(e, 16, opt)
		runtime.GOMAXPROCS(prev)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(a.A, b.A) || !slices.Equal(a.B, b.B) || a.Removed != b.Removed {
			t.Errorf("weighted %v: GOMAXPROCS changed the result", hess != nil)
		}
		opt.Seed = 8
		c, err := LowRank(e, 16, opt)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Equal(a.A, c.A) {
			t.Errorf("weighted %v: seeds 7 and 8 gave the same A", hess != nil)
		}
	}
}

func TestLowRankErrors(t *testing.T) {
	e := gaussian(20, 10, false, 1)
	nan := gaussian(20, 10, false, 1)
	nan.Data[37] = float32(math.NaN())
	huge := gaussian(20, 10, false, 1)
	for i := range huge.Data {
		huge.Data[i] *= 1e6
	}
	notPD := make([]float64, 100) // all zero: λ = 0, no Cholesky
	badH := lrHessian(10, 1)
	badH[55] = math.Inf(1)
	for _, c := range []struct {
		name string
		e    *tensor.Matrix
		r    int
		opt  LowRankOptions
	}{
		{"negative rank", e, -1, LowRankOptions{}},
		{"rank above min", e, 11, LowRankOptions{}},
		{"NaN", nan, 2, LowRankOptions{}},
		{"fp16 overflow", huge, 2, LowRankOptions{}},
		{"Hessian size", e, 2, LowRankOptions{Hessian: make([]float64, 99)}},
		{"Hessian not PD", e, 2, LowRankOptions{Hessian: notPD}},
		{"Hessian Inf", e, 2, LowRankOptions{Hessian: badH}},
		{"negative damping", e, 2, LowRankOptions{Hessian: lrHessian(10, 1), Damp: -1}},
	} {
		if _, err := LowRank(c.e, c.r, c.opt); !errors.Is(err, ErrInput) {
			t.Errorf("%s: err = %v, want ErrInput", c.name, err)
		}
	}
	fit, err := LowRank(e, 0, LowRankOptions{})
	if err != nil || fit.A != nil || fit.B != nil || fit.Rank != 0 {
		t.Errorf("rank 0: %+v, %v", fit, err)
	}
}

// TestRotatedLowRankLayer runs both pieces through lut.Matrix the way the
// quantizer will use them: W' = W·M quantized, E = W' − Ŵ' fit in the
// rotated basis, and the runtime's y = Ŵ'·x' + A·(B·x') with x' = x·M. It
// checks the factor orientation against a float64 evaluation of that
// formula (the float32 rotation and products leave at most about
// (in + log₂n)·2⁻²⁴ ≈ 1.6e-5 of ‖x‖·‖w_o‖; bound 2e-5), and
// that the correction brings y closer to the float layer x·Wᵀ.
func TestRotatedLowRankLayer(t *testing.T) {
	const out, in, T, r = 64, 256, 3, 16
	w := gaussian(out, in, true, 21)
	h := lut.NewHadamard(in, 1000+3)
	wr := tensor.New(out, in)
	copy(wr.Data, w.Data)
	h.RotateWeights(wr)
	q, err := RTN(wr, mustFormat(t, "LUT3 per-tensor + pcs"), Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	what := dequant(q)
	e := tensor.New(out, in)
	for i := range e.Data {
		e.Data[i] = wr.Data[i] - what.Data[i]
	}
	fit, err := LowRank(e, r, LowRankOptions{Seed: 1})
	if err != nil || fit.Rank != r {
		t.Fatalf("rank %d, %v", fit.Rank, err)
	}
	p := q.Parts()
	p.Rotation = h
	rotOnly, err := lut.New(q.Format(), out, in, p)
	if err != nil {
		t.Fatal(err)
	}
	p.LowRankA, p.LowRankB = fit.A, fit.B
	corrected, err := lut.New(q.Format(), out, in, p)
	if err != nil {
		t.Fatal(err)
	}
	x := hdNormal(T, in, 22)
	xr := tensor.New(T, in)
	h.Rotate(xr, x)
	a, b := lrDecode(fit)
	y0, y1 := tensor.New(T, out), tensor.New(T, out)
	rotOnly.Mul(y0, x)
	corrected.Mul(y1, x)
	var d0, d1, worst float64
	for ti := range T {
		for o := range out {
			var ref, want float64
			for j := range in {
				ref += float64(x.Row(ti)[j]) * float64(w.Row(o)[j])
				wj := float64(what.Row(o)[j])
				for c := range r {
					wj += a[o*r+c] * b[c*in+j]
				}
				want += float64(xr.Row(ti)[j]) * wj
			}
			worst = max(worst, math.Abs(float64(y1.Row(ti)[o])-want)/(hdNorm(x.Row(ti))*hdNorm(w.Row(o))))
			d0 += (float64(y0.Row(ti)[o]) - ref) * (float64(y0.Row(ti)[o]) - ref)
			d1 += (float64(y1.Row(ti)[o]) - ref) * (float64(y1.Row(ti)[o]) - ref)
		}
	}
	t.Logf("‖y − x·Wᵀ‖²: rotated %.4g, rotated + rank %d %.4g; formula mismatch %.3g", d0, r, d1, worst)
	if worst > 2e-5 {
		t.Errorf("lut.Matrix output differs from Ŵ'·x' + A·(B·x') by %.3g of ‖x‖‖w‖", worst)
	}
	if !(d1 < d0) {
		t.Errorf("low-rank correction did not reduce the output error: %.4g → %.4g", d0, d1)
	}
}

// hdNormal is a [rows, cols] matrix of standard normal values.
func hdNormal(rows, cols int, seed uint64) *tensor.Matrix {
	r := rand.New(rand.NewPCG(seed, 0x4ad))
	m := tensor.New(rows, cols)
	for i := range m.Data {
		m.Data[i] = float32(r.NormFloat64())
	}
	return m
}

// hdNorm is the Euclidean norm of v.
func hdNorm(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

// BenchmarkLowRank times one rank-64 fit of a 17408×5120 error matrix
// (the 27B MLP shape). Run it once: go test -run '^$' -bench LowRank
// -benchtime 1x ./quant.
func BenchmarkLowRank(b *testing.B) {
	e := gaussian(17408, 5120, false, 1)
	for b.Loop() {
		if _, err := LowRank(e, 64, LowRankOptions{Seed: 1}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/fit")
}
