package chunk

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"forge/internal/units"
	"forge/lut"
	"forge/model"
)

// Defaults of Options: the reference's layout (docs/reference-pipeline.md
// §8: 16 chunks of 4 layers for 64 layers, 8-row verify/decode entries).
const (
	DefaultLayersPerChunk = 4
	DefaultT              = 8
)

// DefaultContexts returns the context entries planned when Options gives
// none: 8K, 16K and 32K tokens.
func DefaultContexts() []int { return []int{8 << 10, 16 << 10, 32 << 10} }

// Options configure a plan. The zero value is the reference's layout with
// the calibrated bandwidths.
type Options struct {
	LayersPerChunk int   // decoder layers per chunk (0: DefaultLayersPerChunk)
	T              int   // rows per verify/decode step, at most PrefillRows (0: DefaultT)
	Contexts       []int // context entries in tokens, each > PrefillRows (nil: DefaultContexts)
	// Bandwidth overrides the calibrated bandwidths, each field on its
	// own (0: calibrated, see Calibrate).
	Bandwidth Bandwidths
}

// Weight is one matrix of the model as stored: its format, low-rank rank
// and the bytes the ANE holds for it. A bundle's entries give them (the
// manifest's format, rank and bytes); a float matrix is FloatWeight.
type Weight struct {
	Name   string     // tensor name, e.g. "layers.0.mlp.gate_proj.weight"
	Format lut.Format // lut.BFloat16 / lut.Float16 for a float matrix
	Rank   int
	Bytes  int64
	Note   string // added to the placement, e.g. "f32 weights run as fp16"
}

// FloatWeight is a matrix kept in a float dtype ("bf16", "f16"/"fp16" or
// "f32", any case): on the ANE it runs as fp16, 2·out·in bytes.
func FloatWeight(name, dtype string, out, in int) (Weight, error) {
	w := Weight{Name: name, Format: lut.Float16, Bytes: 2 * int64(out) * int64(in)}
	switch strings.ToLower(dtype) {
	case "bf16":
		w.Format = lut.BFloat16
	case "f16", "fp16":
	case "f32":
		w.Note = "f32 weights run as fp16"
	default:
		return w, fmt.Errorf("matrix %q: dtype %q is not bf16, f16 or f32", name, dtype)
	}
	return w, nil
}

// Plan is a model's chunk plan with its byte accounting and projected step
// times (doc.go gives the formulas).
type Plan struct {
	Model          string `json:"model,omitempty"` // set by the caller
	Kind           string `json:"kind,omitempty"`  // "bundle" or "checkpoint", set by the caller
	Layers         int    `json:"layers"`
	LayerKinds     string `json:"layer_kinds"` // one letter per layer: L Gated DeltaNet, A gated attention
	LayersPerChunk int    `json:"layers_per_chunk"`
	T              int    `json:"t"`
	PrefillRows    int    `json:"prefill_rows"`
	Contexts       []int  `json:"contexts"`
	// BandwidthGBs and KVBandwidthGBs are the cost model's bandwidths (GB/s,
	// 10⁹ bytes/s): weights and state, and KV reads; BandwidthSource says
	// whether each was calibrated or given.
	BandwidthGBs    float64      `json:"bandwidth_gbs"`
	KVBandwidthGBs  float64      `json:"kv_bandwidth_gbs"`
	BandwidthSource string       `json:"bandwidth_source"`
	Calibration     *Calibration `json:"calibration"`
	Chunks          []Chunk      `json:"chunks"` // the layer chunks, then the head chunk
	// HostBytes is the fp16 embedding table the host looks tokens up in.
	HostBytes int64       `json:"host_bytes"`
	Totals    Totals      `json:"totals"`
	Placement []Placement `json:"placement"`
	Warnings  []string    `json:"warnings"`
}

// Chunk is one chunk package: consecutive decoder layers, or the head.
type Chunk struct {
	Name   string `json:"name"`   // "0", "1", … or "head"
	Layers []int  `json:"layers"` // [first, last] (the reference's manifest); empty for the head
	Kinds  string `json:"kinds"`  // one letter per layer (L, A)
	// WeightBytes is what the ANE holds: the matrices that run there and
	// the fp16 vectors (VectorBytes); CostBytes is what the cost model
	// charges for them; CPUBytes are matrices that fall back to the CPU or
	// cannot be expressed, outside the projection.
	WeightBytes          int64    `json:"weight_bytes"`
	VectorBytes          int64    `json:"vector_bytes"`
	CostBytes            int64    `json:"cost_bytes"`
	CPUBytes             int64    `json:"cpu_bytes"`
	StateBytes           int64    `json:"state_bytes"` // DeltaNet state, one of the two buffer sets
	KVBytesPerTokenFP16  int64    `json:"kv_bytes_per_token_fp16"`
	KVBytesPerTokenInt8V int64    `json:"kv_bytes_per_token_int8v"`
	Entries              []Entry  `json:"entries"`
	Matrices             []Matrix `json:"matrices"`
}

