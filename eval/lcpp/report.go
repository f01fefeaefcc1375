package lcpp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
)

// Definition names the definition every Report follows, so that its
// numbers are never compared with another definition's (docs/quantization.md §7).
const Definition = "llama.cpp --kl-divergence: second half of each n_ctx window, base logits stored as uint16 (quantization.md §7)"

// minStats is the fewest positions llama.cpp prints statistics for.
const minStats = 100

// Estimate is a value with its uncertainty (one standard error, or the
// propagated error llama.cpp prints after "±"). Unc is NaN where llama.cpp's
// formula takes the square root of a negative number (it prints "-nan");
// JSON writes NaN and ±Inf as null.
type Estimate struct {
	Value float64 `json:"value"`
	Unc   float64 `json:"unc"`
}

// MarshalJSON writes {"value": v, "unc": u} with null for NaN or ±Inf.
func (e Estimate) MarshalJSON() ([]byte, error) {
	return []byte(`{"value":` + jsonFloat(e.Value) + `,"unc":` + jsonFloat(e.Unc) + `}`), nil
}

// UnmarshalJSON reads what MarshalJSON writes; null becomes NaN.
func (e *Estimate) UnmarshalJSON(b []byte) error {
	var raw struct{ Value, Unc *float64 }
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	e.Value, e.Unc = math.NaN(), math.NaN()
	if raw.Value != nil {
		e.Value = *raw.Value
	}
	if raw.Unc != nil {
		e.Unc = *raw.Unc
	}
	return nil
}

