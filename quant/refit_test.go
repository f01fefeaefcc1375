package quant

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"testing"
	"time"

	"forge/lut"
	"forge/tensor"
)

// refitFormats are the codebook kinds Refit handles differently: scalar
// per tensor (1, 2, 3, 4 bits), scalar grouped (a group size that leaves
// a short last group), vectors with and without groups, and INT8.
var refitFormats = []string{
	"LUT1 per-tensor + pcs", "LUT2 per-tensor + pcs", "LUT3 per-tensor + pcs", "LUT4 per-tensor + pcs",
	"LUT3 g10 + pcs", "vector 2x4 + pcs", "vector 2x16 g8 + pcs", "INT8 per-channel",
}

// refitCase returns W [out, in] (rows of varied scale), the Hessian of
// rows correlated inputs and its dense matrix, from seed.
func refitCase(out, in, rows int, seed uint64) (*tensor.Matrix, *Hessian, []float64) {
	w := gaussian(out, in, true, seed)
	h := hessianOf(correlated(rows, in, seed, 1))
	return w, h, h.Matrix()
}

// denseWhat is Ŵ [out][in] in float64 from rf's codes, codebooks and
// scales: ŵ[o][j] = s_o·c_g[code(o/d, j)][o mod d].
func denseWhat(rf *refitter) []float64 {
	out, in, d, k := rf.out, rf.in, rf.d, rf.k
	what := make([]float64, out*in)
	for o := range out {
		r := o / d
		g := r / rf.rowsG
		for j := range in {
			what[o*in+j] = rf.s[o] * rf.c[(g*k+int(rf.codes[r*in+j]))*d+o%d]
		}
	}
	return what
}

// hTimes returns H·v for v [in] (naive, float64).
func hTimes(hm, v []float64) []float64 {
	n := len(v)
	y := make([]float64, n)
	for j := range n {
		var s float64
		for k, x := range v {
			s += hm[j*n+k] * x
		}
		y[j] = s
	}
	return y
}

// denseE returns Σ_o (w_o − ŵ_o)ᵀH(w_o − ŵ_o), naive in float64.
func denseE(w *tensor.Matrix, what, hm []float64) float64 {
	in := w.Cols
	var e float64
	er := make([]float64, in)
	for o := range w.Rows {
		for j := range in {
			er[j] = float64(w.Data[o*in+j]) - what[o*in+j]
		}
		for j, v := range hTimes(hm, er) {
			e += er[j] * v
		}
	}
	return e
}

// denseEOf is denseE of a stored matrix (Dequantize is exact).
func denseEOf(w *tensor.Matrix, m *lut.Matrix, hm []float64) float64 {
	d := dequant(m)
	what := make([]float64, len(d.Data))
	widen(what, d.Data)
	return denseE(w, what, hm)
}