// Entry is a chunk's (or the whole model's) cost at one context entry.
type Entry struct {
	Ctx            int     `json:"ctx"`
	KVLen          int     `json:"kv_len"` // ctx − PrefillRows
	KVBytesFP16    int64   `json:"kv_bytes_fp16"`
	KVBytesInt8V   int64   `json:"kv_bytes_int8v"`
	MSPerStepFP16  float64 `json:"ms_per_step_fp16"`  // projected
	MSPerStepInt8V float64 `json:"ms_per_step_int8v"` // projected
	// Memory (totals only): weights (ANE, CPU and host), both state sets
	// and the KV cache.
	MemoryBytesFP16  int64 `json:"memory_bytes_fp16,omitempty"`
	MemoryBytesInt8V int64 `json:"memory_bytes_int8v,omitempty"`
}

// Totals sums the chunks.
type Totals struct {
	Chunks               int     `json:"chunks"` // layer chunks; the head chunk is one more
	WeightBytes          int64   `json:"weight_bytes"`
	CostBytes            int64   `json:"cost_bytes"`
	CPUBytes             int64   `json:"cpu_bytes"`
	StateBytes           int64   `json:"state_bytes"`
	KVBytesPerTokenFP16  int64   `json:"kv_bytes_per_token_fp16"`
	KVBytesPerTokenInt8V int64   `json:"kv_bytes_per_token_int8v"`
	Entries              []Entry `json:"entries"`
}

// Matrix is one matrix of a chunk and where it runs.
type Matrix struct {
	Name      string `json:"name"`
	Layer     int    `json:"layer"` // −1 for the head
	Role      string `json:"role"`  // model.TensorSpec.Role: "gate", "qkv", …, "head"
	Format    string `json:"format"`
	Shape     [2]int `json:"shape"` // [out, in]
	Rank      int    `json:"rank,omitempty"`
	Bytes     int64  `json:"bytes"`
	CostBytes int64  `json:"cost_bytes"`
	Where     string `json:"where"`     // "ane", "cpu" or "inexpressible"
	Placement string `json:"placement"` // lut.Placement's line, with the weight's note
}

// Placement is a group of matrices with the same role, format, rank and
// placement, for a compact report.
type Placement struct {
	Role      string `json:"role"`
	Layers    []int  `json:"layers"` // the layers of its matrices (empty for the head)
	Format    string `json:"format"`
	Rank      int    `json:"rank,omitempty"`
	Count     int    `json:"count"`
	Bytes     int64  `json:"bytes"`
	Where     string `json:"where"`
	Placement string `json:"placement"`
}

// New plans model c with weights ws (one per matrix of model.Tensors(c))
// under opt: chunks of opt.LayersPerChunk layers and a head chunk, each
// matrix placed by lut.Place, bytes per chunk, KV per context entry and the
// projected ms per step (doc.go). Errors wrap ErrOptions for bad options.
func New(c *model.Config, ws []Weight, opt Options) (*Plan, error) {
	o, err := opt.resolve()
	if err != nil {
		return nil, err
	}
	p, err := layout(c, ws, o)
	if err != nil {
		return nil, err
	}
	cal, err := Calibrate()
	if err != nil {
		return nil, err
	}
	p.Calibration = cal
	bw, src := cal.Bandwidth, []string{"calibrated", "calibrated"}
	if o.Bandwidth.Weights > 0 {
		bw.Weights, src[0] = o.Bandwidth.Weights, "given"
	}
	if o.Bandwidth.KV > 0 {
		bw.KV, src[1] = o.Bandwidth.KV, "given"
	}
	p.BandwidthGBs, p.KVBandwidthGBs = bw.Weights, bw.KV
	p.BandwidthSource = "weights and state " + src[0] + ", KV " + src[1]
	p.project(bw)
	p.warn(c)
	return p, nil
}

