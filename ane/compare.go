package ane

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"

	"forge/eval"
	"forge/model"
	"forge/tensor"
)

// CompareOptions configure Compare.
type CompareOptions struct {
	// Configs are the emulations to measure, each against the same fp32
	// forward (at least one).
	Configs []Options
	// LayersPerChunk groups consecutive layers into chunks, as a device
	// build does (0: 4, the reference's).
	LayersPerChunk int
	// Progress, if set, is called after each (row, config) with the
	// count done and the total.
	Progress func(done, total int)
}

// Report is Compare's result: per emulation, per layer and per chunk
// errors against the fp32 forward, the rounding counts, and the
// end-to-end distributions.
type Report struct {
	Layers         int            `json:"layers"`
	LayersPerChunk int            `json:"layers_per_chunk"`
	Rows           int            `json:"rows"`
	Tokens         int            `json:"tokens"`
	Configs        []ConfigReport `json:"configs"`
}

// ConfigReport is one emulation's part of a Report.
type ConfigReport struct {
	Label    string        `json:"label"` // the fixes joined by "+", or "none"
	Fixes    []Fix         `json:"fixes"`
	AttBlock int           `json:"att_block,omitempty"`
	Layers   []LayerReport `json:"layers"`
	// Outside counts the roundings outside the layers: embedding rows,
	// the final norm, the head's logits.
	Outside  []SiteReport  `json:"outside"`
	Chunks   []ChunkReport `json:"chunks"`
	EndToEnd EndToEnd      `json:"end_to_end"`
}

// LayerReport is one layer's output (the residual stream leaving it)
// against fp32, with everything inherited from the layers before, and
// the roundings of its tensors: overflows to ±Inf and the fraction of
// values flushed from fp16's subnormal range, in all and per Site.
type LayerReport struct {
	Layer int    `json:"layer"`
	Kind  string `json:"kind"`
	Errors
	Overflow      int64        `json:"overflow"`
	SubnormalFrac float64      `json:"subnormal_frac"`
	MaxAbs        float64      `json:"max_abs"`
	Sites         []SiteReport `json:"sites"`
}

// SiteReport is the rounding counts of one kind of tensor (model.Site).
type SiteReport struct {
	Site          string  `json:"site"`
	Values        int64   `json:"values"`
	Overflow      int64   `json:"overflow"`
	NaN           int64   `json:"nonfinite_in"`
	SubnormalFrac float64 `json:"subnormal_frac"`
	MaxAbs        float64 `json:"max_abs"`
}

// ChunkReport is one chunk's output against fp32: Inherited when the
// device runs every layer before it too, Isolated when the chunk alone
// runs on the device, fed the fp32 stream entering it (its own error).
type ChunkReport struct {
	Chunk     int    `json:"chunk"`
	First     int    `json:"first_layer"`
	Last      int    `json:"last_layer"`
	Inherited Errors `json:"inherited"`
	Isolated  Errors `json:"isolated"`
}

// EndToEnd compares the next-token distributions of the emulation (q)
// with fp32's (p) at every position: mean, median and p99 of KL(p‖q)
// over the vocabulary, top-1 agreement, and the perplexity of each on the
// rows' own next tokens. Positions whose device logits are not finite
// count in NonFinite, as an infinite KL (so the mean is infinite: null in
// JSON) and as a top-1 disagreement; the perplexities are over the
// finite positions.
type EndToEnd struct {
	MeanKL    Num   `json:"mean_kl"`
	MedianKL  Num   `json:"median_kl"`
	P99KL     Num   `json:"p99_kl"`
	Top1      Num   `json:"top1"`
	PPLRef    Num   `json:"ppl_fp32"`
	PPL       Num   `json:"ppl"`
	Positions int   `json:"positions"`
	NonFinite int64 `json:"nonfinite_positions"`
}

