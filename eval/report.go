package eval

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"forge/internal/table"
	"forge/internal/units"
)

// Report summarises a candidate scored against a trace. KL and NLL are in
// nats; percentiles follow Percentile. Bytes and BPW describe the
// candidate's quantizable matrices and are filled in by the caller (the
// eval package does not know the model's files).
type Report struct {
	Trace      string `json:"trace"`
	Model      string `json:"model"`
	Definition string `json:"definition"` // the trace's (Definition): "full" or "top-K+tail"
	Positions  int    `json:"n_positions"`

	MeanKL   float64 `json:"mean_kl"`
	SEKL     float64 `json:"se_kl"` // standard error of MeanKL (StdErr)
	MedianKL float64 `json:"median_kl"`
	P90KL    float64 `json:"p90_kl"`
	P99KL    float64 `json:"p99_kl"`
	P999KL   float64 `json:"p999_kl"`
	MaxKL    float64 `json:"max_kl"`

	Top1   float64 `json:"top1"`    // fraction of positions where the top-1 tokens agree
	PPL    float64 `json:"ppl"`     // exp(mean NLL) of the candidate on the actual next tokens
	RefPPL float64 `json:"ref_ppl"` // the same for the reference, from the trace

	// Δp = q(x_{t+1}) − p(x_{t+1}): the change in the probability of the
	// actual next token, candidate minus reference.
	MeanDeltaP   float64 `json:"mean_delta_p"`
	RMSDeltaP    float64 `json:"rms_delta_p"`
	P1DeltaP     float64 `json:"p1_delta_p"`
	P5DeltaP     float64 `json:"p5_delta_p"`
	MedianDeltaP float64 `json:"median_delta_p"`
	P95DeltaP    float64 `json:"p95_delta_p"`
	P99DeltaP    float64 `json:"p99_delta_p"`

	Bytes int64   `json:"bytes"` // stored bytes of the quantizable matrices
	BPW   float64 `json:"bpw"`   // 8·Bytes / their weights
	// BlocksBPW is the bits per weight of the decoder layers' quantizable
	// matrices alone (the head left out), every index, codebook, scale and
	// factor counted: the size llama.cpp-style comparisons quote.
	BlocksBPW float64 `json:"blocks_bpw,omitempty"`

	// Reference, Parts and Layers describe an ablation (forge eval
	// --reference): the reference model with only those parts of those
	// layers taken from Model.
	Reference string `json:"reference,omitempty"`
	// KV is the candidate's KV cache format when it is not f32.
	KV string `json:"kv,omitempty"`
	// Act is the candidate's activation precision when it is not f32
	// ("int8": every row as a decode step with int8 activations computes it).
	Act    string `json:"act,omitempty"`
	Parts  string `json:"parts,omitempty"`
	Layers string `json:"layers,omitempty"`

	Tokens          int     `json:"tokens"` // tokens the candidate ran over
	Seconds         float64 `json:"seconds"`
	TokensPerSecond float64 `json:"tokens_per_second"`

	// RowPositions and Sources lay the per-position KL (KL, the .npy of
	// forge eval --kl-out) out in rows: row r holds the next RowPositions[r]
	// positions; the first Sources[0].Rows rows come from Sources[0].Path,
	// and so on (absent when the trace's recipe does not say).
	RowPositions []int       `json:"row_positions,omitempty"`
	Sources      []RowSource `json:"sources,omitempty"`

	KL []float64 `json:"-"` // [positions] per-position KL, in trace order
}

// Summarize computes the report's statistics from a scored trace (every
// field but Trace, Model, Bytes and BPW). res must hold at least one
// position.
func Summarize(res *Result) *Report {
	n := len(res.KL)
	rep := &Report{Definition: res.Definition, Positions: n, KL: res.KL, Tokens: res.Tokens, Seconds: res.Seconds,
		RowPositions: res.RowPositions, Sources: res.Sources}
	if res.Seconds > 0 {
		rep.TokensPerSecond = float64(res.Tokens) / res.Seconds
	}
	kl := slices.Clone(res.KL)
	slices.Sort(kl)
	rep.MeanKL, rep.SEKL = Mean(kl), StdErr(kl)
	rep.MedianKL, rep.P90KL, rep.P99KL = Percentile(kl, 0.5), Percentile(kl, 0.9), Percentile(kl, 0.99)
	rep.P999KL, rep.MaxKL = Percentile(kl, 0.999), kl[n-1]
	same := 0
	for _, s := range res.Same {
		if s {
			same++
		}
	}
	rep.Top1 = float64(same) / float64(n)
	rep.PPL, rep.RefPPL = math.Exp(Mean(res.NLL)), math.Exp(Mean(res.RefNLL))
	dp := make([]float64, n)
	var sq float64
	for i := range dp {
		dp[i] = math.Exp(-res.NLL[i]) - math.Exp(-res.RefNLL[i])
		sq += dp[i] * dp[i]
	}
	rep.MeanDeltaP, rep.RMSDeltaP = Mean(dp), math.Sqrt(sq/float64(n))
	slices.Sort(dp)
	rep.P1DeltaP, rep.P5DeltaP, rep.MedianDeltaP = Percentile(dp, 0.01), Percentile(dp, 0.05), Percentile(dp, 0.5)
	rep.P95DeltaP, rep.P99DeltaP = Percentile(dp, 0.95), Percentile(dp, 0.99)
	return rep
}

