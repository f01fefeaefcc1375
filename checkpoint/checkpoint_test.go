package checkpoint_test

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"forge/checkpoint"
	"forge/model"
	"forge/safetensors"
	"forge/tensor"
)

var fixture = filepath.Join("..", "testdata", "qwen35-tiny-random")

// tensors reads every tensor of a safetensors file into memory.
func tensors(t *testing.T, path string) []safetensors.Tensor {
	t.Helper()
	f, err := safetensors.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []safetensors.Tensor
	for _, n := range f.Names() {
		info, _ := f.Info(n)
		b, err := f.Bytes(n)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, safetensors.Tensor{Name: n, DType: info.DType, Shape: info.Shape, Data: append([]byte(nil), b...)})
	}
	return out
}

// variant writes a checkpoint dir from a config and tensors.
func variant(t *testing.T, cfg []byte, files map[string][]safetensors.Tensor, index map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	for name, ts := range files {
		if err := safetensors.WriteFile(filepath.Join(dir, name), ts, nil); err != nil {
			t.Fatal(err)
		}
	}
	if index != nil {
		b, _ := json.Marshal(map[string]any{"weight_map": index})
		if err := os.WriteFile(filepath.Join(dir, "model.safetensors.index.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func fixtureConfig(t *testing.T) []byte {
	b, err := os.ReadFile(filepath.Join(fixture, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// flatConfig turns the nested fixture config into the text-only flat form.
func flatConfig(t *testing.T, edit func(map[string]any)) []byte {
	var top map[string]any
	if err := json.Unmarshal(fixtureConfig(t), &top); err != nil {
		t.Fatal(err)
	}
	txt := top["text_config"].(map[string]any)
	if edit != nil {
		edit(txt)
	}
	b, _ := json.Marshal(txt)
	return b
}

func logitsOf(t *testing.T, dir string) []float32 {
	t.Helper()
	ck, err := checkpoint.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	m, err := model.Load(ck)
	if err != nil {
		t.Fatal(err)
	}
	return append([]float32(nil), m.Forward(m.NewState(), []int{5, 100, 7, 300, 2, 9}).Data...)
}

func sameBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

func rename(ts []safetensors.Tensor, f func(string) string) []safetensors.Tensor {
	out := make([]safetensors.Tensor, len(ts))
	for i, x := range ts {
		x.Name = f(x.Name)
		out[i] = x
	}
	return out
}

// TestLayouts: every accepted layout of the same weights gives bit-identical
// logits: flat config + model. prefix, language_model.model. prefix,
// sharded with an index plus vision/MTP tensors to skip, F32 small tensors.
func TestLayouts(t *testing.T) {
	orig := tensors(t, filepath.Join(fixture, "model.safetensors"))
	want := logitsOf(t, fixture)
	strip := func(n string) string { return strings.TrimPrefix(n, "model.language_model.") }
	var shardA, shardB []safetensors.Tensor
	idx := map[string]string{}
	for i, x := range orig {
		if i%2 == 0 {
			shardA = append(shardA, x)
			idx[x.Name] = "model-00001-of-00002.safetensors"
		} else {
			shardB = append(shardB, x)
			idx[x.Name] = "model-00002-of-00002.safetensors"
		}
	}
	extra := []safetensors.Tensor{
		{Name: "model.visual.blocks.0.attn.qkv.weight", DType: safetensors.BF16, Shape: []int{2, 2}, Data: make([]byte, 8)},
		{Name: "mtp.fc.weight", DType: safetensors.F32, Shape: []int{3}, Data: make([]byte, 12)},
	}
	for _, x := range extra {
		idx[x.Name] = "model-00002-of-00002.safetensors"
	}
	shardB = append(shardB, extra...)
	var widened []safetensors.Tensor
	for _, x := range orig {
		if len(x.Shape) == 1 { // norms, A_log, dt_bias as F32, as some conversions store them
			h := make([]uint16, len(x.Data)/2)
			for i := range h {
				h[i] = uint16(x.Data[2*i]) | uint16(x.Data[2*i+1])<<8
			}
			f := make([]float32, len(h))
			tensor.BF16ToF32Slice(f, h)
			x = safetensors.Tensor{Name: x.Name, DType: safetensors.F32, Shape: x.Shape, Data: f32Bytes(f)}
		}
		widened = append(widened, x)
	}
	cases := []struct {
		name string
		dir  string
	}{
		{"flat model. prefix", variant(t, flatConfig(t, nil), map[string][]safetensors.Tensor{
			"model.safetensors": rename(orig, func(n string) string {
				if n == "lm_head.weight" {
					return n
				}
				return "model." + strip(n)
			})}, nil)},
		{"language_model.model. prefix", variant(t, fixtureConfig(t), map[string][]safetensors.Tensor{
			"model.safetensors": rename(orig, func(n string) string {
				if n == "lm_head.weight" {
					return n
				}
				return "language_model.model." + strip(n)
			})}, nil)},
		{"sharded with vision and mtp", variant(t, fixtureConfig(t), map[string][]safetensors.Tensor{
			"model-00001-of-00002.safetensors": shardA, "model-00002-of-00002.safetensors": shardB}, idx)},
		{"F32 vectors", variant(t, fixtureConfig(t), map[string][]safetensors.Tensor{"model.safetensors": widened}, nil)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := logitsOf(t, c.dir); !sameBits(got, want) {
				t.Error("logits differ from the original layout")
			}
		})
	}
}

func f32Bytes(f []float32) []byte {
	b := make([]byte, 4*len(f))
	for i, v := range f {
		u := math.Float32bits(v)
		b[4*i], b[4*i+1], b[4*i+2], b[4*i+3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
	}
	return b
}

// TestTied: with tie_word_embeddings and no lm_head, the head is the
// embedding table; same logits as an untied copy whose lm_head = embed.
func TestTied(t *testing.T) {
	orig := tensors(t, filepath.Join(fixture, "model.safetensors"))
	var noHead, headIsEmbed []safetensors.Tensor
	var embed safetensors.Tensor
	for _, x := range orig {
		if x.Name == "model.language_model.embed_tokens.weight" {
			embed = x
		}
	}
	for _, x := range orig {
		if x.Name == "lm_head.weight" {
			e := embed
			e.Name = x.Name
			headIsEmbed = append(headIsEmbed, e)
			continue
		}
		noHead = append(noHead, x)
		headIsEmbed = append(headIsEmbed, x)
	}
	var top map[string]any
	json.Unmarshal(fixtureConfig(t), &top)
	top["tie_word_embeddings"] = true
	tiedCfg, _ := json.Marshal(top)
	tied := variant(t, tiedCfg, map[string][]safetensors.Tensor{"model.safetensors": noHead}, nil)
	untied := variant(t, fixtureConfig(t), map[string][]safetensors.Tensor{"model.safetensors": headIsEmbed}, nil)
	if !sameBits(logitsOf(t, tied), logitsOf(t, untied)) {
		t.Error("tied head differs from an explicit copy of the embeddings")
	}
}

// TestRefused: broken checkpoints are refused with an error naming the
// tensor, file or field.
func TestRefused(t *testing.T) {
	orig := tensors(t, filepath.Join(fixture, "model.safetensors"))
	without := func(name string) []safetensors.Tensor {
		var out []safetensors.Tensor
		for _, x := range orig {
			if x.Name != name {
				out = append(out, x)
			}
		}
		return out
	}
	reshaped := func(name string, shape []int) []safetensors.Tensor {
		out := append([]safetensors.Tensor(nil), orig...)
		for i := range out {
			if out[i].Name == name {
				out[i].Shape = shape
			}
		}
		return out
	}
	one := func(ts []safetensors.Tensor) map[string][]safetensors.Tensor {
		return map[string][]safetensors.Tensor{"model.safetensors": ts}
	}
	dup := append(append([]safetensors.Tensor(nil), orig...), safetensors.Tensor{
		Name: "model.norm.weight", DType: safetensors.BF16, Shape: []int{256}, Data: make([]byte, 512)})
	extra := append(append([]safetensors.Tensor(nil), orig...), safetensors.Tensor{
		Name: "model.language_model.layers.0.self_attn.q_proj.bias", DType: safetensors.BF16, Shape: []int{4}, Data: make([]byte, 8)})
	cases := []struct {
		name, want string
		dir        string
	}{
		{"missing tensor", `"layers.2.linear_attn.A_log"`, variant(t, fixtureConfig(t), one(without("model.language_model.layers.2.linear_attn.A_log")), nil)},
		{"missing head", `"lm_head.weight"`, variant(t, fixtureConfig(t), one(without("lm_head.weight")), nil)},
		{"transposed MLP", "mlp.down_proj.weight", variant(t, fixtureConfig(t), one(reshaped("model.language_model.layers.1.mlp.down_proj.weight", []int{384, 256})), nil)},
		{"duplicate across prefixes", `"norm.weight" appears twice`, variant(t, fixtureConfig(t), one(dup), nil)},
		{"unexpected tensor", "q_proj.bias", variant(t, fixtureConfig(t), one(extra), nil)},
		{"no weights", "no model.safetensors", variant(t, fixtureConfig(t), nil, nil)},
		{"index names a missing shard", "model-00009-of-00009.safetensors", variant(t, fixtureConfig(t), one(orig),
			map[string]string{"lm_head.weight": "model-00009-of-00009.safetensors"})},
		{"value heads not a multiple", "linear_num_value_heads", variant(t, flatConfig(t, func(m map[string]any) { m["linear_num_value_heads"] = 5 }), one(orig), nil)},
		{"missing hidden_size", "hidden_size", variant(t, flatConfig(t, func(m map[string]any) { delete(m, "hidden_size") }), one(orig), nil)},
		{"layer_types length", "layer_types", variant(t, flatConfig(t, func(m map[string]any) { m["layer_types"] = []string{"full_attention"} }), one(orig), nil)},
		{"unknown layer type", "layer_types[0]", variant(t, flatConfig(t, func(m map[string]any) {
			m["layer_types"] = []string{"mamba", "x", "x", "x", "x", "x", "x", "x"}
		}), one(orig), nil)},
		{"yarn rope", "rope_type", variant(t, flatConfig(t, func(m map[string]any) {
			m["rope_parameters"].(map[string]any)["rope_type"] = "yarn"
		}), one(orig), nil)},
		{"moe model type", "model_type", variant(t, flatConfig(t, func(m map[string]any) { m["model_type"] = "qwen3_5_moe" }), one(orig), nil)},
		{"string where a number belongs", "hidden_size", variant(t, flatConfig(t, func(m map[string]any) { m["hidden_size"] = "256" }), one(orig), nil)},
		{"broken JSON", "config.json", variant(t, []byte(`{"text_config": {`), one(orig), nil)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ck, err := checkpoint.Open(c.dir)
			if err == nil {
				ck.Close()
				t.Fatal("opened")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not name %q", err, c.want)
			}
		})
	}
}

// TestRopeFallback: rope_theta and partial_rotary_factor at the top of the
// text config are used when rope_parameters lacks them.
func TestRopeFallback(t *testing.T) {
	c, err := checkpoint.ParseConfig(flatConfig(t, func(m map[string]any) {
		delete(m, "rope_parameters")
		m["rope_theta"] = 5e5
		m["partial_rotary_factor"] = 0.5
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.RopeTheta != 5e5 || c.RotaryFactor != 0.5 || c.RotaryDim() != 32 {
		t.Errorf("theta %v factor %v", c.RopeTheta, c.RotaryFactor)
	}
	// layer_types absent: derived from full_attention_interval.
	c, err = checkpoint.ParseConfig(flatConfig(t, func(m map[string]any) { delete(m, "layer_types"); m["full_attention_interval"] = 2 }))
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range c.Layers {
		if (k == model.Attention) != (i%2 == 1) {
			t.Errorf("layer %d kind %v", i, k)
		}
	}
}