// Compare runs every row of tokens through the fp32 forward of ref and
// through the emulations opt.Configs of the same weights (Load of ref's
// Source), and reports how far each emulation's stream departs, layer by
// layer and chunk by chunk, and where. load makes the emulated model of
// one configuration.
func Compare(ctx context.Context, ref *model.Model, load func(Options) (*model.Model, *Emulator, error), rows [][]int, opt CompareOptions) (*Report, error) {
	if len(opt.Configs) == 0 {
		return nil, fmt.Errorf("numerics: no emulation to compare")
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("numerics: no token rows")
	}
	cfg := ref.Config()
	L := len(cfg.Layers)
	per := opt.LayersPerChunk
	if per == 0 {
		per = 4
	}
	if per < 0 {
		return nil, fmt.Errorf("numerics: %d layers per chunk", per)
	}
	for i, r := range rows {
		if len(r) < 2 {
			return nil, fmt.Errorf("numerics: row %d has %d tokens, want at least 2", i, len(r))
		}
		if err := ref.CheckTokens(r); err != nil {
			return nil, fmt.Errorf("numerics: row %d: %w", i, err)
		}
	}
	runs := make([]*run, len(opt.Configs))
	for i, o := range opt.Configs {
		m, em, err := load(o)
		if err != nil {
			return nil, err
		}
		runs[i] = newRun(m, em, L, per)
	}
	rep := &Report{Layers: L, LayersPerChunk: per, Rows: len(rows)}
	fp := newStream(L)
	done := 0
	for _, toks := range rows {
		rep.Tokens += len(toks)
		lg := fp.forward(ref, nil, toks)
		refLP := logSoftmaxRows(lg)
		for _, r := range runs {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			r.row(fp, refLP, toks, cfg.Hidden)
			done++
			if opt.Progress != nil {
				opt.Progress(done, len(rows)*len(runs))
			}
		}
	}
	for i, r := range runs {
		rep.Configs = append(rep.Configs, r.report(opt.Configs[i], cfg))
	}
	return rep, nil
}

// stream holds one forward's residual stream entering (in[0]: the
// embedding rows) and leaving each layer: out[ℓ] [T, H].
type stream struct {
	emb tensor.Matrix
	out []tensor.Matrix
}

func newStream(L int) *stream { return &stream{out: make([]tensor.Matrix, L)} }

// input returns the stream entering layer ℓ.
func (s *stream) input(l int) *tensor.Matrix {
	if l == 0 {
		return &s.emb
	}
	return &s.out[l-1]
}

// forward runs toks through m from a new State (with the Numerics em,
// unless nil), keeping the stream, and returns a copy of the logits.
func (s *stream) forward(m *model.Model, em *Emulator, toks []int) *tensor.Matrix {
	st := m.NewState()
	if em != nil {
		st.SetNumerics(em)
	}
	st.Observe = func(name string, x *tensor.Matrix) {
		var dst *tensor.Matrix
		if name == "embed" {
			dst = &s.emb
		} else if rest, ok := cutLayerOut(name); ok {
			dst = &s.out[rest]
		} else {
			return
		}
		dst.Resize(x.Rows, x.Cols)
		copy(dst.Data, x.Data[:x.Rows*x.Cols])
	}
	lg := m.Forward(st, toks)
	out := tensor.New(lg.Rows, lg.Cols)
	copy(out.Data, lg.Data[:lg.Rows*lg.Cols])
	return out
}

// cutLayerOut parses "layer_out.N".
func cutLayerOut(name string) (int, bool) {
	const p = "layer_out."
	if len(name) <= len(p) || name[:len(p)] != p {
		return 0, false
	}
	n, err := strconv.Atoi(name[len(p):])
	return n, err == nil
}

// logSoftmaxRows returns the log-softmax of each row of lg.
func logSoftmaxRows(lg *tensor.Matrix) *tensor.Matrix {
	out := tensor.New(lg.Rows, lg.Cols)
	for t := range lg.Rows {
		eval.LogSoftmax(out.Row(t), lg.Row(t))
	}
	return out
}

// run accumulates one emulation's measurements.
type run struct {
	m         *model.Model
	em        *Emulator
	per       int
	dev       *stream
	layers    []errAcc
	inherited []errAcc // per chunk
	isolated  []errAcc
	kl        []float64
	top1      int
	nllRef    float64
	nll       float64
	scored    int
	nonfinite int64
	x         tensor.Matrix
	lp        []float32
}

func newRun(m *model.Model, em *Emulator, L, per int) *run {
	nc := (L + per - 1) / per
	return &run{m: m, em: em, per: per, dev: newStream(L), layers: make([]errAcc, L),
		inherited: make([]errAcc, nc), isolated: make([]errAcc, nc)}
}

