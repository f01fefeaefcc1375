package quant

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"forge/lut"
	"forge/tensor"
)

// GPTQ is a Quantizer.
var _ Quantizer = GPTQ{}

// correlated returns rows×in inputs X = Z·C·D from seed: Z ~ N(0, 1),
// C [in][in] a random Gaussian mixing (entries N(0, 1/in)) that correlates
// the columns, D a diagonal of column scales exp(N(0, ½²)) so that
// diag(H) varies and GPTQ's column order matters. The same seed gives the
// same C and D; stream selects the rows Z (training or held-out).
func correlated(rows, in int, seed, stream uint64) *tensor.Matrix {
	r := rand.New(rand.NewPCG(seed, 0xc0))
	c := make([]float64, in*in) // [in][in]
	for i := range c {
		c[i] = r.NormFloat64() / math.Sqrt(float64(in))
	}
	d := make([]float64, in)
	for j := range d {
		d[j] = math.Exp(0.5 * r.NormFloat64())
	}
	rz := rand.New(rand.NewPCG(seed, stream))
	x := tensor.New(rows, in)
	z := make([]float64, in)
	for t := range rows {
		for i := range z {
			z[i] = rz.NormFloat64()
		}
		for j := range in {
			var s float64
			for i, v := range z {
				s += v * c[i*in+j]
			}
			x.Data[t*in+j] = float32(s * d[j])
		}
	}
	return x
}

func hessianOf(x *tensor.Matrix) *Hessian {
	var h Hessian
	h.Add(x)
	return &h
}

// samePartsBytes reports where two matrices' stored arrays differ ("" if
// nowhere).
func samePartsBytes(a, b *lut.Matrix) string {
	pa, pb := a.Parts(), b.Parts()
	switch {
	case !bytes.Equal(pa.Index, pb.Index):
		return "Index"
	case !slices.Equal(pa.LUT, pb.LUT):
		return "LUT"
	case !slices.Equal(pa.Scale, pb.Scale):
		return "Scale"
	case !slices.Equal(pa.Weight, pb.Weight):
		return "Weight"
	}
	return ""
}

var gptqFormats = []string{
	"LUT2 per-tensor + pcs", "LUT4 per-tensor + pcs", "LUT4 g16 + pcs",
	"vector 2x16 + pcs", "vector 2x16 g8 + pcs", "INT8 per-channel", "bf16",
}

// TestGPTQDiagonalIsRTN: with a diagonal H no column's error reaches any
// other (U is diagonal), so GPTQ must return exactly RTN's arrays, for
// every format kind, with and without AW, whatever the column order. Two
// diagonal Hessians: a DiagHessian with ties and a dead column, and a full
// accumulated one whose rows each touch one column (off-diagonals exactly
// zero).
func TestGPTQDiagonalIsRTN(t *testing.T) {
	const out, in = 32, 48
	w := gaussian(out, in, true, 7)
	r := rand.New(rand.NewPCG(3, 4))
	d := make([]float64, in)
	for j := range d {
		d[j] = float64(1 + r.IntN(4)) // ties
	}
	d[5] = 0 // dead
	x := tensor.New(2*in, in)
	for i := range x.Rows {
		x.Data[i*in+r.IntN(in)] = float32(r.NormFloat64())
	}
	hs := map[string]*Hessian{"DiagHessian": DiagHessian(d), "accumulated": hessianOf(x)}
	for hn, h := range hs {
		for _, name := range gptqFormats {
			f := mustFormat(t, name)
			for _, aw := range []bool{false, true} {
				opt := Options{Seed: 5}
				want, err := Nearest{Format: f, AW: aw, Options: opt}.Quantize(w, h)
				if err != nil {
					t.Fatal(err)
				}
				got, err := GPTQ{Format: f, AW: aw, Options: opt, Block: 16}.Quantize(w, h)
				if err != nil {
					t.Fatalf("%s %s AW=%v: %v", hn, name, aw, err)
				}
				if where := samePartsBytes(got, want); where != "" {
					t.Errorf("%s %s AW=%v: %s differs from RTN", hn, name, aw, where)
				}
			}
		}
	}
}

