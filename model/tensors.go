package model

import (
	"strconv"
	"strings"
)

// Part is the one vocabulary of model parts (docs/quantization.md §4.1):
// plans assign formats by part, ablations select parts, low-rank
// corrections and size reports are given per part, and the command line
// names them.
type Part string

// The parts of a Qwen3.5 text model.
const (
	PartEmbed Part = "embed" // the embedding table
	PartMLP   Part = "mlp"   // gate, up, down
	PartGDN   Part = "gdn"   // Gated DeltaNet projections: in_proj_qkv, in_proj_z, out_proj (and the small in_proj_a/b)
	PartAttn  Part = "attn"  // gated attention q (with its gate) and o
	PartKV    Part = "kv"    // attention k and v
	PartHead  Part = "head"  // lm_head
	PartOther Part = "other" // norms, conv taps, A_log, dt_bias
)

// Parts lists every Part in report order.
var Parts = []Part{PartEmbed, PartMLP, PartGDN, PartAttn, PartKV, PartHead, PartOther}

// QuantParts are the parts whose matrices forge quantizes (plans,
// ablations and low-rank corrections select among them).
var QuantParts = []Part{PartMLP, PartGDN, PartAttn, PartKV, PartHead}

// ParsePart returns the Part named s, if it is one.
func ParsePart(s string) (Part, bool) {
	for _, p := range Parts {
		if string(p) == s {
			return p, true
		}
	}
	return "", false
}

// TensorSpec is one tensor a checkpoint of Config must hold (names without
// the HF prefix, docs/model.md §3.2), with what forge does with it.
type TensorSpec struct {
	Name  string
	Shape []int
	Layer int // −1 outside the decoder layers
	Part  Part
	// Role names the tensor within its layer: the plan key of a matrix
	// ("gate", "qkv", "k", …, "head") or the vector's name ("input_norm",
	// "conv", "A_log", …).
	Role string
	// Keys are the plan keys that select the matrix, most specific first
	// (docs/quantization.md §4.2): its role, then a group such as "kv" or
	// "mixer". Empty for tensors no plan assigns.
	Keys   []string
	Matrix bool // a 2-D weight used as a Linear
	// Quantizable matrices are the ones forge quantizes: the MLP, the
	// DeltaNet in_proj_qkv / in_proj_z / out_proj, the attention q/k/v/o
	// and the head. Embeddings, norms, conv taps, A_log, dt_bias and the
	// small in_proj_a / in_proj_b stay float.
	Quantizable bool
	// Stage orders a layer's quantizable matrices for true-sequential
	// calibration (docs/quantization.md §3): 0 the mixer input projections,
	// 1 the mixer output projection, 2 MLP gate and up, 3 MLP down; the
	// matrices of one stage read the same input. The head is stage 0 of
	// layer −1, after every layer.
	Stage int
}

// Elements returns the product of the shape.
func (t TensorSpec) Elements() int64 {
	n := int64(1)
	for _, d := range t.Shape {
		n *= int64(d)
	}
	return n
}

// entry is one row of the tensor table: a tensor of a layer of some kind
// (or of the model), its name suffix, and its shape under a Config.
type entry struct {
	suffix string
	part   Part
	role   string
	keys   []string
	matrix bool
	quant  bool
	stage  int
	shape  func(c *Config) []int
}

func dims(d ...int) []int { return d }

