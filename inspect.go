package forge

import (
	"fmt"
	"slices"
	"strings"

	"forge/bundle"
	"forge/lut"
	"forge/model"
	"forge/source"
)

// Inspection summarises a checkpoint: architecture, and parameters and
// bytes by part.
type Inspection struct {
	Path         string      `json:"path"`
	Layers       int         `json:"layers"`
	LayerKinds   []string    `json:"layer_types"`
	DeltaNet     int         `json:"deltanet_layers"`
	Attention    int         `json:"attention_layers"`
	Hidden       int         `json:"hidden_size"`
	Intermediate int         `json:"intermediate_size"`
	Vocab        int         `json:"vocab_size"`
	Heads        int         `json:"attention_heads"`
	KVHeads      int         `json:"kv_heads"`
	HeadDim      int         `json:"head_dim"`
	RotaryDim    int         `json:"rotary_dim"`
	KeyHeads     int         `json:"linear_key_heads"`
	ValueHeads   int         `json:"linear_value_heads"`
	KeyDim       int         `json:"linear_key_head_dim"`
	ValueDim     int         `json:"linear_value_head_dim"`
	ConvKernel   int         `json:"conv_kernel"`
	Context      int         `json:"max_position_embeddings"`
	RopeTheta    float64     `json:"rope_theta"`
	Tied         bool        `json:"tie_word_embeddings"`
	Params       int64       `json:"params"`
	Bytes        int64       `json:"bytes"`
	Parts        []PartStats `json:"parts"`
	DTypes       []string    `json:"dtypes,omitempty"`
	// Bundle only: the quantization and every matrix's format and cost.
	Bundle bool   `json:"bundle"`
	Method string `json:"method,omitempty"`
	Format string `json:"format,omitempty"`
	// Refit (bundle only, when the recipe refit codebooks) says on how
	// many matrices the refit was kept and what it gained: "kept on 40 of
	// 54 matrices, held-out SNR +0.41 dB median where kept".
	Refit string `json:"refit,omitempty"`
	// Reconstruction (bundle only, when the recipe reconstructed blocks)
	// says on how many layers the fit was kept and the median held-out
	// loss change: "kept on 8 of 8 layers, held-out loss −0.6% median".
	Reconstruction string        `json:"reconstruction,omitempty"`
	Matrices       []MatrixStats `json:"matrices,omitempty"`
}

// MatrixStats is one matrix of a bundle: format, packed bytes, bits per
// weight, the online rotation of its input and where the ANE stack would
// run it.
type MatrixStats struct {
	Name   string  `json:"name"`
	Part   string  `json:"part"`
	Format string  `json:"format"`
	Shape  [2]int  `json:"shape"`
	Bytes  int64   `json:"bytes"`
	BPW    float64 `json:"bpw"`
	// Rotation is the input rotation, "hadamard seed 1003 block 256", with
	// " signs numpy" when its signs are numpy's (bundle.RotationEntry);
	// "" for none.
	Rotation  string `json:"rotation,omitempty"`
	Placement string `json:"ane"`
	// SNR is the held-out output SNR record of the quantize run (none
	// without calibration).
	SNR *bundle.SNREntry `json:"heldout_snr_db,omitempty"`
}

// PartStats is one row of the size table.
type PartStats struct {
	Part   string  `json:"part"`
	Params int64   `json:"params"`
	Bytes  int64   `json:"bytes"`
	BPW    float64 `json:"bpw"`
	// ANE (bundle only) counts the part's matrices by placement, e.g.
	// "24 on the ANE, 2 fall back to the CPU".
	ANE string `json:"ane,omitempty"`
}

// Inspect opens the checkpoint or bundle in dir and summarises it.
func Inspect(dir string) (*Inspection, error) {
	if bundle.IsBundle(dir) {
		return inspectBundle(dir)
	}
	ck, err := source.OpenCheckpoint(dir)
	if err != nil {
		return nil, err
	}
	defer ck.Close()
	c, _ := ck.Config()
	in := newInspection(dir, &c)
	seen := map[string]bool{}
	for _, t := range ck.Tensors() {
		in.add(t.Spec, t.Bytes)
		if d := t.DType.String(); !seen[d] {
			seen[d] = true
			in.DTypes = append(in.DTypes, d)
		}
	}
	in.finish()
	return in, nil
}

// inspectBundle summarises a bundle: sizes as stored, plus every matrix's
// format, bits per weight and ANE placement.
func inspectBundle(dir string) (*Inspection, error) {
	b, err := bundle.Open(dir)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	c, _ := b.Config()
	in := newInspection(dir, &c)
	in.Bundle = true
	in.Method, in.Format = b.Manifest().Quant.Method, b.Manifest().Quant.Format
	for _, spec := range model.Tensors(&c) {
		n, _ := b.StoredBytes(spec.Name)
		in.add(spec, n)
		e, ok := b.Entry(spec.Name)
		if !ok {
			continue
		}
		ms := MatrixStats{Name: spec.Name, Part: string(spec.Part), Format: e.Format, Shape: e.Shape, Bytes: e.Bytes, BPW: e.BPW}
		if e.Rotation != nil {
			ms.Rotation = e.Rotation.String()
		}
		ms.SNR = e.SNR
		if f, err := lut.ParseFormat(e.Format); err == nil {
			ms.Placement = lut.Place(f, e.Shape[0], e.Shape[1]).String()
		}
		in.Matrices = append(in.Matrices, ms)
	}
	in.finish()
	in.summarizeANE()
	in.summarizeRefit()
	in.summarizeRecon(b.Manifest().Quant.Recipe["reconstruction_log"])
	return in, nil
}

