package plan

import (
	"errors"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	p, err := Parse([]byte(`{
		"default": "LUT4 per-tensor + pcs",
		"parts": {"mlp": "vector 2x16 + pcs", "kv": "INT8 per-channel", "head": {"format": "LUT6 per-tensor + pcs", "rank": 8}},
		"matrices": {"1.down": "LUT3 per-tensor + pcs", "1.mlp": "LUT2 per-tensor + pcs", "3.mixer": {"format": "LUT8 per-tensor + pcs", "rank": 16}, "3.k": "bf16"}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, format string
		rank         int
	}{
		{"layers.0.mlp.gate_proj.weight", "vector 2x16 + pcs", 0},               // part default
		{"layers.1.mlp.down_proj.weight", "LUT3 per-tensor + pcs", 0},           // matrix key beats group key
		{"layers.1.mlp.up_proj.weight", "LUT2 per-tensor + pcs", 0},             // group key beats part
		{"layers.0.linear_attn.in_proj_qkv.weight", "LUT4 per-tensor + pcs", 0}, // default
		{"layers.3.self_attn.v_proj.weight", "LUT8 per-tensor + pcs", 16},       // mixer key beats kv part
		{"layers.3.self_attn.k_proj.weight", "bf16", 0},
		{"layers.7.self_attn.k_proj.weight", "INT8 per-channel", 0},
		{"lm_head.weight", "LUT6 per-tensor + pcs", 8},
	}
	for _, c := range cases {
		s, ok := p.Resolve(c.name)
		if !ok || s.Format.String() != c.format || s.Rank != c.rank {
			t.Errorf("%s: got %v rank %d (ok %v), want %s rank %d", c.name, s.Format, s.Rank, ok, c.format, c.rank)
		}
	}
	for _, name := range []string{"embed_tokens.weight", "layers.0.linear_attn.in_proj_a.weight", "norm.weight"} {
		if _, ok := p.Resolve(name); ok {
			t.Errorf("%s: a plan assigned it", name)
		}
	}
	if err := p.Check([]string{"layers.1.mlp.down_proj.weight", "layers.3.self_attn.k_proj.weight"}); err != nil {
		t.Errorf("Check: %v", err)
	}
	if err := p.Check([]string{"layers.0.mlp.down_proj.weight"}); err == nil || !errors.Is(err, ErrPlan) {
		t.Errorf("Check accepted keys for layers the model lacks: %v", err)
	}
}

func TestParseErrors(t *testing.T) {
	for _, c := range []struct{ json, want string }{
		{`{"default": "LUT5"}`, "default"},
		{`{"parts": {"ffn": "bf16"}}`, "unknown part"},
		{`{"matrices": {"x.gate": "bf16"}}`, "LAYER.NAME"},
		{`{"matrices": {"3.gates": "bf16"}}`, "unknown matrix name"},
		{`{"matrices": {"03.gate": "bf16"}}`, "LAYER.NAME"},
		{`{"matrices": {"3.gate": {"format": "bf16", "rank": -1}}}`, "negative"},
		{`{"matrices": {"3.gate": {"fmt": "bf16"}}}`, "format name"},
		{`{"defaults": "bf16"}`, "unknown field"},
		{`[1]`, "invalid plan"},
	} {
		_, err := Parse([]byte(c.json))
		if err == nil || !errors.Is(err, ErrPlan) && !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one mentioning %q", c.json, err, c.want)
		}
	}
}