// TestGPTQBeatsRTN: on correlated inputs GPTQ must cut the held-out output
// error (OutputSNR with H from 1024 rows not used for calibration) well
// below RTN's on the same grid. Measured gains on this problem: LUT4
// +4.7 dB, vector 2x16 +3.8, LUT2 +3.2, INT8 +5.4, LUT4 g16 +4.3 (while
// the weight SNR drops by 6–7 dB: GPTQ trades weight error for output
// error). The test is deterministic; on seeds 20–24 the gains ranged
// LUT4 +4.0…+4.9, vector 2x16 +2.8…+3.8, LUT2 +2.6…+3.2 dB. The assertion,
// ≥ 2 dB held out and on the training rows, is below all of them and far
// above the 0 dB that GPTQ without its error feedback (which is RTN)
// would give.
func TestGPTQBeatsRTN(t *testing.T) {
	const out, in = 64, 128
	w := gaussian(out, in, true, 11)
	train := hessianOf(correlated(1024, in, 1, 1))
	held := hessianOf(correlated(1024, in, 1, 2))
	for _, name := range []string{"LUT4 per-tensor + pcs", "vector 2x16 + pcs", "LUT2 per-tensor + pcs", "INT8 per-channel", "LUT4 g16 + pcs"} {
		f := mustFormat(t, name)
		rtn, err := Nearest{Format: f, Options: Options{Seed: 1}}.Quantize(w, train)
		if err != nil {
			t.Fatal(err)
		}
		g, err := GPTQ{Format: f, Options: Options{Seed: 1}}.Quantize(w, train)
		if err != nil {
			t.Fatal(err)
		}
		sr, sg := OutputSNR(w, dequant(rtn), held), OutputSNR(w, dequant(g), held)
		srt, sgt := OutputSNR(w, dequant(rtn), train), OutputSNR(w, dequant(g), train)
		t.Logf("%s: held-out RTN %.2f dB GPTQ %.2f dB (+%.2f); train RTN %.2f GPTQ %.2f; weight SNR %.2f / %.2f",
			name, sr, sg, sg-sr, srt, sgt, SNR(w, dequant(rtn)), SNR(w, dequant(g)))
		if sg < sr+2 || sgt < srt+2 {
			t.Errorf("%s: GPTQ %.2f dB held out (%.2f train) vs RTN %.2f (%.2f): less than 2 dB better", name, sg, sgt, sr, srt)
		}
	}
}

// gptqReference is GPTQ's plain twin, written as the reference
// implementation (gptq.py) computes it, in float64 and without blocks:
// H⁻¹ from the Cholesky factor of H (dpotrf, dpotri), then the upper
// Cholesky factor U of H⁻¹ directly, and every column's error propagated
// at once into all later columns. It shares only the grid (tested against
// RTN) and the column order rule with GPTQ. It returns the codes [out/d][in].
func gptqReference(t *testing.T, w *tensor.Matrix, g *grid, h *Hessian, damp float64) []uint8 {
	out, n := w.Rows, w.Cols
	hm, d := h.Matrix(), h.Diag()
	perm := make([]int, n)
	for j := range perm {
		perm[j] = j
	}
	slices.SortStableFunc(perm, func(a, b int) int { return cmpF(d[b], d[a]) })
	lambda := damp * mean(d)
	a := make([]float64, n*n) // P(H + λI)Pᵀ, dead columns' diagonal 1
	for i, p := range perm {
		for j, q := range perm {
			a[i*n+j] = hm[p*n+q]
		}
		if d[p] == 0 {
			a[i*n+i] = 1
		}
		a[i*n+i] += lambda
	}
	u := upperCholOfInverse(t, a, n)
	wp := make([]float64, out*n) // [out][n] permuted weights
	for o := range out {
		for i, j := range perm {
			wp[o*n+i] = float64(w.Data[o*n+j])
		}
	}
	dd := g.d
	codes := make([]uint8, out/dd*n)
	wv, qv := make([]float64, dd), make([]float64, dd)
	for i := range n {
		for r := range out / dd {
			for t := range dd {
				wv[t] = wp[(dd*r+t)*n+i]
			}
			codes[r*n+perm[i]] = g.round(qv, wv, r)
			for t := range dd {
				e := (wv[t] - qv[t]) / u[i*n+i]
				for k := i + 1; k < n; k++ {
					wp[(dd*r+t)*n+k] -= e * u[i*n+k]
				}
			}
		}
	}
	return codes
}

