package quant

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"forge/tensor"
)

// hessianRef is Hessian's plain twin: H = Σ_t x[t]ᵀx[t] / N and the
// magnitude bound B = Σ_t |x[t]|ᵀ|x[t]| / N, summed in float64 in row
// order ([in][in] each).
func hessianRef(x *tensor.Matrix) (h, b []float64) {
	n := x.Cols
	h, b = make([]float64, n*n), make([]float64, n*n)
	for t := range x.Rows {
		row := x.Row(t)
		for i, vi := range row {
			for j, vj := range row {
				p := float64(vi) * float64(vj)
				h[i*n+j] += p
				b[i*n+j] += math.Abs(p)
			}
		}
	}
	for i := range h {
		h[i] /= float64(x.Rows)
		b[i] /= float64(x.Rows)
	}
	return h, b
}

// hessTol is the bound on |H − href| / B of backend b over rows rows
// (Hessian's doc comment): the pure-Go backend rounds products and sums
// of ≤ hessChunk rows to float32, (hessChunk+2)·2⁻²⁴ ≈ 7.7·10⁻⁶; OpenBLAS
// sums exact products in float64, like the twin, so twice (rows+2)·2⁻⁵³
// (≈ 10⁻¹³ here) bounds both.
func hessTol(b linalg, rows int) float64 {
	if b.name() == (goLA{}).name() {
		return (hessChunk + 2) * 0x1p-24
	}
	return 2 * float64(rows+2) * 0x1p-53
}

func randRows(rows, in int, seed uint64) *tensor.Matrix {
	r := rand.New(rand.NewPCG(seed, 0x1e55))
	x := tensor.New(rows, in)
	for i := range x.Data {
		x.Data[i] = float32(r.NormFloat64() * math.Exp(r.NormFloat64()))
	}
	return x
}

// TestHessianMatchesReference: every entry within its backend's bound of
// the float64 twin; the diagonal (summed in float64 in row order in every
// backend) bit for bit; Matrix symmetric. 300 rows: two full chunks and a
// partial one; 37 columns: not a multiple of any kernel width.
func TestHessianMatchesReference(t *testing.T) {
	const rows, in = 300, 37
	x := randRows(rows, in, 1)
	href, bound := hessianRef(x)
	for _, b := range backends() {
		withBackend(b, func() {
			h := hessianOf(x)
			m, d := h.Matrix(), h.Diag()
			tol := hessTol(b, rows)
			for i := range in {
				if m[i*in+i] != href[i*in+i] || d[i] != href[i*in+i] {
					t.Fatalf("%s: diag[%d] = %v / %v, want %v", b.name(), i, m[i*in+i], d[i], href[i*in+i])
				}
				for j := range in {
					if m[i*in+j] != m[j*in+i] {
						t.Fatalf("%s: H not symmetric at [%d][%d]", b.name(), i, j)
					}
					if e := math.Abs(m[i*in+j] - href[i*in+j]); e > tol*bound[i*in+j] {
						t.Fatalf("%s: H[%d][%d] = %v, want %v ± %g", b.name(), i, j, m[i*in+j], href[i*in+j], tol*bound[i*in+j])
					}
				}
			}
		})
	}
}

// TestHessianSplit: rows are buffered into fixed chunks, so splitting
// them among Add calls differently gives a bit-identical H; Merge of two
// halves agrees within the bound (its chunks differ).
func TestHessianSplit(t *testing.T) {
	const rows, in = 300, 21
	x := randRows(rows, in, 2)
	whole := hessianOf(x)
	var parts, a, b Hessian
	for t0, k := 0, 1; t0 < rows; t0, k = t0+k, k*3 {
		t1 := min(t0+k, rows)
		parts.Add(tensor.FromSlice(t1-t0, in, x.Data[t0*in:t1*in]))
	}
	want := whole.Matrix()
	if got := parts.Matrix(); !slices.Equal(got, want) || parts.Rows() != rows {
		t.Errorf("split Adds change H (%d rows)", parts.Rows())
	}
	a.Add(tensor.FromSlice(150, in, x.Data[:150*in]))
	b.Add(tensor.FromSlice(150, in, x.Data[150*in:]))
	a.Merge(&b)
	_, bound := hessianRef(x)
	got, tol := a.Matrix(), hessTol(la, rows)
	for i := range got {
		if math.Abs(got[i]-want[i]) > 2*tol*bound[i] || a.Rows() != rows {
			t.Fatalf("Merge: H[%d] = %v, want %v (%d rows)", i, got[i], want[i], a.Rows())
		}
	}
	var empty Hessian
	empty.Merge(&a)
	if !slices.Equal(empty.Matrix(), got) {
		t.Error("Merge into an empty Hessian is not a copy")
	}
}