// row measures one row: the whole forward emulated, then each chunk
// emulated alone from the fp32 stream (its roundings not counted: the
// counts describe the whole forward).
func (r *run) row(fp *stream, refLP *tensor.Matrix, toks []int, H int) {
	T := len(toks)
	lg := r.dev.forward(r.m, r.em, toks)
	for l := range r.layers {
		r.layers[l].add(r.dev.out[l].Data, fp.out[l].Data, fp.input(l).Data, T, H)
	}
	saved := r.em.save()
	for c := range r.inherited {
		lo, hi := c*r.per, min(len(r.layers), (c+1)*r.per)
		r.inherited[c].add(r.dev.out[hi-1].Data, fp.out[hi-1].Data, fp.input(lo).Data, T, H)
		if c == 0 {
			continue // its input is the embedding either way: alone it is the inherited run (report copies it)
		}
		st := r.m.NewState()
		st.SetNumerics(r.em)
		in := fp.input(lo)
		r.x.Resize(T, H)
		copy(r.x.Data, in.Data)
		for i, v := range r.x.Data {
			r.x.Data[i] = Round(v) // the chunk's input buffer is fp16
		}
		for l := lo; l < hi; l++ {
			r.m.ForwardLayer(st, l, &r.x)
		}
		r.isolated[c].add(r.x.Data, fp.out[hi-1].Data, in.Data, T, H)
	}
	r.em.restore(saved)
	// End to end: KL(p‖q) at every position, top-1, and each side's NLL of the next token.
	V := lg.Cols
	if len(r.lp) < V {
		r.lp = make([]float32, V)
	}
	lq := r.lp[:V]
	for t := range T {
		eval.LogSoftmax(lq, lg.Row(t))
		lp := refLP.Row(t)
		kl := eval.KLFull(lp, lq)
		if math.IsNaN(kl) || math.IsInf(kl, 0) {
			r.nonfinite++
			r.kl = append(r.kl, math.Inf(1))
			continue
		}
		r.kl = append(r.kl, kl)
		if eval.Argmax(lq) == eval.Argmax(lp) {
			r.top1++
		}
		if t+1 < T {
			r.nllRef -= float64(lp[toks[t+1]])
			r.nll -= float64(lq[toks[t+1]])
			r.scored++
		}
	}
}

func (r *run) report(o Options, cfg model.Config) ConfigReport {
	cr := ConfigReport{Label: FixLabel(o.Fixes), Fixes: o.Fixes, AttBlock: o.AttBlock}
	if cr.Fixes == nil {
		cr.Fixes = []Fix{}
	}
	for l := range r.layers {
		lr := LayerReport{Layer: l, Kind: cfg.Layers[l].String(), Errors: r.layers[l].result()}
		var all Stat
		lr.Sites, all = r.sites(l)
		lr.Overflow, lr.SubnormalFrac, lr.MaxAbs = all.Overflow, all.SubnormalFrac(), all.MaxAbs
		cr.Layers = append(cr.Layers, lr)
	}
	cr.Outside, _ = r.sites(-1)
	for c := range r.inherited {
		lo, hi := c*r.per, min(len(r.layers), (c+1)*r.per)
		ch := ChunkReport{Chunk: c, First: lo, Last: hi - 1, Inherited: r.inherited[c].result()}
		ch.Isolated = ch.Inherited
		if c > 0 {
			ch.Isolated = r.isolated[c].result()
		}
		cr.Chunks = append(cr.Chunks, ch)
	}
	e := EndToEnd{Positions: len(r.kl), NonFinite: r.nonfinite}
	if n := len(r.kl); n > 0 {
		var sum float64
		for _, k := range r.kl {
			sum += k
		}
		e.MeanKL = Num(sum / float64(n))
		e.Top1 = Num(float64(r.top1) / float64(n))
		e.P99KL = Num(quantile(r.kl, 0.99))
		e.MedianKL = Num(median(r.kl))
	} else {
		e.MeanKL, e.MedianKL, e.P99KL, e.Top1 = Num(math.NaN()), Num(math.NaN()), Num(math.NaN()), Num(math.NaN())
	}
	e.PPLRef = Num(math.Exp(r.nllRef / float64(r.scored)))
	e.PPL = Num(math.Exp(r.nll / float64(r.scored)))
	cr.EndToEnd = e
	return cr
}

// sites lists layer l's non-empty site counts and their total.
func (r *run) sites(l int) ([]SiteReport, Stat) {
	var all Stat
	var out []SiteReport
	for s := range model.NumSites {
		st := r.em.Stats(l, s)
		if st.N == 0 {
			continue
		}
		all.add(st)
		out = append(out, SiteReport{Site: s.String(), Values: st.N, Overflow: st.Overflow, NaN: st.NaN,
			SubnormalFrac: st.SubnormalFrac(), MaxAbs: st.MaxAbs})
	}
	return out, all
}

// quantile returns the q-quantile of xs (sorted in place), by the
// nearest-rank rule on the sorted values.
func quantile(xs []float64, q float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(0, min(len(s)-1, i))]
}