// The table. Names, shapes and order follow docs/model.md §3.2; the order
// within a layer is the checkpoint's.
var (
	headEntries = []entry{
		{suffix: "embed_tokens.weight", part: PartEmbed, role: "embed", matrix: true,
			shape: func(c *Config) []int { return dims(c.Vocab, c.Hidden) }},
	}
	layerNorms = []entry{
		{suffix: "input_layernorm.weight", part: PartOther, role: "input_norm", shape: func(c *Config) []int { return dims(c.Hidden) }},
		{suffix: "post_attention_layernorm.weight", part: PartOther, role: "post_norm", shape: func(c *Config) []int { return dims(c.Hidden) }},
	}
	attentionEntries = []entry{
		{"self_attn.q_proj.weight", PartAttn, "q", []string{"q", "mixer"}, true, true, 0, func(c *Config) []int { return dims(2*c.Heads*c.HeadDim, c.Hidden) }},
		{"self_attn.k_proj.weight", PartKV, "k", []string{"k", "kv", "mixer"}, true, true, 0, func(c *Config) []int { return dims(c.KVHeads*c.HeadDim, c.Hidden) }},
		{"self_attn.v_proj.weight", PartKV, "v", []string{"v", "kv", "mixer"}, true, true, 0, func(c *Config) []int { return dims(c.KVHeads*c.HeadDim, c.Hidden) }},
		{"self_attn.o_proj.weight", PartAttn, "o", []string{"o", "mixer"}, true, true, 1, func(c *Config) []int { return dims(c.Hidden, c.Heads*c.HeadDim) }},
		{suffix: "self_attn.q_norm.weight", part: PartOther, role: "q_norm", shape: func(c *Config) []int { return dims(c.HeadDim) }},
		{suffix: "self_attn.k_norm.weight", part: PartOther, role: "k_norm", shape: func(c *Config) []int { return dims(c.HeadDim) }},
	}
	deltaNetEntries = []entry{
		{"linear_attn.in_proj_qkv.weight", PartGDN, "qkv", []string{"qkv", "mixer"}, true, true, 0, func(c *Config) []int { return dims(c.ConvDim(), c.Hidden) }},
		{"linear_attn.in_proj_z.weight", PartGDN, "z", []string{"z", "mixer"}, true, true, 0, func(c *Config) []int { return dims(c.ValueTotal(), c.Hidden) }},
		{suffix: "linear_attn.in_proj_b.weight", part: PartGDN, role: "b", matrix: true, shape: func(c *Config) []int { return dims(c.ValueHeads, c.Hidden) }},
		{suffix: "linear_attn.in_proj_a.weight", part: PartGDN, role: "a", matrix: true, shape: func(c *Config) []int { return dims(c.ValueHeads, c.Hidden) }},
		{suffix: "linear_attn.conv1d.weight", part: PartOther, role: "conv", shape: func(c *Config) []int { return dims(c.ConvDim(), 1, c.ConvKernel) }},
		{suffix: "linear_attn.A_log", part: PartOther, role: "A_log", shape: func(c *Config) []int { return dims(c.ValueHeads) }},
		{suffix: "linear_attn.dt_bias", part: PartOther, role: "dt_bias", shape: func(c *Config) []int { return dims(c.ValueHeads) }},
		{suffix: "linear_attn.norm.weight", part: PartOther, role: "gated_norm", shape: func(c *Config) []int { return dims(c.ValueDim) }},
		{"linear_attn.out_proj.weight", PartGDN, "out", []string{"out", "mixer"}, true, true, 1, func(c *Config) []int { return dims(c.Hidden, c.ValueTotal()) }},
	}
	mlpEntries = []entry{
		{"mlp.gate_proj.weight", PartMLP, "gate", []string{"gate", "mlp"}, true, true, 2, func(c *Config) []int { return dims(c.Intermediate, c.Hidden) }},
		{"mlp.up_proj.weight", PartMLP, "up", []string{"up", "mlp"}, true, true, 2, func(c *Config) []int { return dims(c.Intermediate, c.Hidden) }},
		{"mlp.down_proj.weight", PartMLP, "down", []string{"down", "mlp"}, true, true, 3, func(c *Config) []int { return dims(c.Hidden, c.Intermediate) }},
	}
	tailEntries = []entry{
		{suffix: "norm.weight", part: PartOther, role: "final_norm", shape: func(c *Config) []int { return dims(c.Hidden) }},
	}
	lmHead = entry{"lm_head.weight", PartHead, "head", []string{"head"}, true, true, 0, func(c *Config) []int { return dims(c.Vocab, c.Hidden) }}
)

// layerEntries lists the entries of a layer of kind, in checkpoint order.
func layerEntries(kind LayerKind) [][]entry {
	if kind == Attention {
		return [][]entry{layerNorms, attentionEntries, mlpEntries}
	}
	return [][]entry{layerNorms, deltaNetEntries, mlpEntries}
}

func (e entry) spec(c *Config, layer int, name string) TensorSpec {
	s := TensorSpec{Name: name, Layer: layer, Part: e.part, Role: e.role, Keys: e.keys, Matrix: e.matrix,
		Quantizable: e.quant, Stage: e.stage}
	if c != nil {
		s.Shape = e.shape(c)
	}
	return s
}

// Tensors lists every tensor of the text model for c, in checkpoint order:
// embeddings, layers, final norm, head (absent when tied).
func Tensors(c *Config) []TensorSpec {
	var ts []TensorSpec
	for _, e := range headEntries {
		ts = append(ts, e.spec(c, -1, e.suffix))
	}
	for i, kind := range c.Layers {
		p := "layers." + strconv.Itoa(i) + "."
		for _, group := range layerEntries(kind) {
			for _, e := range group {
				ts = append(ts, e.spec(c, i, p+e.suffix))
			}
		}
	}
	for _, e := range tailEntries {
		ts = append(ts, e.spec(c, -1, e.suffix))
	}
	if !c.Tied {
		ts = append(ts, lmHead.spec(c, -1, lmHead.suffix))
	}
	return ts
}

// Lookup classifies a tensor name ("layers.3.mlp.gate_proj.weight",
// "lm_head.weight") without a configuration: everything of its TensorSpec
// but the Shape. ok is false for a name the model does not have.
func Lookup(name string) (TensorSpec, bool) {
	if name == lmHead.suffix {
		return lmHead.spec(nil, -1, name), true
	}
	for _, es := range [][]entry{headEntries, tailEntries} {
		for _, e := range es {
			if e.suffix == name {
				return e.spec(nil, -1, name), true
			}
		}
	}
	rest, ok := strings.CutPrefix(name, "layers.")
	if !ok {
		return TensorSpec{}, false
	}
	num, rest, ok := strings.Cut(rest, ".")
	li, err := strconv.Atoi(num)
	if !ok || err != nil || li < 0 || strconv.Itoa(li) != num {
		return TensorSpec{}, false
	}
	for _, es := range [][]entry{layerNorms, attentionEntries, deltaNetEntries, mlpEntries} {
		for _, e := range es {
			if e.suffix == rest {
				return e.spec(nil, li, name), true
			}
		}
	}
	return TensorSpec{}, false
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

// PlanKeys lists every plan key of a layer's matrices ("gate", "mlp",
// "qkv", "kv", "mixer", …): the names a plan's LAYER.NAME keys may use.
func PlanKeys() []string {
	seen := map[string]bool{}
	var keys []string
	for _, es := range [][]entry{attentionEntries, deltaNetEntries, mlpEntries} {
		for _, e := range es {
			for _, k := range e.keys {
				if !seen[k] {
					seen[k] = true
					keys = append(keys, k)
				}
			}
		}
	}
	return keys
}
