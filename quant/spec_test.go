package quant

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"forge/checkpoint"
	"forge/lut"
	"forge/tensor"
)

// oldPipeline is the per-matrix pipeline as the root package ran it before
// Spec (quantize_run.go's quantizer.quantize, lowRank, outputSNR and
// withoutRotation, with the work store and logging left out), kept as the
// reference twin that Spec.Quantize must reproduce byte for byte. snr is
// nil without held-out rows; SNRs are capped at 999 as it did.
func oldPipeline(ctx context.Context, w *tensor.Matrix, f lut.Format, method string, aw bool, rotSeed *uint64,
	rank int, weighted bool, seed, cfgSeed uint64, st *Stats) (*lut.Matrix, *[3]float64, error) {
	out, in := w.Rows, w.Cols
	var rot *lut.Hadamard
	if rotSeed != nil {
		rot = lut.NewHadamard(in, *rotSeed)
		wr := tensor.New(out, in)
		rot.Rotate(wr, w)
		w = wr
	}
	opt := Options{Seed: seed, Context: ctx}
	var h *Hessian
	if st != nil {
		h = st.Train
	}
	var lm, rm *lut.Matrix
	var err error
	if method == "gptq" {
		lm, rm, err = GPTQ{Format: f, AW: aw, Options: opt}.QuantizeWithRTN(w, h)
	} else {
		lm, err = Nearest{Format: f, AW: aw, Options: opt}.Quantize(w, h)
		rm = lm
	}
	if err != nil {
		return nil, nil, err
	}
	outputSNR := func(w *tensor.Matrix, lm *lut.Matrix, h *Hessian) float64 {
		d := tensor.New(out, in)
		lm.Dequantize(d)
		v := OutputSNR(w, d, h)
		if math.IsInf(v, 1) {
			return 999
		}
		return v
	}
	p := lm.Parts()
	var snr *[3]float64 // rtn, method, final
	if st != nil && st.Held.Rows() > 0 {
		snr = &[3]float64{}
		snr[1] = outputSNR(w, lm, st.Held)
		snr[0] = snr[1]
		if rm != lm {
			snr[0] = outputSNR(w, rm, st.Held)
		}
	}
	if rank > 0 {
		e := tensor.New(out, in)
		lm.Dequantize(e)
		for i := range e.Data[:out*in] {
			e.Data[i] = w.Data[i] - e.Data[i]
		}
		lopt := LowRankOptions{Seed: cfgSeed}
		if weighted {
			lopt.Hessian = st.Train.Matrix()
		}
		fit, err := LowRank(e, rank, lopt)
		if err != nil {
			return nil, nil, err
		}
		a, b := make([]uint16, out*rank), make([]uint16, rank*in)
		for o := range out {
			copy(a[o*rank:o*rank+fit.Rank], fit.A[o*fit.Rank:(o+1)*fit.Rank])
		}
		copy(b, fit.B)
		p.LowRankA, p.LowRankB = a, b
	}
	if rot != nil {
		p.Rotation = rot
	}
	if lm, err = lut.New(f, out, in, p); err != nil {
		return nil, nil, err
	}
	if snr != nil {
		snr[2] = snr[1]
		if rank > 0 {
			q := lm.Parts()
			q.Rotation = nil
			bare, err := lut.New(lm.Format(), out, in, q)
			if err != nil {
				return nil, nil, err
			}
			snr[2] = outputSNR(w, bare, st.Held)
		}
	}
	return lm, snr, nil
}

// tinyMatrix reads one matrix of models/forge-tiny as float32.
func tinyMatrix(t *testing.T, name string) *tensor.Matrix {
	t.Helper()
	ck, err := checkpoint.Open(filepath.Join("..", "models", "forge-tiny"))
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	for _, ti := range ck.Tensors() {
		if ti.Spec.Name == name {
			v, err := ck.Vector(name)
			if err != nil {
				t.Fatal(err)
			}
			return tensor.FromSlice(ti.Spec.Shape[0], ti.Spec.Shape[1], v)
		}
	}
	t.Fatalf("forge-tiny has no %s", name)
	return nil
}