// TestHessianModes: DiagOnly keeps the same diagonal and no matrix; a
// DiagHessian is exactly diagonal; misuse panics.
func TestHessianModes(t *testing.T) {
	x := randRows(20, 5, 3)
	full := hessianOf(x)
	d := &Hessian{DiagOnly: true}
	d.Add(x)
	if !slices.Equal(d.Diag(), full.Diag()) || d.Matrix() != nil || d.Rows() != 20 {
		t.Errorf("DiagOnly: Diag %v vs %v, Matrix %v", d.Diag(), full.Diag(), d.Matrix())
	}
	if m := DiagHessian([]float64{2, 3}).Matrix(); !slices.Equal(m, []float64{2, 0, 0, 3}) {
		t.Errorf("DiagHessian Matrix = %v", m)
	}
	if (&Hessian{}).Matrix() != nil {
		t.Error("empty Hessian has a matrix")
	}
	mustPanic(t, "Add to a DiagHessian", func() { DiagHessian([]float64{1}).Add(tensor.New(1, 1)) })
	mustPanic(t, "width change", func() { full.Add(tensor.New(1, 4)) })
	mustPanic(t, "Merge DiagOnly into full", func() { full.Merge(d) })
	mustPanic(t, "DiagOnly set late", func() {
		h := hessianOf(x)
		h.DiagOnly = true
		h.Add(x)
	})
}

func mustPanic(t *testing.T, what string, fn func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s: no panic", what)
		}
	}()
	fn()
}

// TestOutputSNR compares OutputSNR with the SNR of the layer's outputs
// computed from the rows themselves, 10·log10(‖XWᵀ‖²/‖XEᵀ‖²) in float64.
// They differ only by the Hessian's rounding: each quadratic form q = eHeᵀ
// moves by at most tol·|e|B|e|ᵀ (B = |X|ᵀ|X|/N), so by a relative
// δ = tol·|e|B|e|ᵀ/q, and the dB value by at most 10·log10(e)·(δ_signal +
// δ_noise) (ratios computed here, not assumed).
func TestOutputSNR(t *testing.T) {
	const out, in, rows = 16, 40, 200
	w := gaussian(out, in, true, 41)
	x := correlated(rows, in, 6, 1)
	h := hessianOf(x)
	m, err := GPTQ{Format: mustFormat(t, "LUT2 per-tensor + pcs")}.Quantize(w, h)
	if err != nil {
		t.Fatal(err)
	}
	wq := dequant(m)
	_, bound := hessianRef(x)
	var sig, noise, sigAbs, noiseAbs float64
	for o := range out {
		for i := range in {
			ei := float64(w.Data[o*in+i]) - float64(wq.Data[o*in+i])
			for j := range in {
				ej := float64(w.Data[o*in+j]) - float64(wq.Data[o*in+j])
				sigAbs += math.Abs(float64(w.Data[o*in+i])*float64(w.Data[o*in+j])) * bound[i*in+j]
				noiseAbs += math.Abs(ei*ej) * bound[i*in+j]
			}
		}
		for t := range rows {
			var y, e float64
			for j, v := range x.Row(t) {
				y += float64(v) * float64(w.Data[o*in+j])
				e += float64(v) * (float64(w.Data[o*in+j]) - float64(wq.Data[o*in+j]))
			}
			sig, noise = sig+y*y/rows, noise+e*e/rows
		}
	}
	want := 10 * math.Log10(sig/noise)
	tol := 10/math.Ln10*hessTol(la, rows)*(sigAbs/sig+noiseAbs/noise) + 1e-9
	if got := OutputSNR(w, wq, h); math.Abs(got-want) > tol {
		t.Errorf("OutputSNR = %.9f dB, want %.9f ± %.2g", got, want, tol)
	}
	d := []float64{1, 2, 3, 4}
	ws, wqs := gaussian(3, 4, false, 1), gaussian(3, 4, false, 2)
	if got, want := OutputSNR(ws, wqs, DiagHessian(d)), WeightedSNR(ws, wqs, d); got != want {
		t.Errorf("OutputSNR with a DiagHessian = %v, want WeightedSNR %v", got, want)
	}
	if !math.IsInf(OutputSNR(w, w, h), 1) {
		t.Error("OutputSNR of an exact copy is not +Inf")
	}
	mustPanic(t, "DiagOnly", func() { OutputSNR(w, wq, &Hessian{DiagOnly: true}) })
	mustPanic(t, "shape", func() { OutputSNR(w, ws, h) })
}
