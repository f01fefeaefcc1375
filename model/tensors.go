package model

import "strconv"

// Part groups tensors for size reports and quantization plans.
type Part string

// The parts of a Qwen3.5 text model.
const (
	PartEmbed    Part = "embeddings"
	PartMLP      Part = "mlp"
	PartDeltaNet Part = "deltanet"  // in_proj_qkv, in_proj_z, out_proj (and the small a/b projections)
	PartAttn     Part = "attention" // q/k/v/o projections
	PartHead     Part = "head"
	PartOther    Part = "norms/other" // norms, conv taps, A_log, dt_bias
)

// Parts lists every Part in report order.
var Parts = []Part{PartEmbed, PartMLP, PartDeltaNet, PartAttn, PartHead, PartOther}

// TensorSpec is one tensor a checkpoint of Config must hold (names without
// the HF prefix, docs/model.md §3.2).
type TensorSpec struct {
	Name   string
	Shape  []int
	Part   Part
	Matrix bool // a 2-D weight used as a Linear
}

// Elements returns the product of the shape.
func (t TensorSpec) Elements() int64 {
	n := int64(1)
	for _, d := range t.Shape {
		n *= int64(d)
	}
	return n
}

// Tensors lists every tensor of the text model for c, in checkpoint order:
// embeddings, layers, final norm, head (absent when tied).
func Tensors(c *Config) []TensorSpec {
	H, I := c.Hidden, c.Intermediate
	var ts []TensorSpec
	add := func(name string, part Part, matrix bool, shape ...int) {
		ts = append(ts, TensorSpec{Name: name, Shape: shape, Part: part, Matrix: matrix})
	}
	add("embed_tokens.weight", PartEmbed, true, c.Vocab, H)
	for i, kind := range c.Layers {
		p := "layers." + strconv.Itoa(i) + "."
		add(p+"input_layernorm.weight", PartOther, false, H)
		add(p+"post_attention_layernorm.weight", PartOther, false, H)
		if kind == Attention {
			D := c.HeadDim
			add(p+"self_attn.q_proj.weight", PartAttn, true, 2*c.Heads*D, H)
			add(p+"self_attn.k_proj.weight", PartAttn, true, c.KVHeads*D, H)
			add(p+"self_attn.v_proj.weight", PartAttn, true, c.KVHeads*D, H)
			add(p+"self_attn.o_proj.weight", PartAttn, true, H, c.Heads*D)
			add(p+"self_attn.q_norm.weight", PartOther, false, D)
			add(p+"self_attn.k_norm.weight", PartOther, false, D)
		} else {
			q := p + "linear_attn."
			add(q+"in_proj_qkv.weight", PartDeltaNet, true, c.ConvDim(), H)
			add(q+"in_proj_z.weight", PartDeltaNet, true, c.ValueTotal(), H)
			add(q+"in_proj_b.weight", PartDeltaNet, true, c.ValueHeads, H)
			add(q+"in_proj_a.weight", PartDeltaNet, true, c.ValueHeads, H)
			add(q+"conv1d.weight", PartOther, false, c.ConvDim(), 1, c.ConvKernel)
			add(q+"A_log", PartOther, false, c.ValueHeads)
			add(q+"dt_bias", PartOther, false, c.ValueHeads)
			add(q+"norm.weight", PartOther, false, c.ValueDim)
			add(q+"out_proj.weight", PartDeltaNet, true, H, c.ValueTotal())
		}
		add(p+"mlp.gate_proj.weight", PartMLP, true, I, H)
		add(p+"mlp.up_proj.weight", PartMLP, true, I, H)
		add(p+"mlp.down_proj.weight", PartMLP, true, H, I)
	}
	add("norm.weight", PartOther, false, H)
	if !c.Tied {
		add("lm_head.weight", PartHead, true, c.Vocab, H)
	}
	return ts
}

// ParamCount is the number of parameters of the text model (tied
// embeddings counted once).
func ParamCount(c *Config) int64 {
	var n int64
	for _, t := range Tensors(c) {
		n += t.Elements()
	}
	return n
}
