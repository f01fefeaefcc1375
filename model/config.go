package model

import (
	"fmt"
	"math"
)

// LayerKind is a decoder layer's token mixer.
type LayerKind int

const (
	// DeltaNet is a Gated DeltaNet layer ("linear_attention"), spec §7–8.
	DeltaNet LayerKind = iota
	// Attention is a gated full-attention layer ("full_attention"), spec §6.
	Attention
)

func (k LayerKind) String() string {
	if k == Attention {
		return "full_attention"
	}
	return "linear_attention"
}

// Config is the text model's configuration (spec §2), already resolved:
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
	MaxContext   int         // max_position_embeddings (informational)
}

// Derived quantities (spec §2.2).

// KeyTotal is Hk·dk.
func (c *Config) KeyTotal() int { return c.KeyHeads * c.KeyDim }

// ValueTotal is Hv·dv.
func (c *Config) ValueTotal() int { return c.ValueHeads * c.ValueDim }

// ConvDim is 2·Hk·dk + Hv·dv, the channels of in_proj_qkv and the conv.
func (c *Config) ConvDim() int { return 2*c.KeyTotal() + c.ValueTotal() }

// RotaryDim is floor(D·partial_rotary_factor).
func (c *Config) RotaryDim() int { return int(math.Floor(float64(c.HeadDim) * c.RotaryFactor)) }

// Validate checks that every size is positive and the head groupings divide.
// Field names in errors are the HF config keys.
func (c *Config) Validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{
		{"vocab_size", c.Vocab}, {"hidden_size", c.Hidden}, {"intermediate_size", c.Intermediate},
		{"num_hidden_layers", len(c.Layers)}, {"num_attention_heads", c.Heads},
		{"num_key_value_heads", c.KVHeads}, {"head_dim", c.HeadDim},
		{"linear_num_key_heads", c.KeyHeads}, {"linear_num_value_heads", c.ValueHeads},
		{"linear_key_head_dim", c.KeyDim}, {"linear_value_head_dim", c.ValueDim},
		{"linear_conv_kernel_dim", c.ConvKernel},
	} {
		if f.v <= 0 {
			return fmt.Errorf("config: %s = %d, want > 0", f.name, f.v)
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