func cmpF(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func mean(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// TestGPTQMatchesReference compares blocked GPTQ (blocks of 7 columns,
// 40 = two sub-blocks of gptqSub and a partial one, 128, and one block of
// all 96 columns) with the unblocked float64 twin. They are the same
// algorithm, but GPTQ keeps W in float32 between sub-blocks and forms U
// differently, so a weight lying within rounding of a midpoint between two
// entries may round the other way, and the changed error then moves later
// columns slightly. So: at least 99% of codes equal (measured: all of
// them, in both backends), and held-out output SNRs within 0.05 dB of each other.
func TestGPTQMatchesReference(t *testing.T) {
	const out, in = 64, 96
	w := gaussian(out, in, true, 21)
	train := hessianOf(correlated(512, in, 2, 1))
	held := hessianOf(correlated(512, in, 2, 2))
	for _, name := range []string{"LUT4 per-tensor + pcs", "vector 2x16 + pcs", "INT8 per-channel", "LUT2 g16 + pcs"} {
		f := mustFormat(t, name)
		var g *grid
		var err error
		if f.Kind == lut.Int8 {
			g, err = int8Grid(w)
		} else {
			g, err = lutGrid(w, f, Options{Seed: 1})
		}
		if err != nil {
			t.Fatal(err)
		}
		ref := gptqReference(t, w, g, train, 0.01)
		mref := fromCodes(t, f, w, g, ref)
		for _, block := range []int{7, 40, 128, 1000} {
			m, err := GPTQ{Format: f, Options: Options{Seed: 1}, Block: block}.Quantize(w, train)
			if err != nil {
				t.Fatal(err)
			}
			codes := make([]uint8, len(ref))
			if f.Kind == lut.Int8 {
				copy(codes, m.Parts().Index)
			} else {
				m.Codes(codes)
			}
			diff := 0
			for i := range codes {
				if codes[i] != ref[i] {
					diff++
				}
			}
			sg, sr := OutputSNR(w, dequant(m), held), OutputSNR(w, dequant(mref), held)
			t.Logf("%s block %d: %d of %d codes differ; held-out SNR %.4f vs reference %.4f dB", name, block, diff, len(codes), sg, sr)
			if diff > len(codes)/100 || math.Abs(sg-sr) > 0.05 {
				t.Errorf("%s block %d: %d of %d codes differ from the reference, SNR %.4f vs %.4f dB", name, block, diff, len(codes), sg, sr)
			}
		}
	}
}

// fromCodes builds the lut.Matrix of codes on grid g.
func fromCodes(t *testing.T, f lut.Format, w *tensor.Matrix, g *grid, codes []uint8) *lut.Matrix {
	p := lut.Parts{Index: codes, Scale: g.scale}
	if f.Kind != lut.Int8 {
		p.LUT = g.lut()
		p.Index = make([]byte, lut.PackedLen(len(codes), f.Bits))
		lut.Pack(p.Index, codes, f.Bits)
	}
	m, err := lut.New(f, w.Rows, w.Cols, p)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestGPTQDeterministic: the same seed gives byte-identical arrays, also
// with a different GOMAXPROCS (the row split over workers changes).
func TestGPTQDeterministic(t *testing.T) {
	const out, in = 48, 80
	w := gaussian(out, in, true, 31)
	h := hessianOf(correlated(300, in, 3, 1))
	for _, name := range []string{"LUT4 g16 + pcs", "vector 2x16 + pcs", "INT8 per-channel"} {
		q := GPTQ{Format: mustFormat(t, name), AW: true, Options: Options{Seed: 9}, Block: 32}
		a, err := q.Quantize(w, h)
		if err != nil {
			t.Fatal(err)
		}
		prev := runtime.GOMAXPROCS(1)
		b, err := q.Quantize(w, h)
		runtime.GOMAXPROCS(prev)
		if err != nil {
			t.Fatal(err)
		}
		c, err := q.Quantize(w, h)
		if err != nil {
			t.Fatal(err)
		}
		if where := samePartsBytes(a, b) + samePartsBytes(a, c); where != "" {
			t.Errorf("%s: %s differs between runs", name, where)
		}
	}
}

// TestGPTQFactor checks the reversal trick: U from gptqFactor is upper
// triangular and UᵀU·(P(H + λI)Pᵀ) = I, to float64 rounding times the
// condition number (H + λI from 256 correlated rows of 40 inputs, damped
// by 1%: κ ≲ 10⁴, so 10⁻⁹ is a margin of ~10²).
func TestGPTQFactor(t *testing.T) {
	const n = 40
	h := hessianOf(correlated(256, n, 4, 1))
	for _, b := range backends() {
		withBackend(b, func() {
			perm, u, err := gptqFactor(h, 0.01)
			if err != nil {
				t.Fatal(err)
			}
			hm, d := h.Matrix(), h.Diag()
			for i := 1; i < n; i++ {
				if d[perm[i]] > d[perm[i-1]] {
					t.Fatalf("%s: columns not in descending diag(H) order", b.name())
				}
			}
			lambda := 0.01 * mean(d)
			var worst float64
			for i := range n {
				for j := range n {
					var s float64 // Σ_k (UᵀU)[i][k]·A[k][j]
					for k := range n {
						var uu float64
						for l := range min(i, k) + 1 {
							uu += u[l*n+i] * u[l*n+k]
						}
						akj := hm[perm[k]*n+perm[j]]
						if k == j {
							akj += lambda
						}
						s += uu * akj
					}
					if i == j {
						s--
					}
					worst = max(worst, math.Abs(s))
					if j < i && u[i*n+j] != 0 {
						t.Fatalf("%s: U[%d][%d] = %v below the diagonal", b.name(), i, j, u[i*n+j])
					}
				}
			}
			if worst > 1e-9 {
				t.Errorf("%s: ‖UᵀU·H − I‖ = %g", b.name(), worst)
			}
		})
	}
}

// TestGPTQErrors: bad inputs are errors wrapping ErrInput (or
// lut.ErrFormat), never panics.
func TestGPTQErrors(t *testing.T) {
	const out, in = 8, 6
	w := gaussian(out, in, false, 1)
	h := hessianOf(correlated(32, in, 5, 1))
	nan := gaussian(out, in, false, 1)
	nan.Data[13] = float32(math.NaN())
	inf := correlated(4, in, 5, 1)
	inf.Data[3] = float32(math.Inf(1))
	narrow := hessianOf(correlated(32, in-1, 5, 1))
	diagOnly := &Hessian{DiagOnly: true}
	diagOnly.Add(correlated(32, in, 5, 1))
	zeros := hessianOf(tensor.New(4, in))
	// Indefinite: H = [[1, 5], [5, 1]] cannot be fixed by 1e-9 damping.
	indef := &Hessian{diag: []float64{1, 1}, low: []float64{1, 0, 5, 1}, n: 1}
	lut4 := mustFormat(t, "LUT4 per-tensor + pcs")
	cases := []struct {
		name string
		q    GPTQ
		w    *tensor.Matrix
		h    *Hessian
		want error
	}{
		{"NaN weight", GPTQ{Format: lut4}, nan, h, ErrInput},
		{"nil Hessian", GPTQ{Format: lut4}, w, nil, ErrInput},
		{"empty Hessian", GPTQ{Format: lut4}, w, &Hessian{}, ErrInput},
		{"Hessian width", GPTQ{Format: lut4}, w, narrow, ErrInput},
		{"DiagOnly", GPTQ{Format: lut4}, w, diagOnly, ErrInput},
		{"Inf in H", GPTQ{Format: lut4}, w, hessianOf(inf), ErrInput},
		{"AW, all-zero inputs", GPTQ{Format: lut4, AW: true}, w, zeros, ErrInput},
		{"negative Damp", GPTQ{Format: lut4, Damp: -1}, w, h, ErrInput},
		{"NaN Damp", GPTQ{Format: lut4, Damp: math.NaN()}, w, h, ErrInput},
		{"negative Block", GPTQ{Format: lut4, Block: -1}, w, h, ErrInput},
		{"indefinite", GPTQ{Format: lut4, Damp: 1e-9}, gaussian(4, 2, false, 1), indef, ErrInput},
		{"vector shape", GPTQ{Format: mustFormat(t, "vector 4x16 + pcs")}, gaussian(6, in, false, 1), h, lut.ErrFormat},
		{"zero Format", GPTQ{}, w, h, lut.ErrFormat},
	}
	for _, c := range cases {
		_, err := c.q.Quantize(c.w, c.h)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	// All-zero inputs without AW: every column is dead, so GPTQ is RTN.
	g, err := GPTQ{Format: lut4}.Quantize(w, zeros)
	if err != nil {
		t.Fatal(err)
	}
	r, err := RTN(w, lut4, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if where := samePartsBytes(g, r); where != "" {
		t.Errorf("all-dead columns: %s differs from RTN", where)
	}
	// bf16 needs no Hessian.
	if _, err := (GPTQ{Format: lut.BFloat16}).Quantize(w, nil); err != nil {
		t.Errorf("bf16 without a Hessian: %v", err)
	}
}

// TestGPTQSharedHessian: Linears that share an input (q, k, v) share one
// Hessian; quantizing them concurrently, while the Hessian still holds
// buffered rows (300 is not a multiple of the chunk), must be safe (run
// with -race) and give what sequential calls give.
func TestGPTQSharedHessian(t *testing.T) {
	const in = 40
	x := correlated(300, in, 12, 1)
	names := []string{"LUT4 per-tensor + pcs", "vector 2x16 + pcs", "INT8 per-channel"}
	ws := []*tensor.Matrix{gaussian(16, in, true, 1), gaussian(32, in, true, 2), gaussian(8, in, true, 3)}
	want := make([]*lut.Matrix, len(names))
	for i, name := range names {
		m, err := GPTQ{Format: mustFormat(t, name)}.Quantize(ws[i], hessianOf(x))
		if err != nil {
			t.Fatal(err)
		}
		want[i] = m
	}
	shared := hessianOf(x)
	got := make([]*lut.Matrix, len(names))
	errs := make([]error, len(names))
	done := make(chan int)
	for i, name := range names {
		f := mustFormat(t, name)
		go func() {
			got[i], errs[i] = GPTQ{Format: f}.Quantize(ws[i], shared)
			done <- i
		}()
	}
	for range names {
		<-done
	}
	for i, name := range names {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if where := samePartsBytes(got[i], want[i]); where != "" {
			t.Errorf("%s: %s differs when quantized concurrently", name, where)
		}
	}
}

// TestQuantizeWithRTN: the RTN half of QuantizeWithRTN is byte for byte
// what RTN makes with the same options (same grid, nearest codes), and
// the GPTQ half what Quantize makes.
func TestQuantizeWithRTN(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	w := tensor.New(64, 96)
	for i := range w.Data {
		w.Data[i] = float32(r.NormFloat64())
	}
	x := tensor.New(300, 96)
	for i := range x.Data {
		x.Data[i] = float32(r.NormFloat64())
	}
	var h Hessian
	h.Add(x)
	for _, name := range []string{"LUT4 per-tensor + pcs", "vector 2x16 + pcs", "LUT3 g16 + pcs", "INT8 per-channel", "bf16"} {
		f, err := lut.ParseFormat(name)
		if err != nil {
			t.Fatal(err)
		}
		q := GPTQ{Format: f, AW: true, Options: Options{Seed: 4}}
		gm, rm, err := q.QuantizeWithRTN(w, &h)
		if err != nil {
			t.Fatal(err)
		}
		want, err := Nearest{Format: f, AW: true, Options: Options{Seed: 4}}.Quantize(w, &h)
		if err != nil {
			t.Fatal(err)
		}
		if !sameParts(rm.Parts(), want.Parts()) {
			t.Errorf("%s: RTN half differs from Nearest", name)
		}
		g2, err := q.Quantize(w, &h)
		if err != nil {
			t.Fatal(err)
		}
		if !sameParts(gm.Parts(), g2.Parts()) {
			t.Errorf("%s: GPTQ half differs from Quantize", name)
		}
	}
}

func sameParts(a, b lut.Parts) bool {
	return slices.Equal(a.LUT, b.LUT) && slices.Equal(a.Index, b.Index) && slices.Equal(a.Scale, b.Scale) && slices.Equal(a.Weight, b.Weight)
}
