package lcpp

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// trueLogProbs is log-softmax in float64, the reference for Compress.
func trueLogProbs(z []float32) []float64 {
	m := float64(slices.Max(z))
	var s float64
	for _, v := range z {
		s += math.Exp(float64(v) - m)
	}
	out := make([]float64, len(z))
	for i, v := range z {
		out[i] = float64(v) - m - math.Log(s)
	}
	return out
}

// TestCompressRoundTrip: decoding the uint16 codes gives every
// log-probability whose logit is above max − 16 to within scale/2, and the
// floor min_log_prob (code 0) for the rest.
func TestCompressRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cases := []struct {
		name   string
		vocab  int
		spread float64 // logits are spread·N(0,1)
	}{
		{"narrow: range below 16, nothing clamped", 300, 1},
		{"wide: range above 16, tail clamped", 4160, 8},
		{"odd vocabulary", 1001, 5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			z := make([]float32, c.vocab)
			for i := range z {
				z[i] = float32(c.spread * rng.NormFloat64())
			}
			codes := make([]uint16, len(z))
			scale, mlp := Compress(codes, z)
			lp := trueLogProbs(z)
			maxZ := slices.Max(z)
			// Rounding to the nearest code errs by at most scale/2; the float32
			// steps (min_log_prob ≈ −20 carries ~1e-6 of rounding, the code
			// ~65535·6e-8 codes) add far less than 1e-5.
			tol := float64(scale)/2 + 1e-5
			var above, below int
			for i, q := range codes {
				got := float64(LogProb(scale, mlp, q))
				if z[i] > maxZ-16 {
					above++
					if d := math.Abs(got - lp[i]); d > tol {
						t.Fatalf("entry %d: decoded %.7f, true %.7f (|Δ| %.2g > %.2g)", i, got, lp[i], d, tol)
					}
					continue
				}
				below++
				if q != 0 || got != float64(mlp) || got < lp[i] {
					t.Fatalf("entry %d below the clamp: code %d, decoded %v, true %v; want code 0 decoding to the floor %v ≥ true",
						i, q, got, lp[i], mlp)
				}
			}
			if c.spread >= 8 && below == 0 {
				t.Errorf("no entry below max − 16: the case does not exercise the clamp")
			}
			if want := (float64(maxZ) - max(float64(slices.Min(z)), float64(maxZ)-16)) / 65535; math.Abs(float64(scale)-want) > 1e-6*want {
				t.Errorf("scale %v, want (max − min)/65535 = %v", scale, want)
			}
		})
	}
	t.Run("constant row", func(t *testing.T) {
		z := []float32{2, 2, 2, 2}
		codes := []uint16{9, 9, 9, 9}
		scale, mlp := Compress(codes, z)
		if scale != 0 || slices.Max(codes) != 0 || math.Abs(float64(mlp)+math.Log(4)) > 1e-6 {
			t.Errorf("scale %v, codes %v, min_log_prob %v; want 0, zeros, −log 4", scale, codes, mlp)
		}
	})
}