// Mean returns the arithmetic mean of x (NaN for none), summed in order.
func Mean(x []float64) float64 {
	var s float64
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

// StdErr returns the standard error of the mean of x as llama.cpp's
// perplexity tool computes it: sqrt((Σx²/N − mean²)/(N−1)), and 0 when
// N ≤ 10 or the variance estimate is not positive.
func StdErr(x []float64) float64 {
	n := len(x)
	if n <= 10 {
		return 0
	}
	var s, s2 float64
	for _, v := range x {
		s += v
		s2 += v * v
	}
	mean := s / float64(n)
	v := s2/float64(n) - mean*mean
	if v <= 0 {
		return 0
	}
	return math.Sqrt(v / float64(n-1))
}

// Percentile returns the f-quantile (0 ≤ f ≤ 1) of sorted values by the
// rule of llama.cpp's KL statistics: the value at position f·(N−1),
// interpolated linearly between the two neighbouring values. It returns
// NaN for no values.
func Percentile(sorted []float64, f float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	x := f * float64(n-1)
	i := int(math.Floor(x))
	if i >= n-1 {
		return sorted[n-1]
	}
	if i < 0 {
		return sorted[0]
	}
	return sorted[i] + (x-float64(i))*(sorted[i+1]-sorted[i])
}

// lines is the report as label/value pairs, for both writers.
func (r *Report) lines() [][2]string {
	pct := func(v float64) string { return fmt.Sprintf("%+.3f%%", 100*v) }
	return [][2]string{
		{"trace", r.Trace},
		{"model", r.Model},
		{"definition", r.Definition},
		{"positions", fmt.Sprint(r.Positions)},
		{"mean KL", fmt.Sprintf("%.6f ± %.6f", r.MeanKL, r.SEKL)},
		{"median KL", fmt.Sprintf("%.6f", r.MedianKL)},
		{"p90 KL", fmt.Sprintf("%.6f", r.P90KL)},
		{"p99 KL", fmt.Sprintf("%.6f", r.P99KL)},
		{"p99.9 KL", fmt.Sprintf("%.6f", r.P999KL)},
		{"max KL", fmt.Sprintf("%.6f", r.MaxKL)},
		{"top-1 agreement", fmt.Sprintf("%.2f%%", 100*r.Top1)},
		{"perplexity", fmt.Sprintf("%.4f (reference %.4f, ratio %.4f)", r.PPL, r.RefPPL, r.PPL/r.RefPPL)},
		{"mean Δp", pct(r.MeanDeltaP)},
		{"RMS Δp", fmt.Sprintf("%.3f%%", 100*r.RMSDeltaP)},
		{"Δp p1 / p5 / median / p95 / p99", strings.Join([]string{pct(r.P1DeltaP), pct(r.P5DeltaP),
			pct(r.MedianDeltaP), pct(r.P95DeltaP), pct(r.P99DeltaP)}, " / ")},
		{"quantizable matrices", fmt.Sprintf("%s, %.3f bpw (transformer blocks alone: %.3f)", units.BytesPrecise(r.Bytes), r.BPW, r.BlocksBPW)},
		{"KV cache", kvName(r.KV)},
		{"activations", kvName(r.Act)},
		{"speed", fmt.Sprintf("%d tokens in %.1f s, %.0f tokens/s", r.Tokens, r.Seconds, r.TokensPerSecond)},
	}
}

// table is the report as a two-column table.
func (r *Report) table() *table.Table {
	t := table.New("metric", "value")
	for _, l := range r.lines() {
		t.Row(l[0], l[1])
	}
	return t
}

// WriteTable prints the report as an aligned two-column table.
func (r *Report) WriteTable(w io.Writer) error {
	t := r.table()
	t.Header = nil
	return t.Write(w)
}

// WriteMarkdown writes the report as a Markdown table.
func (r *Report) WriteMarkdown(w io.Writer) error { return r.table().WriteMarkdown(w) }

// kvName is the KV cache (or activations) line of a report.
func kvName(kv string) string {
	if kv == "" {
		return "f32"
	}
	return kv
}
