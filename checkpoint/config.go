package checkpoint

import (
	"encoding/json"
	"fmt"

	"forge/model"
)

// hfConfig is the text part of a Qwen3.5 config.json (docs/model.md §2). Pointer
// fields tell "absent" from zero.
type hfConfig struct {
	ModelType     *string          `json:"model_type"`
	Vocab         *int             `json:"vocab_size"`
	Hidden        *int             `json:"hidden_size"`
	Intermediate  *int             `json:"intermediate_size"`
	Layers        *int             `json:"num_hidden_layers"`
	LayerTypes    []string         `json:"layer_types"`
	Interval      *int             `json:"full_attention_interval"`
	Heads         *int             `json:"num_attention_heads"`
	KVHeads       *int             `json:"num_key_value_heads"`
	HeadDim       *int             `json:"head_dim"`
	Eps           *float64         `json:"rms_norm_eps"`
	Act           *string          `json:"hidden_act"`
	AttentionBias *bool            `json:"attention_bias"`
	KeyHeads      *int             `json:"linear_num_key_heads"`
	ValueHeads    *int             `json:"linear_num_value_heads"`
	KeyDim        *int             `json:"linear_key_head_dim"`
	ValueDim      *int             `json:"linear_value_head_dim"`
	ConvKernel    *int             `json:"linear_conv_kernel_dim"`
	RopeTheta     *float64         `json:"rope_theta"`
	RotaryFactor  *float64         `json:"partial_rotary_factor"`
	Rope          *hfRope          `json:"rope_parameters"`
	Tied          *bool            `json:"tie_word_embeddings"`
	MaxPos        *int             `json:"max_position_embeddings"`
	TextConfig    *json.RawMessage `json:"text_config"`
}

type hfRope struct {
	Type         *string  `json:"rope_type"`
	Theta        *float64 `json:"rope_theta"`
	RotaryFactor *float64 `json:"partial_rotary_factor"`
}

// ParseConfig reads a Qwen3.5 config.json: the text model under
// text_config (VLM wrapper) or flat (text-only class). Structural sizes are
// required; the rest take the defaults of docs/model.md §2.1. Errors name the field.
func ParseConfig(data []byte) (model.Config, error) {
	var top hfConfig
	if err := json.Unmarshal(data, &top); err != nil {
		return model.Config{}, err
	}
	txt := top
	if top.TextConfig != nil {
		txt = hfConfig{} // fresh: decoding into a copy would write through top's pointers
		if err := json.Unmarshal(*top.TextConfig, &txt); err != nil {
			return model.Config{}, fmt.Errorf("text_config: %w", err)
		}
		if top.Tied != nil { // the top-level flag of the nested config rules (docs/model.md §2.1)
			txt.Tied = top.Tied
		}
	}
	return txt.resolve()
}

func (h *hfConfig) resolve() (model.Config, error) {
	var c model.Config
	if h.ModelType != nil {
		switch *h.ModelType {
		case "qwen3_5_text", "qwen3_5":
		default:
			return c, fmt.Errorf("model_type %q is not a Qwen3.5 dense text model (want qwen3_5_text)", *h.ModelType)
		}
	}
	req := []struct {
		name string
		p    *int
		dst  *int
	}{
		{"vocab_size", h.Vocab, &c.Vocab}, {"hidden_size", h.Hidden, &c.Hidden},
		{"intermediate_size", h.Intermediate, &c.Intermediate},
		{"num_attention_heads", h.Heads, &c.Heads}, {"num_key_value_heads", h.KVHeads, &c.KVHeads},
		{"head_dim", h.HeadDim, &c.HeadDim},
		{"linear_num_key_heads", h.KeyHeads, &c.KeyHeads}, {"linear_num_value_heads", h.ValueHeads, &c.ValueHeads},
		{"linear_key_head_dim", h.KeyDim, &c.KeyDim}, {"linear_value_head_dim", h.ValueDim, &c.ValueDim},
	}
	for _, r := range req {
		if r.p == nil {
			return c, fmt.Errorf("missing field %s", r.name)
		}
		*r.dst = *r.p
	}
	if h.Layers == nil {
		return c, fmt.Errorf("missing field num_hidden_layers")
	}
	if err := h.resolveLayers(&c); err != nil {
		return c, err
	}
	c.ConvKernel = intOr(h.ConvKernel, 4)
	c.Eps = floatOr(h.Eps, 1e-6)
	c.MaxContext = intOr(h.MaxPos, 0)
	if h.MaxPos != nil && *h.MaxPos <= 0 {
		return c, fmt.Errorf("max_position_embeddings = %d, want > 0", *h.MaxPos)
	}
	c.Tied = h.Tied != nil && *h.Tied
	if h.Act != nil && *h.Act != "silu" {
		return c, fmt.Errorf("hidden_act %q is not supported (want silu)", *h.Act)
	}
	if h.AttentionBias != nil && *h.AttentionBias {
		return c, fmt.Errorf("attention_bias true is not supported (Qwen3.5 has no biases)")
	}
	if err := h.resolveRope(&c); err != nil {
		return c, err
	}
	return c, c.Validate()
}

func (h *hfConfig) resolveLayers(c *model.Config) error {
	n := *h.Layers
	if n <= 0 || n > model.MaxLayers {
		return fmt.Errorf("num_hidden_layers = %d, want 1 … %d", n, model.MaxLayers)
	}
	c.Layers = make([]model.LayerKind, n)
	if h.LayerTypes != nil {
		if len(h.LayerTypes) != n {
			return fmt.Errorf("layer_types has %d entries, num_hidden_layers is %d", len(h.LayerTypes), n)
		}
		for i, t := range h.LayerTypes {
			switch t {
			case "linear_attention":
				c.Layers[i] = model.DeltaNet
			case "full_attention":
				c.Layers[i] = model.Attention
			default:
				return fmt.Errorf("layer_types[%d] = %q, want linear_attention or full_attention", i, t)
			}
		}
		return nil
	}
	iv := intOr(h.Interval, 4)
	if iv <= 0 {
		return fmt.Errorf("full_attention_interval = %d, want > 0", iv)
	}
	for i := range c.Layers {
		if (i+1)%iv == 0 {
			c.Layers[i] = model.Attention
		}
	}
	return nil
}

// resolveRope reads rope_parameters first, then the top-level keys (docs/model.md §2.1).
func (h *hfConfig) resolveRope(c *model.Config) error {
	var theta, factor *float64
	if h.Rope != nil {
		if h.Rope.Type != nil && *h.Rope.Type != "default" {
			return fmt.Errorf("rope_parameters.rope_type %q is not supported (only default)", *h.Rope.Type)
		}
		theta, factor = h.Rope.Theta, h.Rope.RotaryFactor
	}
	if theta == nil {
		theta = h.RopeTheta
	}
	if factor == nil {
		factor = h.RotaryFactor
	}
	if theta == nil {
		return fmt.Errorf("missing field rope_parameters.rope_theta (or rope_theta)")
	}
	c.RopeTheta = *theta
	c.RotaryFactor = floatOr(factor, 0.25)
	return nil
}

func intOr(p *int, d int) int {
	if p == nil {
		return d
	}
	return *p
}

func floatOr(p *float64, d float64) float64 {
	if p == nil {
		return d
	}
	return *p
}