// TestWindows: n_chunk = ⌊n/n_ctx⌋ with at least 2·n_ctx tokens, the
// scored positions n_ctx/2 … n_ctx−2 (255 at 512), and BOS replacement.
func TestWindows(t *testing.T) {
	for _, c := range []struct{ n, nCtx, want int }{{1024, 512, 2}, {1535, 512, 2}, {1536, 512, 3}, {300, 128, 2}, {6, 3, 2}} {
		got, err := Chunks(c.n, c.nCtx)
		if err != nil || got != c.want {
			t.Errorf("Chunks(%d, %d) = %d, %v; want %d", c.n, c.nCtx, got, err, c.want)
		}
	}
	for _, c := range []struct{ n, nCtx int }{{1023, 512}, {0, 512}, {255, 128}, {100, 2}} {
		if _, err := Chunks(c.n, c.nCtx); !errors.Is(err, ErrShort) {
			t.Errorf("Chunks(%d, %d): err %v, want ErrShort", c.n, c.nCtx, err)
		}
	}
	for _, c := range []struct{ nCtx, first, n int }{{512, 256, 255}, {128, 64, 63}, {513, 256, 256}, {3, 1, 1}} {
		first, n := Scored(c.nCtx)
		if first != c.first || n != c.n {
			t.Errorf("Scored(%d) = %d, %d; want %d, %d", c.nCtx, first, n, c.first, c.n)
		}
		// The last scored position predicts the window's last token.
		if last := first + n - 1; last+1 != c.nCtx-1 {
			t.Errorf("n_ctx %d: last scored position %d predicts token %d, want %d", c.nCtx, last, last+1, c.nCtx-1)
		}
	}
	tokens := make([]int, 20)
	for i := range tokens {
		tokens[i] = 100 + i
	}
	orig := slices.Clone(tokens)
	w := Window(nil, tokens, 8, 1, 7)
	if want := []int{7, 109, 110, 111, 112, 113, 114, 115}; !slices.Equal(w, want) {
		t.Errorf("window 1 with BOS 7 = %v, want %v", w, want)
	}
	if !slices.Equal(tokens, orig) {
		t.Error("Window changed the stored tokens")
	}
	if w = Window(w, tokens, 8, 0, -1); !slices.Equal(w, tokens[:8]) {
		t.Errorf("window 0 without BOS = %v", w)
	}
}

// TestScoreHand: one position with exactly representable base
// log-probabilities (scale 0.5, min_log_prob −20): log p_B = −1, −2, −2 and
// −20 (below −16, so left out of the KL), against logits z = 0, 1, 0, −50.
func TestScoreHand(t *testing.T) {
	codes := []uint16{38, 36, 36, 0} // −20 + 0.5·q
	z := []float32{0, 1, 0, -50}
	p := Score(z, codes, 0.5, -20, 1)
	L := math.Log(2 + math.E + math.Exp(-50)) // logsumexp(z)
	wantKL := math.Exp(-1)*(-1-(0-L)) + math.Exp(-2)*(-2-(1-L)) + math.Exp(-2)*(-2-(0-L))
	want := Position{NLL: L - 1, NLLBase: 2, KLD: wantKL,
		DeltaP: math.E/(2+math.E) - math.Exp(-2), SameTop: false} // argmax z = 1, argmax base = 0
	// float64 throughout, with base log-probabilities exact in float32.
	const tol = 1e-12
	if math.Abs(p.NLL-want.NLL) > tol || math.Abs(p.NLLBase-want.NLLBase) > tol || math.Abs(p.KLD-want.KLD) > tol ||
		math.Abs(p.DeltaP-want.DeltaP) > tol || p.SameTop != want.SameTop {
		t.Errorf("got %+v\nwant %+v", p, want)
	}
	// Ties go to the first index on both sides.
	for _, c := range []struct {
		z     []float32
		codes []uint16
		same  bool
	}{
		{[]float32{3, 3, 1}, []uint16{5, 5, 1}, true},
		{[]float32{1, 3, 3}, []uint16{5, 5, 1}, false},
		{[]float32{1, 3, 3}, []uint16{1, 5, 5}, true},
	} {
		if got := Score(c.z, c.codes, 0.5, -20, 0).SameTop; got != c.same {
			t.Errorf("z %v, codes %v: SameTop %v, want %v", c.z, c.codes, got, c.same)
		}
	}
	// The same logits against their own compressed base: nll_B within scale/2
	// of nll_Q, a KL near zero (|first-order term| ≤ scale/2) and the same top.
	rng := rand.New(rand.NewPCG(3, 4))
	z = make([]float32, 500)
	for i := range z {
		z[i] = float32(4 * rng.NormFloat64())
	}
	codes = make([]uint16, len(z))
	scale, mlp := Compress(codes, z)
	self := Score(z, codes, scale, mlp, 17)
	if tol := float64(scale)/2 + 1e-5; math.Abs(self.NLL-self.NLLBase) > tol || math.Abs(self.KLD) > tol || !self.SameTop {
		t.Errorf("self comparison %+v (scale %v)", self, scale)
	}
}

