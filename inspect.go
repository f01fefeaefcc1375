package forge

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"forge/checkpoint"
	"forge/model"
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
	DTypes       []string    `json:"dtypes"`
}

// PartStats is one row of the size table.
type PartStats struct {
	Part   string `json:"part"`
	Params int64  `json:"params"`
	Bytes  int64  `json:"bytes"`
}

// Inspect opens the checkpoint in dir and summarises it.
func Inspect(dir string) (*Inspection, error) {
	ck, err := checkpoint.Open(dir)
	if err != nil {
		return nil, err
	}
	defer ck.Close()
	c, _ := ck.Config()
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
	byPart := map[model.Part]*PartStats{}
	for _, p := range model.Parts {
		in.Parts = append(in.Parts, PartStats{Part: string(p)})
	}
	for i := range in.Parts {
		byPart[model.Part(in.Parts[i].Part)] = &in.Parts[i]
	}
	seen := map[string]bool{}
	for _, t := range ck.Tensors() {
		ps := byPart[t.Spec.Part]
		ps.Params += t.Spec.Elements()
		ps.Bytes += t.Bytes
		in.Params += t.Spec.Elements()
		in.Bytes += t.Bytes
		if d := t.DType.String(); !seen[d] {
			seen[d] = true
			in.DTypes = append(in.DTypes, d)
		}
	}
	return in, nil
}

// WriteTable prints the summary and the size table for a terminal.
func (in *Inspection) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "model\t%s\n", in.Path)
	fmt.Fprintf(tw, "layers\t%d (%d Gated DeltaNet, %d gated attention): %s\n", in.Layers, in.DeltaNet, in.Attention, layerPattern(in.LayerKinds))
	fmt.Fprintf(tw, "hidden / MLP / vocab\t%d / %d / %d\n", in.Hidden, in.Intermediate, in.Vocab)
	fmt.Fprintf(tw, "attention\t%d q heads, %d kv heads, head_dim %d, rotary %d, theta %g\n", in.Heads, in.KVHeads, in.HeadDim, in.RotaryDim, in.RopeTheta)
	fmt.Fprintf(tw, "deltanet\t%d key heads × %d, %d value heads × %d, conv %d\n", in.KeyHeads, in.KeyDim, in.ValueHeads, in.ValueDim, in.ConvKernel)
	fmt.Fprintf(tw, "context\t%d\n", in.Context)
	fmt.Fprintf(tw, "tied embeddings\t%v\n", in.Tied)
	fmt.Fprintf(tw, "dtypes\t%s\n\n", strings.Join(in.DTypes, ", "))
	fmt.Fprintf(tw, "part\tparams\tbytes\tshare\t\n")
	for _, p := range in.Parts {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.1f%%\t\n", p.Part, p.Params, humanBytes(p.Bytes), 100*float64(p.Bytes)/float64(max(in.Bytes, 1)))
	}
	fmt.Fprintf(tw, "total\t%d\t%s\t100.0%%\t\n", in.Params, humanBytes(in.Bytes))
	return tw.Flush()
}

// layerPattern writes layer kinds compactly: L = linear, A = attention.
func layerPattern(kinds []string) string {
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

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
