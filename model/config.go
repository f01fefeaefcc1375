package model

import (
	"fmt"
	"math"
)

// LayerKind is a decoder layer's token mixer.
type LayerKind int

const (
	// DeltaNet is a Gated DeltaNet layer ("linear_attention"), docs/model.md §7–8.
	DeltaNet LayerKind = iota
	// Attention is a gated full-attention layer ("full_attention"), docs/model.md §6.
	Attention
)

func (k LayerKind) String() string {
	if k == Attention {
		return "full_attention"
	}
	return "linear_attention"
}

// Config is the text model's configuration (docs/model.md §2), already resolved:
// defaults applied and layer kinds expanded.
type Config struct {
	Vocab        int         // vocab_size
	Hidden       int         // hidden_size H
	Intermediate int         // intermediate_size I
	Layers       []LayerKind // layer_types, len = num_hidden_layers L
	Heads        int         // num_attention_heads Hq
	KVHeads      int         // num_key_value_heads Hkv
	HeadDim      int         // head_dim D
	Eps          float64     // rms_norm_eps ε
	KeyHeads     int         // linear_num_key_heads Hk
	ValueHeads   int         // linear_num_value_heads Hv
	KeyDim       int         // linear_key_head_dim dk
	ValueDim     int         // linear_value_head_dim dv
	ConvKernel   int         // linear_conv_kernel_dim K
	RopeTheta    float64     // rope_parameters.rope_theta θ
	RotaryFactor float64     // partial_rotary_factor
	Tied         bool        // tie_word_embeddings
	MaxContext   int         // max_position_embeddings: longest sequence a State may hold (0: unbounded)
}

// Derived quantities (docs/model.md §2.2).

// KeyTotal is Hk·dk.
func (c *Config) KeyTotal() int { return c.KeyHeads * c.KeyDim }

// ValueTotal is Hv·dv.
func (c *Config) ValueTotal() int { return c.ValueHeads * c.ValueDim }

// ConvDim is 2·Hk·dk + Hv·dv, the channels of in_proj_qkv and the conv.
func (c *Config) ConvDim() int { return 2*c.KeyTotal() + c.ValueTotal() }

// RotaryDim is floor(D·partial_rotary_factor).
func (c *Config) RotaryDim() int { return int(math.Floor(float64(c.HeadDim) * c.RotaryFactor)) }

// Limits on a configuration's sizes, far above any real model (the 27B has
// 64 layers, hidden 5120, MLP 17408, vocabulary 248,320), so that a hostile
// or mistyped config.json is refused before anything is allocated from it.
const (
	MaxLayers  = 1 << 12 // num_hidden_layers
	MaxWidth   = 1 << 20 // hidden, intermediate, head counts and dims, conv taps
	MaxVocab   = 1 << 24 // vocab_size
	MaxContext = 1 << 24 // max_position_embeddings
	// MaxMatrix bounds the elements of any one weight matrix (2^36 = 256 GiB in bf16).
	MaxMatrix = 1 << 36
)

// Validate checks that every size is positive and within the limits above,
// that no weight matrix is larger than MaxMatrix, and that the head
// groupings divide. Field names in errors are the HF config keys.
func (c *Config) Validate() error {
	if err := c.validateSizes(); err != nil {
		return err
	}
	if c.MaxContext < 0 || c.MaxContext > MaxContext {
		return fmt.Errorf("config: max_position_embeddings = %d, want 0 (unbounded) … %d", c.MaxContext, MaxContext)
	}
	for _, m := range [][3]any{
		{"vocab_size × hidden_size", c.Vocab, c.Hidden},
		{"intermediate_size × hidden_size", c.Intermediate, c.Hidden},
		{"2·num_attention_heads·head_dim × hidden_size", 2 * c.Heads * c.HeadDim, c.Hidden},
		{"conv channels × hidden_size", c.ConvDim(), c.Hidden},
		{"linear value heads·dims × hidden_size", c.ValueTotal(), c.Hidden},
	} {
		if a, b := m[1].(int), m[2].(int); int64(a)*int64(b) > MaxMatrix {
			return fmt.Errorf("config: %s = %d × %d is a matrix of more than 2^36 weights", m[0], a, b)
		}
	}
	if c.ValueHeads%c.KeyHeads != 0 {
		return fmt.Errorf("config: linear_num_value_heads = %d is not a multiple of linear_num_key_heads = %d", c.ValueHeads, c.KeyHeads)
	}
	if c.Heads%c.KVHeads != 0 {
		return fmt.Errorf("config: num_attention_heads = %d is not a multiple of num_key_value_heads = %d", c.Heads, c.KVHeads)
	}
	if !(c.Eps > 0) {
		return fmt.Errorf("config: rms_norm_eps = %v, want > 0", c.Eps)
	}
	if !(c.RopeTheta > 1) {
		return fmt.Errorf("config: rope_theta = %v, want > 1", c.RopeTheta)
	}
	if !(c.RotaryFactor > 0 && c.RotaryFactor <= 1) {
		return fmt.Errorf("config: partial_rotary_factor = %v, want in (0, 1]", c.RotaryFactor)
	}
	if r := c.RotaryDim(); r < 2 || r%2 != 0 {
		return fmt.Errorf("config: rotary dim floor(head_dim·partial_rotary_factor) = %d, want even and ≥ 2", r)
	}
	return nil
}

// validateSizes checks each size against 0 and its limit.
func (c *Config) validateSizes() error {
	for _, f := range []struct {
		name   string
		v, max int
	}{
		{"vocab_size", c.Vocab, MaxVocab}, {"hidden_size", c.Hidden, MaxWidth},
		{"intermediate_size", c.Intermediate, MaxWidth}, {"num_hidden_layers", len(c.Layers), MaxLayers},
		{"num_attention_heads", c.Heads, MaxWidth}, {"num_key_value_heads", c.KVHeads, MaxWidth},
		{"head_dim", c.HeadDim, MaxWidth}, {"linear_num_key_heads", c.KeyHeads, MaxWidth},
		{"linear_num_value_heads", c.ValueHeads, MaxWidth}, {"linear_key_head_dim", c.KeyDim, MaxWidth},
		{"linear_value_head_dim", c.ValueDim, MaxWidth}, {"linear_conv_kernel_dim", c.ConvKernel, MaxWidth},
	} {
		if f.v <= 0 {
			return fmt.Errorf("config: %s = %d, want > 0", f.name, f.v)
		}
		if f.v > f.max {
			return fmt.Errorf("config: %s = %d, more than the %d this build accepts", f.name, f.v, f.max)
		}
	}
	return nil
}
