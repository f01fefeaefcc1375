package layout

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"forge/model"
	"forge/safetensors"
)

// edit returns a mutation of one file of a layout directory.
func edit(file string, f func(ts []safetensors.Tensor, meta map[string]string) []safetensors.Tensor) func(*testing.T, string) {
	return func(t *testing.T, dir string) { rewrite(t, at(dir, file), f) }
}

// tensorEdit changes one tensor of a file.
func tensorEdit(file, name string, f func(*safetensors.Tensor)) func(*testing.T, string) {
	return edit(file, func(ts []safetensors.Tensor, _ map[string]string) []safetensors.Tensor {
		for i := range ts {
			if ts[i].Name == name {
				f(&ts[i])
			}
		}
		return ts
	})
}

// drop removes the tensors whose names start with prefix.
func drop(file, prefix string) func(*testing.T, string) {
	return edit(file, func(ts []safetensors.Tensor, _ map[string]string) []safetensors.Tensor {
		return slices.DeleteFunc(ts, func(x safetensors.Tensor) bool { return strings.HasPrefix(x.Name, prefix) })
	})
}

// setMeta sets (or, with value "", deletes) a metadata key.
func setMeta(file, key, value string) func(*testing.T, string) {
	return edit(file, func(ts []safetensors.Tensor, meta map[string]string) []safetensors.Tensor {
		if value == "" {
			delete(meta, key)
		} else {
			meta[key] = value
		}
		return ts
	})
}