// diffMatrices says where two matrices differ in anything a bundle stores
// (arrays, rank, rotation seed and block); "" if nowhere.
func diffMatrices(a, b *lut.Matrix) string {
	if d := samePartsBytes(a, b); d != "" {
		return d
	}
	pa, pb := a.Parts(), b.Parts()
	switch {
	case a.Format() != b.Format() || a.Rank() != b.Rank():
		return fmt.Sprintf("format/rank %s %d vs %s %d", a.Format(), a.Rank(), b.Format(), b.Rank())
	case !slices.Equal(pa.LowRankA, pb.LowRankA):
		return "LowRankA"
	case !slices.Equal(pa.LowRankB, pb.LowRankB):
		return "LowRankB"
	case (pa.Rotation == nil) != (pb.Rotation == nil):
		return "rotation present on one side only"
	}
	if pa.Rotation != nil {
		ha, hb := pa.Rotation.(*lut.Hadamard), pb.Rotation.(*lut.Hadamard)
		if ha.Seed() != hb.Seed() || ha.Block() != hb.Block() || ha.Width() != hb.Width() {
			return "rotation"
		}
	}
	return ""
}

// TestSpecMatchesOldPipeline: Spec.Quantize stores exactly the arrays (and
// reports exactly the SNRs) the root's pipeline made before it moved here,
// on forge-tiny matrices with Hessians of correlated random inputs (600
// training rows, 100 held out): RTN LUT4 without and with statistics,
// GPTQ + AW + rotation, and GPTQ with a rank-4 weighted low-rank
// correction (with and without a rotation). Equality is exact: both run
// the same float operations in the same order.
func TestSpecMatchesOldPipeline(t *testing.T) {
	lut4 := mustFormat(t, "LUT4 per-tensor + pcs")
	rot := func(s uint64) *uint64 { return &s }
	cases := []struct {
		name, matrix string
		spec         Spec
		stats        bool
	}{
		{"RTN LUT4, no calibration", "layers.0.mlp.down_proj.weight", Spec{Format: lut4, Seed: 7}, false},
		{"RTN LUT4 + AW", "layers.0.mlp.down_proj.weight", Spec{Format: lut4, AW: true, Seed: 7}, true},
		{"GPTQ + AW + rotation", "layers.1.mlp.up_proj.weight",
			Spec{Format: lut4, Method: MethodGPTQ, AW: true, Rotation: rot(1001), Seed: 12}, true},
		{"GPTQ + rank-4 weighted", "layers.0.linear_attn.in_proj_qkv.weight",
			Spec{Format: lut4, Method: MethodGPTQ, Rank: 4, Weighted: true, Seed: 3, LowRankSeed: 5}, true},
		{"GPTQ + AW + rotation + rank 4", "layers.2.mlp.down_proj.weight",
			Spec{Format: mustFormat(t, "LUT2 per-tensor + pcs"), Method: MethodGPTQ, AW: true, Rotation: rot(2002),
				Rank: 4, Seed: 9, LowRankSeed: 5}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := tinyMatrix(t, c.matrix)
			orig := slices.Clone(w.Data)
			var st *Stats
			if c.stats {
				st = &Stats{Train: hessianOf(correlated(600, w.Cols, 41, 1)), Held: hessianOf(correlated(100, w.Cols, 41, 2))}
			}
			method := ""
			if c.spec.Method == MethodGPTQ {
				method = "gptq"
			}
			want, wantSNR, err := oldPipeline(context.Background(), w, c.spec.Format, method, c.spec.AW, c.spec.Rotation,
				c.spec.Rank, c.spec.Weighted, c.spec.Seed, c.spec.LowRankSeed, st)
			if err != nil {
				t.Fatal(err)
			}
			got, rep, err := c.spec.Quantize(context.Background(), w, st)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(w.Data, orig) {
				t.Error("Quantize modified W")
			}
			if d := diffMatrices(got, want); d != "" {
				t.Errorf("Spec.Quantize differs from the old pipeline in %s", d)
			}
			if (rep == nil) != (wantSNR == nil) {
				t.Fatalf("report %v, old SNRs %v", rep, wantSNR)
			}
			if rep != nil {
				capped := func(v float64) float64 { return min(v, 999) }
				if g := [3]float64{capped(rep.RTN), capped(rep.Method), capped(rep.Final)}; g != *wantSNR {
					t.Errorf("SNRs (rtn, method, final) %v, old pipeline %v", g, *wantSNR)
				}
				t.Logf("held-out SNR: rtn %.2f, %s %.2f, final %.2f dB", rep.RTN, c.spec.Method, rep.Method, rep.Final)
			}
		})
	}
}