// quantizeFor returns GPTQ (gptq) or RTN of w in format name.
func quantizeFor(t testing.TB, w *tensor.Matrix, h *Hessian, name string, gptq bool) *lut.Matrix {
	t.Helper()
	f := mustFormat(t, name)
	var m *lut.Matrix
	var err error
	if gptq {
		m, err = GPTQ{Format: f, Options: Options{Seed: 5}}.Quantize(w, h)
	} else {
		m, err = RTN(w, f, Options{Seed: 5})
	}
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestRefitStatistics checks the fast statistics against their naive
// twins on a 24×16 matrix, with the default tiling (one tile) and with
// tiles of 5 columns and batches of 3 rows (several tiles, partial
// diagonal tiles, a short last batch): G_r = E_rᵀHE_r by the double sum
// over (j, k); b_o = E_rᵀHw_o and w_oᵀHw_o from H·w_o. The sums differ
// only in order: 10⁻¹² of the sums of absolute values.
func TestRefitStatistics(t *testing.T) {
	ctx := context.Background()
	w, h, hm := refitCase(24, 16, 200, 1)
	const in = 16
	for _, name := range refitFormats[:7] {
		m := quantizeFor(t, w, h, name, false)
		rf, err := newRefitter(ctx, w, m, hm)
		if err != nil {
			t.Fatal(err)
		}
		k := rf.k
		bs, whws := [][]float64{slices.Clone(rf.b)}, [][]float64{slices.Clone(rf.wHw)}
		small := make([]float64, len(rf.gram))
		rf.tile, rf.batch = 5, 3
		if err := rf.grams(ctx, small, 0, rf.rows, true); err != nil {
			t.Fatal(err)
		}
		bs, whws = append(bs, rf.b), append(whws, rf.wHw)
		for r := range rf.rows {
			ref, abs := make([]float64, k*k), make([]float64, k*k)
			codes := rf.codes[r*in : (r+1)*in]
			for j, a := range codes {
				for l, b := range codes {
					ref[int(a)*k+int(b)] += hm[j*in+l]
					abs[int(a)*k+int(b)] += math.Abs(hm[j*in+l])
				}
			}
			for i := range ref {
				for _, got := range []float64{rf.gram[r*k*k+i], small[r*k*k+i]} {
					if math.Abs(got-ref[i]) > 1e-12*abs[i] {
						t.Fatalf("%s: G_%d[%d][%d] = %v, want %v", name, r, i/k, i%k, got, ref[i])
					}
				}
			}
		}
		for o := range rf.out {
			wo := make([]float64, in)
			widen(wo, w.Row(o))
			hw := hTimes(hm, wo)
			b, abs := make([]float64, k), make([]float64, k)
			var whw, whwAbs float64
			for j, v := range hw {
				var va float64 // Σ_l |H[j][l]·w[l]|
				for l, x := range wo {
					va += math.Abs(hm[j*in+l] * x)
				}
				c := rf.codes[o/rf.d*in+j]
				b[c] += v
				abs[c] += va
				whw += wo[j] * v
				whwAbs += math.Abs(wo[j]) * va
			}
			for i := range bs {
				if got := whws[i][o]; math.Abs(got-whw) > 1e-12*whwAbs {
					t.Fatalf("%s: w_%dᵀHw = %v, want %v", name, o, got, whw)
				}
				for a := range k {
					if got := bs[i][o*k+a]; math.Abs(got-b[a]) > 1e-12*abs[a] {
						t.Fatalf("%s: b_%d[%d] = %v, want %v", name, o, a, got, b[a])
					}
				}
			}
		}
	}
}

// TestRefitStepsAreStationary checks each block step against the naive
// dense twin of E before any fp16 rounding: after the scale step,
// ∂E/∂s_o = −2u_oᵀH(w_o − s_ou_o) vanishes for every row; after the
// codebook step (scales fixed), ∂E/∂c_{g,a,t} = −2Σ_o s_o Σ_{j: code = a}
// (H(w_o − ŵ_o))[j] vanishes for every entry. Both are relative to the
// sums of absolute values of their terms; the codebook step's ridge
// (εA_aa towards the old values, ε = 10⁻¹⁰) leaves a relative gradient of
// about ε·|Δc|/|c|, so 10⁻⁸ bounds it with float64 rounding to spare.
// The E the sweep reports must equal the dense E (relative 10⁻¹⁰: the
// expansion wᵀHw − 2s·n + s²q cancels at most the SNR's ratio, ~10², of
// float64 precision).
func TestRefitStepsAreStationary(t *testing.T) {
	ctx := context.Background()
	const in = 16
	for _, name := range refitFormats[:7] {
		for seed := range uint64(3) {
			w, h, hm := refitCase(24, in, 200, 10+seed)
			rf, err := newRefitter(ctx, w, quantizeFor(t, w, h, name, true), hm)
			if err != nil {
				t.Fatal(err)
			}
			for step, mode := range []sweepMode{sweepScale, sweepBook, sweepScale, sweepBook} {
				_, after, err := rf.sweep(ctx, mode)
				if err != nil {
					t.Fatal(err)
				}
				what := denseWhat(rf)
				if mode == sweepScale {
					if e := denseE(w, what, hm); math.Abs(after-e) > 1e-10*e {
						t.Errorf("%s seed %d step %d: sweep's E %v, dense %v", name, seed, step, after, e)
					}
				}
				gs, gsAbs, gc, gcAbs := refitGradients(rf, w, what, hm)
				for o := range gs {
					if math.Abs(gs[o]) > 1e-10*gsAbs[o] && mode == sweepScale {
						t.Errorf("%s seed %d step %d: ∂E/∂s_%d = %v (terms %v)", name, seed, step, o, gs[o], gsAbs[o])
					}
				}
				for i := range gc {
					if math.Abs(gc[i]) > 1e-8*gcAbs[i] && mode == sweepBook {
						t.Errorf("%s seed %d step %d: ∂E/∂c[%d] = %v (terms %v)", name, seed, step, i, gc[i], gcAbs[i])
					}
				}
			}
		}
	}
}

// refitGradients returns ∂E/∂s [out] and ∂E/∂c [groups][K][d] at rf's
// state, with the sums of the absolute values of their terms.
func refitGradients(rf *refitter, w *tensor.Matrix, what, hm []float64) (gs, gsAbs, gc, gcAbs []float64) {
	out, in, d, k := rf.out, rf.in, rf.d, rf.k
	gs, gsAbs = make([]float64, out), make([]float64, out)
	gc, gcAbs = make([]float64, len(rf.c)), make([]float64, len(rf.c))
	wo, u := make([]float64, in), make([]float64, in)
	for o := range out {
		r := o / d
		g := r / rf.rowsG
		widen(wo, w.Row(o))
		for j := range in {
			u[j] = what[o*in+j] / rf.s[o]
		}
		hw, hwh := hTimes(hm, wo), hTimes(hm, what[o*in:(o+1)*in])
		for j := range in {
			gs[o] += -2 * u[j] * (hw[j] - hwh[j])
			gsAbs[o] += 2 * (math.Abs(u[j]*hw[j]) + math.Abs(u[j]*hwh[j]))
			i := (g*k+int(rf.codes[r*in+j]))*d + o%d
			gc[i] += -2 * rf.s[o] * (hw[j] - hwh[j])
			gcAbs[i] += 2 * math.Abs(rf.s[o]) * (math.Abs(hw[j]) + math.Abs(hwh[j]))
		}
	}
	return gs, gsAbs, gc, gcAbs
}

// TestRefitInt8Statistics checks int8Stats against the naive products
// w_oᵀHw_o, c_oᵀHw_o, c_oᵀHc_o (relative 10⁻¹² of the absolute terms),
// so the scale step's optimum n/q zeroes ∂E/∂s.
func TestRefitInt8Statistics(t *testing.T) {
	w, h, hm := refitCase(24, 16, 200, 2)
	m := quantizeFor(t, w, h, "INT8 per-channel", true)
	wHw, n, q, err := int8Stats(context.Background(), w, m, hm)
	if err != nil {
		t.Fatal(err)
	}
	in, codes := 16, m.Parts().Index
	for o := range 24 {
		wo, c := make([]float64, in), make([]float64, in)
		widen(wo, w.Row(o))
		for j := range in {
			c[j] = float64(int8(codes[o*in+j]))
		}
		hw, hc := hTimes(hm, wo), hTimes(hm, c)
		var sw, sn, sq, aw, an, aq float64
		for j := range in {
			sw, aw = sw+wo[j]*hw[j], aw+math.Abs(wo[j]*hw[j])
			sn, an = sn+c[j]*hw[j], an+math.Abs(c[j]*hw[j])
			sq, aq = sq+c[j]*hc[j], aq+math.Abs(c[j]*hc[j])
		}
		if math.Abs(wHw[o]-sw) > 1e-12*aw || math.Abs(n[o]-sn) > 1e-12*an || math.Abs(q[o]-sq) > 1e-12*aq {
			t.Fatalf("row %d: (%v, %v, %v), want (%v, %v, %v)", o, wHw[o], n[o], q[o], sw, sn, sq)
		}
	}
}

// TestRefitLowersError: on correlated inputs, refitting RTN and GPTQ
// results must lower E strictly for every format (the scales of RTN/GPTQ
// are √mean W², not fit to the output error, so there is always something
// to gain), and the report must agree with the naive dense E of the
// matrices given and returned (relative 10⁻⁹) and with OutputSNR (10⁻⁶
// dB: OutputSNR's GEMM sums in another order). Indices, format, shape and
// size are kept, and m's arrays are untouched.
func TestRefitLowersError(t *testing.T) {
	const out, in = 40, 32
	for _, name := range refitFormats {
		for _, gptq := range []bool{false, true} {
			for seed := range uint64(3) {
				w, h, hm := refitCase(out, in, 300, 20+seed)
				m := quantizeFor(t, w, h, name, gptq)
				p := m.Parts()
				keep := lut.Parts{LUT: slices.Clone(p.LUT), Index: slices.Clone(p.Index), Scale: slices.Clone(p.Scale)}
				r, rep, err := Refit(w, m, h, RefitOptions{})
				if err != nil {
					t.Fatal(err)
				}
				what := fmt.Sprintf("%s gptq=%v seed %d", name, gptq, seed)
				if !rep.Applied || !(rep.After < rep.Before) || r == m {
					t.Errorf("%s: not applied: E %v → %v", what, rep.Before, rep.After)
					continue
				}
				if e := denseEOf(w, m, hm); math.Abs(rep.Before-e) > 1e-9*e {
					t.Errorf("%s: Before %v, dense %v", what, rep.Before, e)
				}
				if e := denseEOf(w, r, hm); math.Abs(rep.After-e) > 1e-9*e {
					t.Errorf("%s: After %v, dense %v", what, rep.After, e)
				}
				if s := DequantOutputSNR(w, r, h); math.Abs(s-rep.SNRAfter()) > 1e-6 {
					t.Errorf("%s: SNRAfter %v, OutputSNR %v", what, rep.SNRAfter(), s)
				}
				if where := refitKept(m, r, keep); where != "" {
					t.Errorf("%s: %s", what, where)
				}
			}
		}
	}
}

// refitKept reports how r breaks Refit's promises about m ("" if not):
// same format, shape, size and codes; m's arrays equal to keep (their
// copies from before).
func refitKept(m, r *lut.Matrix, keep lut.Parts) string {
	mo, mi := m.Dims()
	ro, ri := r.Dims()
	p := m.Parts()
	switch {
	case m.Format() != r.Format() || mo != ro || mi != ri || m.Size() != r.Size():
		return fmt.Sprintf("format or shape changed: %s → %s", m, r)
	case !slices.Equal(p.LUT, keep.LUT) || !slices.Equal(p.Index, keep.Index) || !slices.Equal(p.Scale, keep.Scale):
		return "m's arrays were modified"
	}
	n := m.Format().IndexRows(mo) * mi
	a, b := make([]uint8, n), make([]uint8, n)
	m.Codes(a)
	r.Codes(b)
	if !slices.Equal(a, b) {
		return "codes changed"
	}
	for _, v := range slices.Concat(r.Parts().LUT, r.Parts().Scale) {
		if v&0x7c00 == 0x7c00 {
			return "a value is not finite"
		}
	}
	return ""
}

// TestRefitNeverWorse: on independent (uncorrelated) inputs and on a
// diagonal H, whatever Refit returns has a dense E no larger than m's, and
// when it returns m the report says so.
func TestRefitNeverWorse(t *testing.T) {
	const out, in = 32, 24
	for _, name := range refitFormats {
		for seed := range uint64(3) {
			w := gaussian(out, in, true, 40+seed)
			hs := []*Hessian{hessianOf(randRows(100, in, 40+seed))}
			d := make([]float64, in)
			for j := range d {
				d[j] = float64(j%5) + 0.5
			}
			hs = append(hs, DiagHessian(d))
			for hi, h := range hs {
				m := quantizeFor(t, w, h, name, false)
				r, rep, err := Refit(w, m, h, RefitOptions{Iters: 2})
				if err != nil {
					t.Fatal(err)
				}
				hm := h.Matrix()
				before, after := denseEOf(w, m, hm), denseEOf(w, r, hm)
				if after > before*(1+1e-12) {
					t.Errorf("%s seed %d H %d: E %v → %v", name, seed, hi, before, after)
				}
				if rep.Applied != (r != m) {
					t.Errorf("%s seed %d H %d: Applied %v, but r == m is %v", name, seed, hi, rep.Applied, r == m)
				}
			}
		}
	}
}

// TestRefitHeldOut: fitting on the training rows' H must not fit noise:
// with 1024 training rows for 48 inputs the fit has K·groups·d + out
// parameters against out·1024 outputs, so the held-out output SNR (1024
// other rows of the same distribution) should move with the training one.
// The gains are logged; the assertion is that the mean held-out gain over
// four seeds is above −0.05 dB for every format (sampling noise of the
// two Hessians is what could make it negative; the gains themselves are
// tenths of a dB to dBs).
func TestRefitHeldOut(t *testing.T) {
	const out, in, rows = 64, 48, 1024
	for _, name := range []string{"LUT2 per-tensor + pcs", "LUT4 per-tensor + pcs", "LUT3 g16 + pcs", "vector 2x16 + pcs", "INT8 per-channel"} {
		var train, held float64
		const seeds = 4
		for seed := range uint64(seeds) {
			w := gaussian(out, in, true, 60+seed)
			ht := hessianOf(correlated(rows, in, 60+seed, 1))
			hh := hessianOf(correlated(rows, in, 60+seed, 2))
			m := quantizeFor(t, w, ht, name, true)
			r, rep, err := Refit(w, m, ht, RefitOptions{})
			if err != nil {
				t.Fatal(err)
			}
			train += rep.SNRAfter() - rep.SNRBefore()
			held += DequantOutputSNR(w, r, hh) - DequantOutputSNR(w, m, hh)
		}
		train, held = train/seeds, held/seeds
		t.Logf("%-22s mean gain: training %+.3f dB, held-out %+.3f dB", name, train, held)
		if held < -0.05 {
			t.Errorf("%s: held-out SNR worse by %.3f dB on average", name, -held)
		}
	}
}

// TestRefitUnusedEntry: an entry no index uses keeps its fp16 bits (its
// row and column of the normal equations are zero; the ridge pins it to
// its old value), while the used ones move.
func TestRefitUnusedEntry(t *testing.T) {
	const out, in = 16, 12
	w, h, _ := refitCase(out, in, 100, 3)
	f := mustFormat(t, "LUT2 per-tensor + pcs")
	codes := make([]uint8, out*in)
	for o := range out {
		for j, v := range w.Row(o) {
			codes[o*in+j] = min(2, uint8(max(0, math.Round(float64(v)/0.8+1))))
		}
	}
	idx := make([]byte, lut.PackedLen(len(codes), 2))
	lut.Pack(idx, codes, 2)
	scale, err := PCS(w)
	if err != nil {
		t.Fatal(err)
	}
	book := []uint16{toF16(-1), toF16(0.1), toF16(1), toF16(3)}
	m, err := lut.New(f, out, in, lut.Parts{LUT: book, Index: idx, Scale: scale})
	if err != nil {
		t.Fatal(err)
	}
	r, rep, err := Refit(w, m, h, RefitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := r.Parts().LUT
	if !rep.Applied || got[3] != book[3] || slices.Equal(got[:3], book[:3]) {
		t.Errorf("applied %v, LUT %v → %v: want entry 3 kept, the others moved", rep.Applied, book, got)
	}
}

// TestRefitUncached: recomputing the Gram matrices chunk by chunk in
// every pass (as for large K) gives the same bits as keeping them.
func TestRefitUncached(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"LUT3 g10 + pcs", "vector 2x16 g8 + pcs"} {
		w, h, hm := refitCase(40, 32, 200, 4)
		m := quantizeFor(t, w, h, name, true)
		var books, scales [2][]uint16
		for i := range 2 {
			rf, err := newRefitter(ctx, w, m, hm)
			if err != nil {
				t.Fatal(err)
			}
			if i == 1 {
				rf.gram, rf.chunk, rf.batch = nil, 7, 2
			}
			if books[i], scales[i], _, err = rf.run(ctx, 3); err != nil {
				t.Fatal(err)
			}
		}
		if !slices.Equal(books[0], books[1]) || !slices.Equal(scales[0], scales[1]) {
			t.Errorf("%s: recomputed Gram matrices changed the result", name)
		}
	}
}

// TestRefitDeterministic: the same bits with GOMAXPROCS = 1.
func TestRefitDeterministic(t *testing.T) {
	w, h, _ := refitCase(96, 80, 300, 5)
	for _, name := range []string{"LUT4 g16 + pcs", "vector 2x16 + pcs", "INT8 per-channel"} {
		m := quantizeFor(t, w, h, name, true)
		a, _, err := Refit(w, m, h, RefitOptions{})
		if err != nil {
			t.Fatal(err)
		}
		prev := runtime.GOMAXPROCS(1)
		b, _, err := Refit(w, m, h, RefitOptions{})
		runtime.GOMAXPROCS(prev)
		if err != nil {
			t.Fatal(err)
		}
		if where := samePartsBytes(a, b); where != "" {
			t.Errorf("%s: %s differs with GOMAXPROCS = 1", name, where)
		}
	}
}

// TestRefitUnquantized: bf16 and fp16 come back as they are.
func TestRefitUnquantized(t *testing.T) {
	w, h, _ := refitCase(8, 8, 20, 6)
	for _, name := range []string{"bf16", "fp16"} {
		m := quantizeFor(t, w, h, name, false)
		r, rep, err := Refit(w, m, nil, RefitOptions{})
		if err != nil || r != m || rep.Applied {
			t.Errorf("%s: %v, %+v, same matrix %v", name, err, rep, r == m)
		}
	}
}

// TestRefitErrors: bad inputs are errors wrapping ErrInput (a cancelled
// context: its error), never panics.
func TestRefitErrors(t *testing.T) {
	const out, in = 16, 8
	w, h, _ := refitCase(out, in, 50, 7)
	m := quantizeFor(t, w, h, "LUT2 per-tensor + pcs", false)
	nan := tensor.New(out, in)
	copy(nan.Data, w.Data)
	nan.Data[5] = float32(math.NaN())
	diagOnly := &Hessian{DiagOnly: true}
	diagOnly.Add(correlated(20, in, 1, 1))
	xnan := correlated(20, in, 1, 1)
	xnan.Data[3] = float32(math.Inf(1))
	lowRank, err := rebuild(m, func(p *lut.Parts) {
		p.LowRankA, p.LowRankB = make([]uint16, out), make([]uint16, in)
	})
	if err != nil {
		t.Fatal(err)
	}
	rotated, err := rebuild(m, func(p *lut.Parts) { p.Rotation = lut.NewHadamard(in, 1) })
	if err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		name string
		w    *tensor.Matrix
		m    *lut.Matrix
		h    *Hessian
		opt  RefitOptions
		want error
	}{
		{"shape", gaussian(out, in+1, false, 1), m, h, RefitOptions{}, ErrInput},
		{"nil Hessian", w, m, nil, RefitOptions{}, ErrInput},
		{"empty Hessian", w, m, &Hessian{}, RefitOptions{}, ErrInput},
		{"Hessian width", w, m, hessianOf(correlated(20, in+2, 1, 1)), RefitOptions{}, ErrInput},
		{"DiagOnly", w, m, diagOnly, RefitOptions{}, ErrInput},
		{"Hessian not finite", w, m, hessianOf(xnan), RefitOptions{}, ErrInput},
		{"NaN weight", nan, m, h, RefitOptions{}, ErrInput},
		{"NaN weight INT8", nan, quantizeFor(t, w, h, "INT8 per-channel", false), h, RefitOptions{}, ErrInput},
		{"low rank", w, lowRank, h, RefitOptions{}, ErrInput},
		{"rotation", w, rotated, h, RefitOptions{}, ErrInput},
		{"Iters", w, m, h, RefitOptions{Iters: -1}, ErrInput},
		{"cancelled", w, m, h, RefitOptions{Context: cancelled}, context.Canceled},
		{"cancelled INT8", w, quantizeFor(t, w, h, "INT8 per-channel", false), h, RefitOptions{Context: cancelled}, context.Canceled},
	} {
		r, _, err := Refit(c.w, c.m, c.h, c.opt)
		if !errors.Is(err, c.want) || r != nil {
			t.Errorf("%s: %v (matrix %v), want %v", c.name, err, r, c.want)
		}
	}
}

// BenchmarkRefit times Refit of LUT4, 2x16 and INT8 matrices (the codes
// from RTN: Refit's cost does not depend on them) with H from 2048
// correlated rows, at a small shape and a 27B-like MLP width, and reports
// the training output SNR gained (dB).
func BenchmarkRefit(b *testing.B) {
	for _, sh := range [][2]int{{768, 256}, {2048, 5632}} {
		out, in := sh[0], sh[1]
		w := gaussian(out, in, true, 1)
		t0 := time.Now()
		h := hessianOf(factorRows(2048, in, 2))
		b.Logf("%dx%d: Hessian of 2048 rows in %v", out, in, time.Since(t0))
		for _, name := range []string{"LUT4 per-tensor + pcs", "vector 2x16 + pcs", "INT8 per-channel"} {
			m := quantizeFor(b, w, h, name, false)
			b.Run(fmt.Sprintf("%dx%d/%s", out, in, m.Format()), func(b *testing.B) {
				var rep RefitReport
				for b.Loop() {
					var err error
					if _, rep, err = Refit(w, m, h, RefitOptions{}); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s")
				b.ReportMetric(rep.SNRAfter()-rep.SNRBefore(), "dB")
			})
		}
	}
}