// TestStatsHand checks the aggregate formulas on small samples whose
// values are worked out by hand in the comments.
func TestStatsHand(t *testing.T) {
	near := func(name string, got, want, tol float64) {
		t.Helper()
		if math.Abs(got-want) > tol {
			t.Errorf("%s = %.9g, want %.9g", name, got, want)
		}
	}
	// x = 1…12: mean 6.5; Σx²/N − mean² = 650/12 − 42.25 = 143/12 (= (N²−1)/12);
	// se = sqrt(143/12/11) = sqrt(13/12) = 1.0408330.
	var s1, s2 float64
	for x := 1.0; x <= 12; x++ {
		s1, s2 = s1+x, s2+x*x
	}
	e := meanSE(s1, s2, 12)
	near("mean", e.Value, 6.5, 1e-12)
	near("se", e.Unc, math.Sqrt(13.0/12), 1e-12)
	if e := meanSE(55, 385, 10); e.Unc != 0 || e.Value != 5.5 { // 1…10: N ≤ 10 → se 0
		t.Errorf("N = 10: %+v, want 5.5 ± 0", e)
	}
	if e := meanSE(36, 36*3, 12); e.Unc != 0 { // all 3: variance 0 → se 0
		t.Errorf("constant: %+v, want se 0", e)
	}
	// b = 2x: cov = (Σ 2x²/N − 6.5·13)/11 = 2·(143/12)/11 = 13/6; cor = cov/(se_a·se_b) = 1.
	cov := covariance(s1, 2*s1, 2*s2, 12)
	near("cov", cov, 13.0/6, 1e-12)
	near("cor", cov/(e.Unc*2*e.Unc), 1, 1e-12)
	near("cov(x, −x)", covariance(s1, -s1, -s2, 12), -13.0/12, 1e-12) // −(143/12)/11
	if c := covariance(1, 2, 3, 9); c != 0 {
		t.Errorf("cov with N = 9 is %v, want 0", c)
	}
	// Percentiles at f·(N−1) with linear interpolation.
	five := []float64{1, 2, 3, 4, 5}
	for _, c := range []struct{ f, want float64 }{{0, 1}, {1, 5}, {0.5, 3}, {0.9, 4.6}, {0.999, 4.996}, {0.1, 1.4}, {0.001, 1.004}} {
		near("percentile", percentile(five, c.f), c.want, 1e-12)
	}
	near("median of 4", percentile([]float64{1, 2, 3, 4}, 0.5), 2.5, 1e-12) // mean of the middle two
	// Same top p: 9 of 12 → 0.75 ± sqrt(0.75·0.25/11) = 0.1305582.
	var st Stats
	for i := range 12 {
		st.Add(Position{SameTop: i < 9})
	}
	got := st.sameTop()
	near("same top", got.Value, 0.75, 1e-15)
	near("same top unc", got.Unc, math.Sqrt(0.75*0.25/11), 1e-15)
	if r := st.Report(8, 10, 4); r.Enough || r.N != 12 {
		t.Errorf("12 positions: Enough %v, N %d; want false, 12", r.Enough, r.N)
	}
}