// TestSpecErrors: a Spec the statistics cannot serve is refused with an
// error wrapping ErrInput that names the problem in the library's terms
// (no command-line flag).
func TestSpecErrors(t *testing.T) {
	w := gaussian(32, 64, true, 1)
	st := &Stats{Train: hessianOf(correlated(100, 64, 1, 1)), Held: hessianOf(correlated(20, 64, 1, 2))}
	lut4 := mustFormat(t, "LUT4 per-tensor + pcs")
	cases := []struct {
		name string
		spec Spec
		st   *Stats
		want string
	}{
		{"GPTQ without statistics", Spec{Format: lut4, Method: MethodGPTQ}, nil, "no Hessian"},
		{"AW without statistics", Spec{Format: lut4, AW: true}, nil, "no Hessian"},
		{"weighted without statistics", Spec{Format: lut4, Rank: 2, Weighted: true}, &Stats{}, "training Hessian"},
		{"low rank on bf16", Spec{Format: mustFormat(t, "bf16"), Rank: 2}, st, "needs a quantized format"},
		{"negative rank", Spec{Format: lut4, Rank: -1}, st, "negative"},
		{"rank above the smaller side", Spec{Format: lut4, Rank: 33}, st, "rank 33"},
		{"unknown method", Spec{Format: lut4, Method: 7}, st, "method 7"},
	}
	for _, c := range cases {
		_, _, err := c.spec.Quantize(context.Background(), w, c.st)
		if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "--") {
			t.Errorf("%s: %v, want ErrInput naming %q and no flag", c.name, err, c.want)
		}
	}
	if _, err := ParseMethod("awq"); err == nil || !strings.Contains(err.Error(), `"awq"`) {
		t.Errorf("ParseMethod(awq): %v", err)
	}
	for s, want := range map[string]Method{"": MethodRTN, "rtn": MethodRTN, "gptq": MethodGPTQ} {
		if m, err := ParseMethod(s); err != nil || m != want || (s != "" && m.String() != s) {
			t.Errorf("ParseMethod(%q) = %v, %v", s, m, err)
		}
	}
}

// TestSpecContext: a cancelled context stops GPTQ (Options.Context) and
// Spec.Quantize returns its error.
func TestSpecContext(t *testing.T) {
	w := gaussian(64, 256, true, 2)
	st := &Stats{Train: hessianOf(correlated(300, 256, 2, 1))}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := Spec{Format: mustFormat(t, "LUT4 per-tensor + pcs"), Method: MethodGPTQ}.Quantize(ctx, w, st)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled GPTQ: %v, want context.Canceled", err)
	}
}

// TestRotated: W·M equals lut.Hadamard.Rotate of W bit for bit, W is left
// as it was, and the rotation has the seed and width asked for.
func TestRotated(t *testing.T) {
	w := gaussian(5, 96, true, 3)
	orig := slices.Clone(w.Data)
	wr, h := Rotated(w, 1007)
	want := tensor.New(5, 96)
	lut.NewHadamard(96, 1007).Rotate(want, w)
	if !slices.Equal(wr.Data, want.Data) || !slices.Equal(w.Data, orig) {
		t.Error("Rotated is not W·M, or it modified W")
	}
	if h.Seed() != 1007 || h.Width() != 96 || h.Block() != 32 {
		t.Errorf("rotation seed %d width %d block %d", h.Seed(), h.Width(), h.Block())
	}
}

