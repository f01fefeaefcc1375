package chunk

import (
	"fmt"
	"slices"
	"sync"
)

// Bandwidths are the cost model's effective bandwidths in GB/s (10⁹
// bytes/s): what a step of the reference's graph achieves, not a
// hardware peak.
type Bandwidths struct {
	Weights float64 `json:"weights_gbs"` // weights and DeltaNet state
	KV      float64 `json:"kv_gbs"`      // KV cache reads of the attention layers
}

// StepMS is the projected time in ms of one step that reads weight bytes
// (the matrices' cost bytes and the vectors), reads one DeltaNet state set
// and writes the other (2·state bytes), and reads kv bytes of KV cache:
//
//	ms = (weights + 2·state) / B_w + kv / B_kv        (bytes / (GB/s) / 10⁶)
func (b Bandwidths) StepMS(weights, state, kv int64) float64 {
	return (float64(weights+2*state)/b.Weights + float64(kv)/b.KV) / 1e6
}

// project fills every chunk's entries, and the totals, at bandwidths bw.
func (p *Plan) project(bw Bandwidths) {
	t := &p.Totals
	t.Chunks = len(p.Chunks) - 1
	for i := range p.Chunks {
		ch := &p.Chunks[i]
		ch.Entries = make([]Entry, len(p.Contexts))
		for j, n := range p.Contexts {
			e := Entry{Ctx: n, KVLen: KVLen(n)}
			e.KVBytesFP16 = int64(e.KVLen) * ch.KVBytesPerTokenFP16
			e.KVBytesInt8V = int64(e.KVLen) * ch.KVBytesPerTokenInt8V
			e.MSPerStepFP16 = bw.StepMS(ch.CostBytes+ch.VectorBytes, ch.StateBytes, e.KVBytesFP16)
			e.MSPerStepInt8V = bw.StepMS(ch.CostBytes+ch.VectorBytes, ch.StateBytes, e.KVBytesInt8V)
			ch.Entries[j] = e
		}
		t.WeightBytes += ch.WeightBytes
		t.CostBytes += ch.CostBytes + ch.VectorBytes
		t.CPUBytes += ch.CPUBytes
		t.StateBytes += ch.StateBytes
		t.KVBytesPerTokenFP16 += ch.KVBytesPerTokenFP16
		t.KVBytesPerTokenInt8V += ch.KVBytesPerTokenInt8V
	}
	t.Entries = make([]Entry, len(p.Contexts))
	fixed := t.WeightBytes + t.CPUBytes + p.HostBytes + 2*t.StateBytes
	for j, n := range p.Contexts {
		e := Entry{Ctx: n, KVLen: KVLen(n)}
		for _, ch := range p.Chunks {
			c := ch.Entries[j]
			e.KVBytesFP16 += c.KVBytesFP16
			e.KVBytesInt8V += c.KVBytesInt8V
			e.MSPerStepFP16 += c.MSPerStepFP16
			e.MSPerStepInt8V += c.MSPerStepInt8V
		}
		e.MemoryBytesFP16, e.MemoryBytesInt8V = fixed+e.KVBytesFP16, fixed+e.KVBytesInt8V
		t.Entries[j] = e
	}
}

// Calibration is the fit of the cost model's bandwidths to the
// reference's measured T=8 verify times on the 27B with its deployed mix
// and int8-V KV, with the bytes this package's accounting gives that
// model, and the measured points beside the projection.
type Calibration struct {
	Model           string     `json:"model"`
	Mix             string     `json:"mix"`
	KV              string     `json:"kv"`
	T               int        `json:"t"`
	MatrixBytes     int64      `json:"matrix_bytes"` // the mix's matrices on the ANE (the notes: 9.06 GiB)
	CostBytes       int64      `json:"cost_bytes"`   // what a step charges for the weights
	StateBytes      int64      `json:"state_bytes"`  // one DeltaNet state set
	KVBytesPerToken int64      `json:"kv_bytes_per_token"`
	Bandwidth       Bandwidths `json:"bandwidth"`
	Points          []Point    `json:"points"`
	// TokensPerStep is the reference's measured mean of tokens a T=8 step
	// emits with its drafter on real traffic (§5.6).
	TokensPerStep float64  `json:"tokens_per_step_measured"`
	Source        string   `json:"source"`
	Assumptions   []string `json:"assumptions"`
}