// TestReportTwoPass compares the report of 150 seeded positions with
// textbook two-pass formulas computed here from the raw values.
func TestReportTwoPass(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var st Stats
	var ps []Position
	for i := range 150 {
		b := 2 + rng.NormFloat64()
		p := Position{NLLBase: b, NLL: b + 0.1 + 0.05*rng.NormFloat64(), KLD: 0.02 * rng.ExpFloat64(),
			DeltaP: 0.03 * rng.NormFloat64(), SameTop: rng.Float64() < 0.8}
		ps = append(ps, p)
		st.Add(p)
		if i%50 == 49 {
			st.EndChunk()
		}
	}
	r := st.Report(101, 7, 3)
	N := float64(len(ps))
	mean := func(f func(Position) float64) float64 {
		var s float64
		for _, p := range ps {
			s += f(p)
		}
		return s / N
	}
	// se of a mean: sqrt(Σ(x − mean)²/N/(N−1)); cov alike.
	cov := func(f, g func(Position) float64) float64 {
		mf, mg := mean(f), mean(g)
		var s float64
		for _, p := range ps {
			s += (f(p) - mf) * (g(p) - mg)
		}
		return s / N / (N - 1)
	}
	nll := func(p Position) float64 { return p.NLL }
	nllB := func(p Position) float64 { return p.NLLBase }
	kld := func(p Position) float64 { return p.KLD }
	dp := func(p Position) float64 { return p.DeltaP }
	dp2 := func(p Position) float64 { return p.DeltaP * p.DeltaP }
	seQ, seB, c := math.Sqrt(cov(nll, nll)), math.Sqrt(cov(nllB, nllB)), cov(nll, nllB)
	// One-pass (llama.cpp) against two-pass sums: agreement to ~1e-12
	// relative; 1e-9 leaves room for cancellation in Σx²/N − mean².
	near := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9*max(1, math.Abs(want)) {
			t.Errorf("%s = %.12g, want %.12g", name, got, want)
		}
	}
	near("PPL", r.PPL.Value, math.Exp(mean(nll)))
	near("PPL unc", r.PPL.Unc, math.Exp(mean(nll))*seQ)
	near("PPL base", r.PPLBase.Value, math.Exp(mean(nllB)))
	near("cor", *r.CorLnPPL, c/(seQ*seB))
	lnRatioUnc := math.Sqrt(seQ*seQ + seB*seB - 2*c)
	near("ln ratio", r.LnPPLRatio.Value, mean(nll)-mean(nllB))
	near("ln ratio unc", r.LnPPLRatio.Unc, lnRatioUnc)
	near("ratio unc", r.PPLRatio.Unc, math.Exp(mean(nll)-mean(nllB))*lnRatioUnc)
	pq, pb := math.Exp(mean(nll)), math.Exp(mean(nllB))
	near("diff unc", r.PPLDiff.Unc, math.Sqrt(pq*pq*seQ*seQ+pb*pb*seB*seB-2*pq*pb*c))
	near("KLD", r.KLD.Value, mean(kld))
	near("KLD se", r.KLD.Unc, math.Sqrt(cov(kld, kld)))
	near("Δp se", r.DeltaP.Unc, math.Sqrt(cov(dp, dp)))
	near("RMS Δp", r.RMSDeltaP.Value, math.Sqrt(mean(dp2)))
	near("RMS Δp unc", r.RMSDeltaP.Unc, math.Sqrt(cov(dp2, dp2))/(2*math.Sqrt(mean(dp2))))
	sorted := make([]float64, len(ps))
	for i, p := range ps {
		sorted[i] = p.KLD
	}
	slices.Sort(sorted)
	if got := r.KLDPercentiles; len(got) != 11 || got[0].Value != sorted[149] || got[10].Value != sorted[0] ||
		got[5].Value != (sorted[74]+sorted[75])/2 {
		t.Errorf("KLD percentiles %v", got)
	}
	// 0.99·149 = 147.51: 0.49·v[147] + 0.51·v[148].
	near("99% KLD", r.KLDPercentiles[2].Value, 0.49*sorted[147]+0.51*sorted[148])
	if len(r.DeltaPPercentiles) != 13 || len(r.Chunks) != 3 || r.Chunks[2].KLD != r.KLD || r.N != 150 || !r.Enough {
		t.Errorf("Δp percentiles %d, chunks %d, N %d, Enough %v", len(r.DeltaPPercentiles), len(r.Chunks), r.N, r.Enough)
	}
}