// TestOpenBadInput: every kind of damage to a directory is an error that
// names the file and the tensor or metadata key, wraps ErrLayout,
// ErrInexpressible or safetensors.ErrFormat, and never panics.
func TestOpenBadInput(t *testing.T) {
	const l0, m0, l1, m1 = "layer_00.safetensors", "layer_00_mixer.safetensors", "layer_01.safetensors", "layer_01_mixer.safetensors"
	cases := []struct {
		name   string
		damage func(*testing.T, string)
		cfg    func(*model.Config)
		want   []string
	}{
		{"missing tensor", drop(l0, "gate.scale"), nil, []string{l0, `"gate.scale"`, "missing"}},
		{"mixer matrix missing", drop(m0, "linear_attn.in_proj_z."), nil, []string{m0, `"linear_attn.in_proj_z.lut"`, "missing"}},
		{"idx I8", tensorEdit(l0, "gate.idx", func(x *safetensors.Tensor) { x.DType = safetensors.I8 }), nil, []string{l0, `"gate.idx"`, "dtype I8, want U8"}},
		{"idx U16", func(t *testing.T, dir string) {
			writeRawHeader(t, at(dir, l0), "gate.idx", "U16", []int{48, 32}, 2*48*32)
		}, nil,
			[]string{l0, `"gate.idx"`}},
		{"idx shape", tensorEdit(l0, "gate.idx", func(x *safetensors.Tensor) { x.Shape = []int{x.Shape[1], x.Shape[0]} }), nil,
			[]string{l0, `"gate.idx"`, "shape [32 48], want [48 32]"}},
		{"lut shape", tensorEdit(l0, "gate.lut", func(x *safetensors.Tensor) { x.Shape = []int{32, 1} }), nil,
			[]string{l0, `"gate.lut"`, "shape [32 1], want [16 2]"}},
		{"index out of range", tensorEdit(l0, "gate.idx", func(x *safetensors.Tensor) { x.Data[37] = 200 }), nil,
			[]string{l0, `"gate.idx"`, "index 200 at [1][5]"}},
		{"INT8 -128", tensorEdit(m1, "self_attn.k_proj.int8", func(x *safetensors.Tensor) { x.Data[3] = 0x80 }), nil,
			[]string{m1, `"self_attn.k_proj.int8"`, "-128"}},
		{"NaN scale", tensorEdit(l0, "up.scale", func(x *safetensors.Tensor) { x.Data[0], x.Data[1] = 0x00, 0x7e }), nil,
			[]string{l0, `"up.scale"`, "NaN"}},
		{"lr_b without lr_a", drop(m0, "linear_attn.in_proj_z.lr_a"), nil, []string{m0, `"linear_attn.in_proj_z.lr_b"`, "lr_b without lr_a"}},
		{"extra tensor", edit(l1, func(ts []safetensors.Tensor, _ map[string]string) []safetensors.Tensor {
			return append(ts, safetensors.Tensor{Name: "gate.extra", DType: safetensors.U8, Shape: []int{1}, Data: []byte{0}})
		}), nil, []string{l1, `"gate.extra"`}},
		{"basis unnamed", setMeta(l0, "basis", "rotated"), nil, []string{l0, `"basis"`, `"rotated"`}},
		{"basis missing", setMeta(l1, "basis", ""), nil, []string{l1, `"basis"`, "missing"}},
		{"other signs", setMeta(l0, "sign_rng", "numpy-pcg64"), nil, []string{l0, `sign_rng "numpy-pcg64"`, SignRNGNumpy, SignRNGForge}},
		{"seed not a number", setMeta(l0, "seed_in", "1e3"), nil, []string{l0, `"seed_in"`, `"1e3"`}},
		{"block", setMeta(l0, "block", "1024"), nil, []string{l0, `"block"`, "32-wide blocks"}},
		{"format missing", setMeta(l1, "up.format", ""), nil, []string{l1, `"up.format"`, "missing"}},
		{"grouped format", setMeta(l1, "up.format", "LUT4 g8 + pcs"), nil, []string{l1, `"up.format"`, "row-grouped"}},
		{"format of another shape", setMeta(l0, "gate.format", "vector 2x64 + pcs"), nil, []string{l0, `"gate.lut"`, "want [64 2]"}},
		{"kind", setMeta(m0, "kind", "full_attention"), nil, []string{m0, `"kind"`, `"linear_attention"`}},
		{"kv_format missing", setMeta(m1, "kv_format", ""), nil, []string{m1, `"kv_format"`, "missing"}},
		{"mixer rotation", setMeta(m1, "basis", "online"), nil, []string{m1, "mixer basis"}},
		{"truncated", func(t *testing.T, dir string) {
			st, _ := os.Stat(at(dir, m1))
			if err := os.Truncate(at(dir, m1), st.Size()-10); err != nil {
				t.Fatal(err)
			}
		}, nil, []string{m1}},
		{"not safetensors", func(t *testing.T, dir string) { os.WriteFile(at(dir, l1), []byte("hello"), 0o644) }, nil, []string{l1}},
		{"missing layer file", func(t *testing.T, dir string) { os.Remove(at(dir, l1)) }, nil, []string{"no " + l1}},
		{"unknown file", func(t *testing.T, dir string) { os.WriteFile(at(dir, "layer_02.safetensors"), nil, 0o644) }, nil,
			[]string{"layer_02.safetensors", "2-layer model"}},
		{"head of a tied model", func(*testing.T, string) {}, func(c *model.Config) { c.Tied = true }, []string{HeadFile, "ties"}},
	}
	cfg := tinyConfig()
	src := newSource(t, cfg, spec{format: "LUT4 per-tensor + pcs"}, mixedSpecs)
	good, _ := writeLayout(t, cfg, src)
	if err := Check(good, cfg); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			ents, _ := os.ReadDir(good)
			for _, e := range ents {
				b, _ := os.ReadFile(at(good, e.Name()))
				os.WriteFile(at(dir, e.Name()), b, 0o644)
			}
			c.damage(t, dir)
			cc := *cfg
			if c.cfg != nil {
				c.cfg(&cc)
			}
			err := Check(dir, &cc)
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, ErrLayout) && !errors.Is(err, ErrInexpressible) && !errors.Is(err, safetensors.ErrFormat) {
				t.Errorf("%v: wraps none of ErrLayout, ErrInexpressible, safetensors.ErrFormat", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			t.Log(err)
		})
	}
}
