package eval

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

// TestPercentile: five values, positions f·(N−1) = f·4 with linear
// interpolation.
func TestPercentile(t *testing.T) {
	s := []float64{1, 2, 3, 4, 10}
	for _, c := range []struct{ f, want float64 }{
		{0, 1},
		{0.25, 2},            // position 1
		{0.5, 3},             // position 2
		{0.9, 4 + 0.6*6},     // position 3.6: 4 + 0.6·(10 − 4)
		{0.99, 4 + 0.96*6},   // position 3.96
		{0.999, 4 + 0.996*6}, // position 3.996
		{1, 10},
		{0.1, 1 + 0.4*1}, // position 0.4
	} {
		if got := Percentile(s, c.f); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("Percentile(%g) = %g, want %g", c.f, got, c.want)
		}
	}
	if !math.IsNaN(Percentile(nil, 0.5)) || Percentile([]float64{7}, 0.99) != 7 {
		t.Error("empty or single-value percentiles")
	}
}

// TestStdErr: zero for N ≤ 10, else sqrt((Σx²/N − mean²)/(N−1)).
func TestStdErr(t *testing.T) {
	if StdErr([]float64{1, 2, 3}) != 0 {
		t.Error("N ≤ 10 must give 0")
	}
	x := []float64{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 11} // N = 11, mean 1, Σx²/N = 11
	if got, want := StdErr(x), math.Sqrt((11.0-1)/10); math.Abs(got-want) > 1e-12 {
		t.Errorf("StdErr = %g, want %g", got, want)
	}
}

// TestSummarize: every statistic of a hand-made result of four positions.
func TestSummarize(t *testing.T) {
	res := &Result{
		Definition: "full",
		KL:         []float64{0.4, 0.1, 0.3, 0.2},
		NLL:        []float64{math.Log(2), math.Log(4), math.Log(2), math.Log(8)}, // q(tok) = 1/2, 1/4, 1/2, 1/8
		RefNLL:     []float64{math.Log(2), math.Log(2), math.Log(4), math.Log(8)}, // p(tok) = 1/2, 1/2, 1/4, 1/8
		Same:       []bool{true, false, true, true},
		Tokens:     6, Seconds: 2,
	}
	r := Summarize(res)
	near := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-12 {
			t.Errorf("%s = %.15g, want %.15g", name, got, want)
		}
	}
	if r.Positions != 4 || r.Definition != "full" || len(r.KL) != 4 {
		t.Errorf("positions %d, definition %q", r.Positions, r.Definition)
	}
	near("mean KL", r.MeanKL, 0.25)
	near("median KL", r.MedianKL, 0.25) // sorted 0.1 0.2 0.3 0.4, position 1.5
	near("p90 KL", r.P90KL, 0.37)       // position 2.7: 0.3 + 0.7·0.1
	near("p99 KL", r.P99KL, 0.397)      // position 2.97
	near("max KL", r.MaxKL, 0.4)
	near("top-1", r.Top1, 0.75)
	// ppl = exp(mean NLL) = (2·4·2·8)^(1/4) = 128^(1/4); reference (2·2·4·8)^(1/4) = 128^(1/4) too.
	near("ppl", r.PPL, math.Pow(128, 0.25))
	near("ref ppl", r.RefPPL, math.Pow(128, 0.25))
	// Δp = 0, −1/4, +1/4, 0.
	near("mean Δp", r.MeanDeltaP, 0)
	near("RMS Δp", r.RMSDeltaP, math.Sqrt(2*0.0625/4))
	near("median Δp", r.MedianDeltaP, 0)
	near("p1 Δp", r.P1DeltaP, -0.25+0.03*0.25) // sorted −¼ 0 0 ¼, position 0.03
	near("p99 Δp", r.P99DeltaP, 0.25*0.97)     // position 2.97: 0 + 0.97·¼
	near("tokens/s", r.TokensPerSecond, 3)
	var tab, md bytes.Buffer
	if err := r.WriteTable(&tab); err != nil || !strings.Contains(tab.String(), "75.00%") {
		t.Errorf("table:\n%s", tab.String())
	}
	if err := r.WriteMarkdown(&md); err != nil || !strings.HasPrefix(md.String(), "| metric | value |") {
		t.Errorf("markdown:\n%s", md.String())
	}
}