// summarizeRecon fills Reconstruction from the manifest's log.
func (in *Inspection) summarizeRecon(raw any) {
	log, ok := raw.([]any)
	if !ok || len(log) == 0 {
		return
	}
	var kept int
	var change []float64
	for _, e := range log {
		m, _ := e.(map[string]any)
		before, _ := m["held_before"].(float64)
		after, _ := m["held_after"].(float64)
		if k, _ := m["kept"].(bool); k && before > 0 {
			kept++
			change = append(change, 100*(after-before)/before)
		}
	}
	in.Reconstruction = fmt.Sprintf("kept on %d of %d layers", kept, len(log))
	if len(change) > 0 {
		slices.Sort(change)
		in.Reconstruction += fmt.Sprintf(", held-out loss %+.1f%% median where kept", change[len(change)/2])
	}
}

// summarizeRefit fills Refit from the matrices' SNR records.
func (in *Inspection) summarizeRefit() {
	var tried int
	var gains []float64
	for _, m := range in.Matrices {
		if m.SNR == nil || m.SNR.Refit == nil {
			continue
		}
		tried++
		if m.SNR.Refitted {
			gains = append(gains, *m.SNR.Refit-m.SNR.Method)
		}
	}
	if tried == 0 {
		return
	}
	in.Refit = fmt.Sprintf("kept on %d of %d matrices tried", len(gains), tried)
	if len(gains) > 0 {
		slices.Sort(gains)
		in.Refit += fmt.Sprintf(", held-out SNR %+.2f dB median where kept", gains[len(gains)/2])
	}
}

// summarizeANE fills each part's ANE column from its matrices' placements.
func (in *Inspection) summarizeANE() {
	for i := range in.Parts {
		p := &in.Parts[i]
		var ane, cpu, none int
		for _, m := range in.Matrices {
			switch {
			case m.Part != p.Part:
			case strings.HasPrefix(m.Placement, lut.OnANE.String()):
				ane++
			case strings.HasPrefix(m.Placement, lut.OnCPU.String()):
				cpu++
			default:
				none++
			}
		}
		var parts []string
		if ane > 0 {
			parts = append(parts, fmt.Sprintf("%d on the ANE", ane))
		}
		if cpu > 0 {
			parts = append(parts, fmt.Sprintf("%d fall back to the CPU", cpu))
		}
		if none > 0 {
			parts = append(parts, fmt.Sprintf("%d not expressible", none))
		}
		p.ANE = strings.Join(parts, ", ")
	}
}

func newInspection(dir string, c *model.Config) *Inspection {
	in := &Inspection{
		Path: dir, Layers: len(c.Layers), Hidden: c.Hidden, Intermediate: c.Intermediate,
		Vocab: c.Vocab, Heads: c.Heads, KVHeads: c.KVHeads, HeadDim: c.HeadDim, RotaryDim: c.RotaryDim(),
		KeyHeads: c.KeyHeads, ValueHeads: c.ValueHeads, KeyDim: c.KeyDim, ValueDim: c.ValueDim,
		ConvKernel: c.ConvKernel, Context: c.MaxContext, RopeTheta: c.RopeTheta, Tied: c.Tied,
	}
	for _, k := range c.Layers {
		in.LayerKinds = append(in.LayerKinds, k.String())
		if k == model.Attention {
			in.Attention++
		} else {
			in.DeltaNet++
		}
	}
	for _, p := range model.Parts {
		in.Parts = append(in.Parts, PartStats{Part: string(p)})
	}
	return in
}

// add counts one tensor of bytes stored bytes.
func (in *Inspection) add(spec model.TensorSpec, bytes int64) {
	for i := range in.Parts {
		if in.Parts[i].Part == string(spec.Part) {
			in.Parts[i].Params += spec.Elements()
			in.Parts[i].Bytes += bytes
		}
	}
	in.Params += spec.Elements()
	in.Bytes += bytes
}

func (in *Inspection) finish() {
	for i := range in.Parts {
		if p := &in.Parts[i]; p.Params > 0 {
			p.BPW = 8 * float64(p.Bytes) / float64(p.Params)
		}
	}
}

// LayerPattern writes layer kinds compactly: L = linear, A = attention.
func LayerPattern(kinds []string) string {
	var b strings.Builder
	for _, k := range kinds {
		if k == model.Attention.String() {
			b.WriteByte('A')
		} else {
			b.WriteByte('L')
		}
	}
	return b.String()
}