// resolve fills in the defaults and checks the options.
func (o Options) resolve() (Options, error) {
	if o.LayersPerChunk == 0 {
		o.LayersPerChunk = DefaultLayersPerChunk
	}
	if o.T == 0 {
		o.T = DefaultT
	}
	if o.Contexts == nil {
		o.Contexts = DefaultContexts()
	}
	switch {
	case o.LayersPerChunk < 0:
		return o, fmt.Errorf("%w: %d layers per chunk (want at least 1)", ErrOptions, o.LayersPerChunk)
	case o.T < 0 || o.T > PrefillRows:
		return o, fmt.Errorf("%w: T = %d rows per step (want 1 to %d, the rows a context entry keeps free)", ErrOptions, o.T, PrefillRows)
	case len(o.Contexts) == 0:
		return o, fmt.Errorf("%w: no context entries", ErrOptions)
	}
	for _, b := range []float64{o.Bandwidth.Weights, o.Bandwidth.KV} {
		if b < 0 || math.IsNaN(b) || math.IsInf(b, 0) {
			return o, fmt.Errorf("%w: bandwidth %v GB/s (want a positive number, or 0 for the calibrated one)", ErrOptions, b)
		}
	}
	o.Contexts = slices.Clone(o.Contexts)
	slices.Sort(o.Contexts)
	for i, n := range o.Contexts {
		if err := checkContext(n); err != nil {
			return o, fmt.Errorf("%w: context %d: %w", ErrOptions, n, err)
		}
		if i > 0 && o.Contexts[i-1] == n {
			return o, fmt.Errorf("%w: context %d is given twice", ErrOptions, n)
		}
	}
	return o, nil
}

// layout cuts the model into chunks and accounts every tensor's bytes.
func layout(c *model.Config, ws []Weight, o Options) (*Plan, error) {
	byName := make(map[string]Weight, len(ws))
	for _, w := range ws {
		if _, dup := byName[w.Name]; dup {
			return nil, fmt.Errorf("matrix %q is given twice", w.Name)
		}
		byName[w.Name] = w
	}
	lpc := o.LayersPerChunk
	p := &Plan{Layers: len(c.Layers), LayerKinds: kinds(c.Layers), LayersPerChunk: lpc, T: o.T, PrefillRows: PrefillRows,
		Contexts: o.Contexts, Chunks: newChunks(c, lpc, o.T), Warnings: []string{}}
	head := &p.Chunks[len(p.Chunks)-1]
	seen := make(map[string]bool, len(ws))
	for _, s := range model.Tensors(c) {
		ch := head
		if s.Layer >= 0 {
			ch = &p.Chunks[s.Layer/lpc]
		}
		if !s.Matrix {
			ch.VectorBytes += 2 * s.Elements()
			ch.WeightBytes += 2 * s.Elements()
			continue
		}
		w, ok := byName[s.Name]
		if !ok {
			return nil, fmt.Errorf("matrix %q of the model has no weight", s.Name)
		}
		if w.Bytes <= 0 {
			return nil, fmt.Errorf("matrix %q: %d bytes", s.Name, w.Bytes)
		}
		seen[s.Name] = true
		if s.Part == model.PartEmbed {
			p.HostBytes = 2 * s.Elements() // the host's fp16 table (§8)
			if !c.Tied {
				continue
			}
			s.Role = "head" // a tied model's head is the embedding matrix
		}
		ch.add(s, w)
	}
	for _, w := range ws {
		if !seen[w.Name] {
			return nil, fmt.Errorf("matrix %q is not one of the model's", w.Name)
		}
	}
	p.placements()
	return p, nil
}

// newChunks returns the ⌈L/lpc⌉ layer chunks of c, with their KV bytes
// per position and state bytes at t rows per step, and the head chunk.
func newChunks(c *model.Config, lpc, t int) []Chunk {
	L := len(c.Layers)
	n := (L + lpc - 1) / lpc
	chs := make([]Chunk, n+1)
	for i := range n {
		lo, hi := i*lpc, min((i+1)*lpc, L)
		ch := &chs[i]
		ch.Name, ch.Layers, ch.Kinds = strconv.Itoa(i), []int{lo, hi - 1}, kinds(c.Layers[lo:hi])
		for _, k := range c.Layers[lo:hi] {
			if k == model.Attention {
				ch.KVBytesPerTokenFP16 += KVBytesPerTokenFP16(c)
				ch.KVBytesPerTokenInt8V += KVBytesPerTokenInt8V(c)
			} else {
				ch.StateBytes += StateBytes(c, t)
			}
		}
	}
	chs[n].Name, chs[n].Layers = "head", []int{}
	return chs
}