// TestCorrection: the factors are LowRank's fit of W − Ŵ at rank exactly
// r, zero-padded when LowRank keeps fewer components (all of them when
// W = Ŵ), and the corrected matrix is closer to W than the uncorrected one.
func TestCorrection(t *testing.T) {
	const out, in, r = 48, 64, 4
	f := mustFormat(t, "LUT4 per-tensor + pcs")
	w := gaussian(out, in, true, 4)
	m, err := RTN(w, f, Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	a, b, err := Correction(w, m, r, LowRankOptions{Seed: 1})
	if err != nil || len(a) != out*r || len(b) != r*in {
		t.Fatalf("len(A) %d, len(B) %d, %v", len(a), len(b), err)
	}
	fixed, err := rebuild(m, func(p *lut.Parts) { p.LowRankA, p.LowRankB = a, b })
	if err != nil {
		t.Fatal(err)
	}
	if before, after := SNR(w, dequant(m)), SNR(w, dequant(fixed)); !(after > before) {
		t.Errorf("SNR %.3f dB before the correction, %.3f after", before, after)
	}
	// The factors are LowRank's of W − Ŵ, padded.
	e := dequant(m)
	for k := range e.Data {
		e.Data[k] = w.Data[k] - e.Data[k]
	}
	fit, err := LowRank(e, r, LowRankOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for o := range out {
		for c := range r {
			want := uint16(0)
			if c < fit.Rank {
				want = fit.A[o*fit.Rank+c]
			}
			if a[o*r+c] != want {
				t.Fatalf("A[%d][%d] = %#x, LowRank gives %#x (rank %d)", o, c, a[o*r+c], want, fit.Rank)
			}
		}
	}
	if !slices.Equal(b[:len(fit.B)], fit.B) || slices.ContainsFunc(b[len(fit.B):], func(v uint16) bool { return v != 0 }) {
		t.Error("B is not LowRank's B padded with zero rows")
	}
	// W = Ŵ: no error, LowRank keeps no component, the factors are all zero.
	a, b, err = Correction(dequant(m), m, r, LowRankOptions{Seed: 1})
	if err != nil || len(a) != out*r || len(b) != r*in {
		t.Fatalf("exact W: len(A) %d, len(B) %d, %v", len(a), len(b), err)
	}
	if slices.ContainsFunc(a, func(v uint16) bool { return v != 0 }) || slices.ContainsFunc(b, func(v uint16) bool { return v != 0 }) {
		t.Error("exact W: nonzero factors, want the zero padding of rank 0")
	}
	if _, _, err := Correction(gaussian(out+1, in, false, 1), m, r, LowRankOptions{}); !errors.Is(err, ErrInput) {
		t.Errorf("mismatched shapes: %v", err)
	}
}

// TestDequantOutputSNR: it is OutputSNR of the dequantized matrix,
// correction included.
func TestDequantOutputSNR(t *testing.T) {
	w := gaussian(32, 64, true, 5)
	h := hessianOf(correlated(200, 64, 5, 1))
	m, err := RTN(w, mustFormat(t, "LUT3 per-tensor + pcs"), Options{Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := DequantOutputSNR(w, m, h), OutputSNR(w, dequant(m), h); got != want {
		t.Errorf("DequantOutputSNR %v, OutputSNR of the dequantized matrix %v", got, want)
	}
}

// TestSpecRefit: with Refit, the refit values are kept exactly when their
// held-out SNR is above the method's (the matrix returned then has that
// SNR, and its indices are the method's), otherwise the method's matrix is
// returned bit for bit; without Refit the report has no refit SNR. Run on
// a few matrices of forge-tiny so that both outcomes can occur; at least
// one must be kept (the refit minimizes the training error, and the
// held-out rows come from the same distribution).
func TestSpecRefit(t *testing.T) {
	lut4 := mustFormat(t, "LUT4 per-tensor + pcs")
	kept := 0
	for i, name := range []string{"layers.0.mlp.down_proj.weight", "layers.1.mlp.up_proj.weight", "layers.0.linear_attn.in_proj_qkv.weight"} {
		w := tinyMatrix(t, name)
		st := &Stats{Train: hessianOf(correlated(600, w.Cols, 41, 1)), Held: hessianOf(correlated(100, w.Cols, 41, 2))}
		base := Spec{Format: lut4, Method: MethodGPTQ, AW: true, Seed: uint64(i)}
		plain, prep, err := base.Quantize(context.Background(), w, st)
		if err != nil {
			t.Fatal(err)
		}
		if !math.IsNaN(prep.Refit) || prep.Refitted {
			t.Errorf("%s: no refit asked, report %+v", name, prep)
		}
		base.Refit = true
		got, rep, err := base.Quantize(context.Background(), w, st)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Method != prep.Method {
			t.Errorf("%s: the method's SNR moved: %.4f, without refit %.4f", name, rep.Method, prep.Method)
		}
		codes, plainCodes := make([]uint8, w.Rows*w.Cols), make([]uint8, w.Rows*w.Cols)
		got.Codes(codes)
		plain.Codes(plainCodes)
		if !slices.Equal(codes, plainCodes) {
			t.Errorf("%s: the refit changed indices", name)
		}
		switch {
		case rep.Refitted:
			kept++
			if !(rep.Refit > rep.Method) || rep.Final != rep.Refit || DequantOutputSNR(w, got, st.Held) != rep.Refit {
				t.Errorf("%s: kept with refit %.4f, method %.4f, final %.4f", name, rep.Refit, rep.Method, rep.Final)
			}
		default:
			if d := diffMatrices(got, plain); d != "" || rep.Final != rep.Method {
				t.Errorf("%s: not kept, yet the matrix differs (%s) or final %.4f ≠ method %.4f", name, d, rep.Final, rep.Method)
			}
		}
		t.Logf("%s: held-out SNR %s %.3f dB, refit %.3f dB (kept %v)", name, base.Method, rep.Method, rep.Refit, rep.Refitted)
	}
	if kept == 0 {
		t.Error("the refit was kept on none of the matrices")
	}
}