// Point is one measured verify time beside its projection. Fitted points
// fix the bandwidths (their projection equals the measurement); the others
// check the model.
type Point struct {
	Ctx         int     `json:"ctx"`
	KVLen       int     `json:"kv_len"`
	MeasuredMS  float64 `json:"measured_ms"`
	ProjectedMS float64 `json:"projected_ms"`
	Fitted      bool    `json:"fitted"`
}

var calibration = sync.OnceValues(calibrate)

// Calibrate returns the calibration (computed once; the caller gets its
// own copy). With the deployed mix on the 27B shape (reference.go) as
// this package accounts it — weight cost bytes W, one state set S, int8-V
// KV bytes per position k — and the measured T=8 verify times t₈ at 8K
// and t₆₄ at 64K (kv_len 8128 and 65472):
//
//	B_kv = k·(65472 − 8128) / (t₆₄ − t₈)
//	B_w  = (W + 2·S) / (t₈ − k·8128 / B_kv)
//
// so the projection meets both measurements; 16K and 32K are checks. A
// per-chunk dispatch overhead is not fitted: every measured step runs the
// same 17 calls, so such an overhead cannot be told apart from B_w, which
// absorbs it.
func Calibrate() (*Calibration, error) {
	c, err := calibration()
	if err != nil {
		return nil, err
	}
	cp := *c
	cp.Points, cp.Assumptions = slices.Clone(c.Points), slices.Clone(c.Assumptions)
	return &cp, nil
}

func calibrate() (*Calibration, error) {
	cfg := Reference27B()
	var ctxs []int
	for _, m := range measuredVerify {
		ctxs = append(ctxs, m.ctx)
	}
	p, err := layout(&cfg, deployedWeights(&cfg), Options{LayersPerChunk: DefaultLayersPerChunk, T: referenceT, Contexts: ctxs})
	if err != nil {
		return nil, fmt.Errorf("chunk: calibration: %w", err)
	}
	cal := &Calibration{Model: "Qwen3.5-27B shape (docs/model.md §12), 16 chunks of 4 layers and a head chunk",
		Mix: deployedMix, KV: "int8-V (the reference's v8)", T: referenceT, TokensPerStep: measuredTokensPerStep,
		Source: "docs/reference-pipeline.md §5.6: T=8 verify forward times on the ANE (91.5 ms at 8K, 97.4 at 16K, 108.0 at 32K, 131.5 at 64K)",
		Assumptions: []string{
			"the measured steps ran the deployed export " + "full_mix25_mixer4_head4 with int8-V KV (the reference's measured decode runs are v8)",
			"a step reads every ANE weight once, reads one DeltaNet state set and writes the other, and reads the KV cache of its entry up to kv_len",
			"the time of the 17 calls includes the head chunk; a per-call dispatch overhead is folded into the weight bandwidth (not identifiable: every point has the same calls)",
			"the end-to-end tok/s figures of §8 are not used: they include the drafter and host time",
		}}
	for _, ch := range p.Chunks {
		cal.MatrixBytes += ch.WeightBytes - ch.VectorBytes
		cal.CostBytes += ch.CostBytes + ch.VectorBytes
		cal.StateBytes += ch.StateBytes
		cal.KVBytesPerToken += ch.KVBytesPerTokenInt8V
	}
	first, last := measuredVerify[0], measuredVerify[len(measuredVerify)-1]
	kv := func(ctx int) int64 { return int64(KVLen(ctx)) * cal.KVBytesPerToken }
	// bytes per ms = 10⁶ × GB/s
	cal.Bandwidth.KV = float64(kv(last.ctx)-kv(first.ctx)) / (last.ms - first.ms) / 1e6
	rest := first.ms - float64(kv(first.ctx))/cal.Bandwidth.KV/1e6
	if !(cal.Bandwidth.KV > 0 && rest > 0) {
		return nil, fmt.Errorf("chunk: calibration: the measured times give no positive bandwidths")
	}
	cal.Bandwidth.Weights = float64(cal.CostBytes+2*cal.StateBytes) / rest / 1e6
	for _, m := range measuredVerify {
		cal.Points = append(cal.Points, Point{Ctx: m.ctx, KVLen: KVLen(m.ctx), MeasuredMS: m.ms,
			ProjectedMS: cal.Bandwidth.StepMS(cal.CostBytes, cal.StateBytes, kv(m.ctx)),
			Fitted:      m.ctx == first.ctx || m.ctx == last.ctx})
	}
	return cal, nil
}