// add places the matrix of spec s stored as w in the chunk.
func (ch *Chunk) add(s model.TensorSpec, w Weight) {
	out, in := s.Shape[0], s.Shape[1]
	pl := lut.Place(w.Format, out, in)
	m := Matrix{Name: s.Name, Layer: s.Layer, Role: s.Role, Format: w.Format.String(), Shape: [2]int{out, in},
		Rank: w.Rank, Bytes: w.Bytes, Placement: pl.String()}
	if w.Note != "" {
		m.Placement += "; " + w.Note
	}
	switch pl.Where {
	case lut.OnANE:
		m.Where, m.CostBytes = "ane", costBytes(w, out, in)
		ch.WeightBytes += m.Bytes
		ch.CostBytes += m.CostBytes
	case lut.OnCPU:
		m.Where = "cpu"
		ch.CPUBytes += m.Bytes
	default:
		m.Where = "inexpressible"
		ch.CPUBytes += m.Bytes
	}
	ch.Matrices = append(ch.Matrices, m)
}

// GroupCost is the time factor of a per-group scalar LUT on the ANE: "any
// grouping costs ~20%" (+19–21% measured at the 27B MLP shape,
// docs/quantization.md §1 and the seed's research notes §2).
const GroupCost = 1.2

// costBytes is what the cost model charges for a matrix on the ANE: its
// bytes with 3- and 6-bit indices counted at 4 and 8 bits (the ANE reads
// them like those, no speed gain; docs/quantization.md §1), times
// GroupCost for a per-group scalar LUT.
func costBytes(w Weight, out, in int) int64 {
	b := w.Bytes
	if f := w.Format; f.Quantized() && (f.Bits == 3 || f.Bits == 6) {
		read := f
		read.Bits = map[int]int{3: 4, 6: 8}[f.Bits]
		b += read.Size(out, in, w.Rank).Index - f.Size(out, in, w.Rank).Index
	}
	if f := w.Format; f.Kind == lut.Scalar && f.Group > 0 && f.Group < out {
		b = int64(math.Round(float64(b) * GroupCost))
	}
	return b
}

// placements groups the matrices by role, format, rank and placement, in
// the order they first appear.
func (p *Plan) placements() {
	p.Placement = []Placement{}
	for _, ch := range p.Chunks {
		for _, m := range ch.Matrices {
			i := slices.IndexFunc(p.Placement, func(g Placement) bool {
				return g.Role == m.Role && g.Format == m.Format && g.Rank == m.Rank && g.Placement == m.Placement
			})
			if i < 0 {
				p.Placement = append(p.Placement, Placement{Role: m.Role, Layers: []int{}, Format: m.Format, Rank: m.Rank,
					Where: m.Where, Placement: m.Placement})
				i = len(p.Placement) - 1
			}
			g := &p.Placement[i]
			g.Count++
			g.Bytes += m.Bytes
			if m.Layer >= 0 {
				g.Layers = append(g.Layers, m.Layer)
			}
		}
	}
}

// warn lists what the projection leaves out or stretches.
func (p *Plan) warn(c *model.Config) {
	for _, ch := range p.Chunks {
		for _, m := range ch.Matrices {
			if m.Where != "ane" {
				p.Warnings = append(p.Warnings, fmt.Sprintf("%s (chunk %s, %s, %s) %s; its bytes are counted apart, outside the projected times",
					m.Name, ch.Name, m.Format, units.BytesPrecise(m.Bytes), m.Placement))
			}
		}
	}
	if c.MaxContext > 0 && p.Contexts[len(p.Contexts)-1] > c.MaxContext {
		var over []string
		for _, n := range p.Contexts {
			if n > c.MaxContext {
				over = append(over, FormatContext(n))
			}
		}
		what := "context entries %s exceed"
		if len(over) == 1 {
			what = "context entry %s exceeds"
		}
		p.Warnings = append(p.Warnings, fmt.Sprintf(what+" the model's max_position_embeddings %d", strings.Join(over, ", "), c.MaxContext))
	}
	if p.T != referenceT {
		p.Warnings = append(p.Warnings, fmt.Sprintf("T = %d: the cost model is calibrated on %d-row steps; it charges the weights once per step "+
			"and scales only the state with T (compute that grows with T is not modelled)", p.T, referenceT))
	}
}

// kinds writes layer kinds as letters: L Gated DeltaNet, A gated attention.
func kinds(ks []model.LayerKind) string {
	var b strings.Builder
	for _, k := range ks {
		if k == model.Attention {
			b.WriteByte('A')
		} else {
			b.WriteByte('L')
		}
	}
	return b.String()
}