func jsonFloat(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "null"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// Percentile is one order statistic of a sorted sample: the value at
// position Fraction·(N−1), interpolated linearly between neighbours
// (Fraction 0 is the minimum, 0.5 the median, 1 the maximum).
type Percentile struct {
	Fraction float64 `json:"fraction"`
	Value    float64 `json:"value"`
}

// kldFractions and deltaPFractions are the order statistics
// llama.cpp prints, in its order.
var (
	kldFractions    = []float64{1, 0.999, 0.99, 0.95, 0.90, 0.5, 0.10, 0.05, 0.01, 0.001, 0}
	deltaPFractions = []float64{1, 0.999, 0.99, 0.95, 0.90, 0.75, 0.5, 0.25, 0.10, 0.05, 0.01, 0.001, 0}
)

// Chunk is one row of llama.cpp's per-chunk table: the running
// statistics over every position scored so far, after chunk Chunk (1-based).
type Chunk struct {
	Chunk      int      `json:"chunk"`
	PPL        Estimate `json:"ppl"`          // exp(mean nll_Q) ± PPL·se
	LnPPLRatio Estimate `json:"ln_ppl_ratio"` // mean(nll_Q − nll_B) ± sqrt(se_Q² + se_B² − 2cov)
	KLD        Estimate `json:"kld"`          // mean KL ± se
	RMSDeltaP  Estimate `json:"rms_delta_p"`  // sqrt(mean Δp²) ± se(Δp²)/(2·RMS), a fraction
	SameTop    Estimate `json:"same_top"`     // n_same/N ± sqrt(p(1−p)/(N−1)), a fraction
}

// Report is the whole llama.cpp-compatible result, every statistic
// with its uncertainty. Fractions (Cor, Δp, SameTop) are stored as
// fractions; Print shows them as percentages where llama.cpp does. The
// summary fields are filled only when Enough (N ≥ 100), as llama.cpp prints
// statistics only then.
type Report struct {
	Definition string `json:"definition"`
	Model      string `json:"model,omitempty"` // the candidate
	Base       string `json:"base,omitempty"`  // the base file
	NCtx       int    `json:"n_ctx"`
	NVocab     int    `json:"n_vocab"`
	NChunk     int    `json:"n_chunk"`
	N          int    `json:"n"` // scored positions
	Enough     bool   `json:"enough"`

	Chunks []Chunk `json:"chunks"`

	PPL        Estimate `json:"ppl"`          // Mean PPL(Q)
	PPLBase    Estimate `json:"ppl_base"`     // Mean PPL(base)
	CovLnPPL   float64  `json:"cov_ln_ppl"`   // cov = (Σ nll_Q·nll_B/N − mean_Q·mean_B)/(N−1)
	CorLnPPL   *float64 `json:"cor_ln_ppl"`   // cov/(se_Q·se_B); nil (null) when a se is 0
	LnPPLRatio Estimate `json:"ln_ppl_ratio"` // Mean ln(PPL(Q)/PPL(base))
	PPLRatio   Estimate `json:"ppl_ratio"`    // exp of it ± ratio·unc
	PPLDiff    Estimate `json:"ppl_diff"`     // PPL(Q) − PPL(base) ± sqrt(u_Q² + u_B² − 2·PPL_Q·PPL_B·cov)

	KLD            Estimate     `json:"kld"`
	KLDPercentiles []Percentile `json:"kld_percentiles"` // Maximum, 99.9%, 99%, 95%, 90%, Median, 10%, 5%, 1%, 0.1%, Minimum

	DeltaP            Estimate     `json:"delta_p"`
	DeltaPPercentiles []Percentile `json:"delta_p_percentiles"` // as KLD's, plus 75% and 25%
	RMSDeltaP         Estimate     `json:"rms_delta_p"`
	MaxAbsDeltaP      float64      `json:"max_abs_delta_p"` // tracked by llama.cpp, not printed
	SameTop           Estimate     `json:"same_top"`

	// Per-position values in scoring order (window by window).
	KLDs    []float64 `json:"kld_values"`
	DeltaPs []float64 `json:"delta_p_values"`
}

// JSON returns the report as indented JSON.
func (r *Report) JSON() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// tableHeader is the head of llama.cpp's per-chunk table, verbatim.
const tableHeader = "chunk             PPL               ln(PPL(Q)/PPL(base))          KL Divergence              Δp RMS            Same top p"

// Print writes the report as llama-perplexity --kl-divergence prints it:
// the per-chunk table (llama.cpp prints a row as each chunk finishes; the
// header is printed once, as in its published logs), then, when N ≥ 100,
// the "====== Perplexity statistics ======", "====== KL divergence
// statistics ======" and "====== Token probability statistics ======"
// blocks with llama.cpp's labels, order and printf formats (Cor, Δp, RMS Δp
// and Same top p as percentages). With N < 100 llama.cpp prints nothing
// more; Print says so in one line. Undefined numbers print as "-nan", as
// glibc prints llama.cpp's. The first line names the definition.
func (r *Report) Print(w io.Writer) error {
	b := bufio.NewWriter(w)
	fmt.Fprintf(b, "definition: %s\n", r.Definition)
	fmt.Fprintf(b, "n_ctx = %d, n_vocab = %d, %d chunks, %d scored positions\n\n", r.NCtx, r.NVocab, r.NChunk, r.N)
	fmt.Fprintln(b, tableHeader)
	for _, c := range r.Chunks {
		fmt.Fprintf(b, "%4d    %s ± %s    %s ± %s    %s ± %s    %s ± %s %%    %s ± %s %%\n", c.Chunk,
			cf(c.PPL.Value, 9, 4), cf(c.PPL.Unc, 9, 4),
			cf(c.LnPPLRatio.Value, 10, 5), cf(c.LnPPLRatio.Unc, 10, 5),
			cf(c.KLD.Value, 10, 5), cf(c.KLD.Unc, 10, 5),
			cf(100*c.RMSDeltaP.Value, 6, 3), cf(100*c.RMSDeltaP.Unc, 6, 3),
			cf(100*c.SameTop.Value, 6, 3), cf(100*c.SameTop.Unc, 6, 3))
	}
	fmt.Fprintln(b)
	if !r.Enough {
		fmt.Fprintf(b, "only %d scored positions: llama.cpp prints no statistics below %d\n", r.N, minStats)
		return b.Flush()
	}
	pm := func(label string, e Estimate) {
		fmt.Fprintf(b, "%-30s: %s ± %s\n", label, cf(e.Value, 10, 6), cf(e.Unc, 10, 6))
	}
	fmt.Fprintln(b, "====== Perplexity statistics ======")
	pm("Mean PPL(Q)", r.PPL)
	pm("Mean PPL(base)", r.PPLBase)
	cor := math.NaN()
	if r.CorLnPPL != nil {
		cor = *r.CorLnPPL
	}
	fmt.Fprintf(b, "Cor(ln(PPL(Q)), ln(PPL(base))): %s%%\n", cf(100*cor, 6, 2))
	pm("Mean ln(PPL(Q)/PPL(base))", r.LnPPLRatio)
	pm("Mean PPL(Q)/PPL(base)", r.PPLRatio)
	pm("Mean PPL(Q)-PPL(base)", r.PPLDiff)
	fmt.Fprintln(b)

	fmt.Fprintln(b, "====== KL divergence statistics ======")
	fmt.Fprintf(b, "Mean    KLD: %s ± %s\n", cf(r.KLD.Value, 10, 6), cf(r.KLD.Unc, 10, 6))
	for _, p := range r.KLDPercentiles {
		fmt.Fprintf(b, "%-7s KLD: %s\n", percentileLabel(p.Fraction), cf(p.Value, 10, 6))
	}
	fmt.Fprintln(b)

	fmt.Fprintln(b, "====== Token probability statistics ======")
	fmt.Fprintf(b, "Mean    Δp: %s ± %s %%\n", cf(100*r.DeltaP.Value, 6, 3), cf(100*r.DeltaP.Unc, 5, 3))
	for _, p := range r.DeltaPPercentiles {
		fmt.Fprintf(b, "%-7s Δp: %s%%\n", percentileLabel(p.Fraction), cf(100*p.Value, 6, 3))
	}
	fmt.Fprintf(b, "RMS Δp    : %s ± %s %%\n", cf(100*r.RMSDeltaP.Value, 6, 3), cf(100*r.RMSDeltaP.Unc, 5, 3))
	fmt.Fprintf(b, "Same top p: %s ± %s %%\n", cf(100*r.SameTop.Value, 6, 3), cf(100*r.SameTop.Unc, 5, 3))
	return b.Flush()
}

// percentileLabel is llama.cpp's row label: "Maximum", "Median", "Minimum",
// or the percentage as printf("%4.1f%%") ("99.9%", " 5.0%").
func percentileLabel(f float64) string {
	switch f {
	case 1:
		return "Maximum"
	case 0.5:
		return "Median"
	case 0:
		return "Minimum"
	}
	return fmt.Sprintf("%4.1f%%", 100*f)
}

// cf formats v as C's printf("%width.precf"): NaN as "-nan" (glibc's text
// for the NaN that sqrt of a negative gives) and infinities as "inf",
// right-aligned to width.
func cf(v float64, width, prec int) string {
	switch {
	case math.IsNaN(v):
		return fmt.Sprintf("%*s", width, "-nan")
	case math.IsInf(v, 1):
		return fmt.Sprintf("%*s", width, "inf")
	case math.IsInf(v, -1):
		return fmt.Sprintf("%*s", width, "-inf")
	}
	return fmt.Sprintf("%*.*f", width, prec, v)
}
