package forge_test

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"forge"
	"forge/bundle"
	"forge/checkpoint"
	"forge/model"
	"forge/safetensors"
	"forge/tensor"
	"forge/tokenizer"
)

var tinyDir = filepath.Join("models", "forge-tiny")

// dequantTokens is a few dozen tokens of real text (the first 40 of
// testdata/calib/prose.txt under forge-tiny's tokenizer).
func dequantTokens(t *testing.T) []int {
	t.Helper()
	tok, err := tokenizer.Load(tinyDir)
	if err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(filepath.Join("testdata", "calib", "prose.txt"))
	if err != nil {
		t.Fatal(err)
	}
	ids := tok.Encode(string(text[:2000]))
	if len(ids) < 40 {
		t.Fatalf("only %d tokens", len(ids))
	}
	return ids[:40]
}

// dequantLogits loads a checkpoint or bundle and returns a copy of its
// prefill logits [T, vocab] on toks.
func dequantLogits(t *testing.T, dir string, toks []int) []float32 {
	t.Helper()
	var src interface {
		model.Source
		Close() error
	}
	var err error
	if bundle.IsBundle(dir) {
		src, err = bundle.Open(dir)
	} else {
		src, err = checkpoint.Open(dir)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	m, err := model.Load(src)
	if err != nil {
		t.Fatal(err)
	}
	lg := m.Forward(m.NewState(), toks)
	return slices.Clone(lg.Data[:lg.Rows*lg.Cols])
}

func maxAbsDiff(a, b []float32) (d, scale float64) {
	for i := range a {
		d = max(d, math.Abs(float64(a[i])-float64(b[i])))
		scale = max(scale, math.Abs(float64(a[i])))
	}
	return d, scale
}

// headers returns name → shape of every tensor of a checkpoint directory's
// safetensors files, as stored (HF names).
func headers(t *testing.T, dir string) map[string][]int {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	if len(paths) == 0 {
		t.Fatalf("%s: no safetensors files", dir)
	}
	out := map[string][]int{}
	for _, p := range paths {
		f, err := safetensors.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range f.Names() {
			info, _ := f.Info(n)
			out[n] = info.Shape
		}
		f.Close()
	}
	return out
}

func quantizeTiny(t *testing.T, cfg forge.QuantizeConfig) string {
	t.Helper()
	cfg.Model, cfg.Out = tinyDir, filepath.Join(t.TempDir(), "bundle")
	if err := forge.Quantize(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	return cfg.Out
}

// TestDequantizeMatchesBundle quantizes forge-tiny two ways (RTN LUT4, and
// LUT4 with the Hadamard rotation of the MLP inputs and a rank-4
// correction on every quantized matrix, so that rotated matrices carry
// low-rank factors too), dequantizes each and checks that the checkpoint
// runs like the bundle.
//
// With --dtype f32 the checkpoint holds exactly the matrices the bundle's
// model applies, so only float32 rounding separates the two runs: the LUT
// kernels and the dense kernels sum in different orders, the rotation is
// applied to x online (bundle) instead of folded into W (checkpoint, one
// more float32 Walsh–Hadamard rounding of ≤ (log₂n+2)·2⁻²⁴ relative per
// row), and A·(B·x) is summed differently from (A·B)·x. Each is ~1e-7
// relative per matrix product; through 8 layers onto logits of magnitude
// ~10 that is ~1e-5, and the bound is 1e-4.
//
// With --dtype bf16 every materialized weight is also rounded to bf16
// (relative error ≤ 2⁻⁹), which perturbs the logits much more, yet far
// less than the LUT4 quantization itself (relative weight error ~2⁻⁴ at
// ~25 dB SNR). The test asserts the bf16 difference is at most a quarter of
// the bundle's own difference from the source model, and above the f32 one.
func TestDequantizeMatchesBundle(t *testing.T) {
	toks := dequantTokens(t)
	source := dequantLogits(t, tinyDir, toks)
	wantNames := headers(t, tinyDir)
	cases := []struct {
		name string
		cfg  forge.QuantizeConfig
	}{
		{"lut4", forge.QuantizeConfig{Format: "LUT4 per-tensor + pcs", Seed: 1}},
		{"hadamard+lowrank", forge.QuantizeConfig{Format: "LUT4 per-tensor + pcs", Seed: 2, Hadamard: true,
			LowRankRank: 4, LowRankParts: []string{"mlp", "gdn", "attn", "kv", "head"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := quantizeTiny(t, c.cfg)
			want := dequantLogits(t, b, toks)
			quantDiff, _ := maxAbsDiff(want, source)
			var f32Diff float64
			for _, dt := range []string{"f32", "bf16"} {
				out := filepath.Join(t.TempDir(), "ck-"+dt)
				if err := forge.Dequantize(context.Background(), forge.DequantizeConfig{Bundle: b, Out: out, DType: dt}); err != nil {
					t.Fatal(err)
				}
				checkLayout(t, out, wantNames, dt)
				got := dequantLogits(t, out, toks)
				d, scale := maxAbsDiff(got, want)
				t.Logf("%s: max |logit diff| %.3g vs the bundle (logits up to %.1f; bundle vs source %.3g)", dt, d, scale, quantDiff)
				switch dt {
				case "f32":
					f32Diff = d
					if d > 1e-4 {
						t.Errorf("f32: max |logit diff| %.3g > 1e-4", d)
					}
				case "bf16":
					if d > quantDiff/4 || d <= f32Diff {
						t.Errorf("bf16: max |logit diff| %.3g, want in (%.3g, %.3g] (above f32, a quarter of the quantization's)", d, f32Diff, quantDiff/4)
					}
				}
			}
		})
	}
}

// checkLayout checks a dequantized checkpoint against the source's tensor
// names and shapes, and its dtypes: every tensor F32 for f32, BF16 for
// bf16 (forge-tiny is all bf16, so no raw tensor keeps another dtype).
func checkLayout(t *testing.T, dir string, want map[string][]int, dt string) {
	t.Helper()
	got := headers(t, dir)
	for n, s := range want {
		if g, ok := got[n]; !ok || !slices.Equal(g, s) {
			t.Errorf("%s: tensor %q has shape %v (present %v), the source's is %v", dt, n, g, ok, s)
		}
	}
	for n := range got {
		if _, ok := want[n]; !ok {
			t.Errorf("%s: tensor %q is not in the source checkpoint", dt, n)
		}
	}
	wantDT := map[string]safetensors.DType{"f32": safetensors.F32, "bf16": safetensors.BF16}[dt]
	ck, err := checkpoint.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	for _, ti := range ck.Tensors() {
		if ti.DType != wantDT {
			t.Errorf("%s: %s is %v", dt, ti.Spec.Name, ti.DType)
		}
	}
	for _, f := range []string{"config.json", "tokenizer.json", "tokenizer_config.json"} {
		a, _ := os.ReadFile(filepath.Join(tinyDir, f))
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil || string(a) != string(b) {
			t.Errorf("%s: %s not copied unchanged (%v)", dt, f, err)
		}
	}
	if _, err := os.Stat(dir + ".partial"); !os.IsNotExist(err) {
		t.Errorf("%s.partial left behind", dir)
	}
}

// TestDequantizeMatrix checks one rotated MLP matrix with low-rank factors
// directly: the f32 checkpoint's W times random inputs equals the bundle's
// lut.Matrix product (rotation online, A·(B·x')). The float64 W·x is exact
// but for W's float32 rounding; the lut product rounds its float32 sums,
// so the bound is 1e-5·Σ_j|W_oj·x_j|, far above float32's ~in·2⁻²⁴.
func TestDequantizeMatrix(t *testing.T) {
	b := quantizeTiny(t, forge.QuantizeConfig{Format: "LUT4 per-tensor + pcs", Seed: 5, Hadamard: true,
		LowRankRank: 3, LowRankParts: []string{"mlp"}})
	out := filepath.Join(t.TempDir(), "ck")
	if err := forge.Dequantize(context.Background(), forge.DequantizeConfig{Bundle: b, Out: out, DType: "f32"}); err != nil {
		t.Fatal(err)
	}
	bd, err := bundle.Open(b)
	if err != nil {
		t.Fatal(err)
	}
	defer bd.Close()
	ck, err := checkpoint.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	for _, name := range []string{"layers.2.mlp.down_proj.weight", "layers.3.mlp.up_proj.weight"} {
		lm, err := bd.Matrix(name)
		if err != nil || lm == nil || lm.Parts().Rotation == nil || lm.Rank() != 3 {
			t.Fatalf("%s: %v (%v): want a rotated rank-3 matrix", name, lm, err)
		}
		w, err := ck.Vector(name)
		if err != nil {
			t.Fatal(err)
		}
		o, in := lm.Dims()
		r := rand.New(rand.NewPCG(7, 8))
		x := tensor.New(3, in)
		for i := range x.Data[:3*in] {
			x.Data[i] = float32(r.NormFloat64())
		}
		y := tensor.New(3, o)
		lm.Mul(y, x)
		for row := range 3 {
			xr := x.Row(row)
			for k := range o {
				var s, abs float64
				for j, wj := range w[k*in : (k+1)*in] {
					s += float64(wj) * float64(xr[j])
					abs += math.Abs(float64(wj) * float64(xr[j]))
				}
				if d := math.Abs(s - float64(y.Row(row)[k])); d > 1e-5*abs {
					t.Fatalf("%s: row %d output %d: W·x = %v, bundle %v (|diff| %.3g > %.3g)", name, row, k, s, y.Row(row)[k], d, 1e-5*abs)
				}
			}
		}
	}
}

// TestDequantizeSharded: a small shard size gives
// model-0000k-of-0000n.safetensors files and an index whose total and map
// checkpoint.Open accepts, holding the same tensors as one file.
func TestDequantizeSharded(t *testing.T) {
	b := quantizeTiny(t, forge.QuantizeConfig{Format: "LUT4 per-tensor + pcs", Seed: 1})
	dir := t.TempDir()
	one, many := filepath.Join(dir, "one"), filepath.Join(dir, "many")
	var calls int
	var last, total int64
	err := forge.Dequantize(context.Background(), forge.DequantizeConfig{Bundle: b, Out: one, DType: "bf16",
		Progress: func(d, tot int64) { calls, last, total = calls+1, d, tot }})
	if err != nil {
		t.Fatal(err)
	}
	if calls == 0 || last != total {
		t.Errorf("progress: %d calls, last %d of %d", calls, last, total)
	}
	if err := forge.Dequantize(context.Background(), forge.DequantizeConfig{Bundle: b, Out: many, ShardSize: 4 << 20}); err != nil {
		t.Fatal(err)
	}
	shards, _ := filepath.Glob(filepath.Join(many, "model-*-of-*.safetensors"))
	if len(shards) < 3 {
		t.Errorf("%d shards of ≤ 4 MiB for a ~17 MB model", len(shards))
	}
	if _, err := os.Stat(filepath.Join(many, "model.safetensors.index.json")); err != nil {
		t.Error(err)
	}
	if _, err := os.Stat(filepath.Join(one, "model.safetensors.index.json")); !os.IsNotExist(err) {
		t.Error("a single-file checkpoint has an index")
	}
	toks := []int{5, 900, 17, 2048, 3}
	a, c := dequantLogits(t, one, toks), dequantLogits(t, many, toks)
	if !slices.Equal(a, c) {
		t.Error("sharded and single-file checkpoints give different logits")
	}
}

// TestDequantizeRefusals: bad inputs are errors that name the problem and
// leave nothing behind.
func TestDequantizeRefusals(t *testing.T) {
	b := quantizeTiny(t, forge.QuantizeConfig{Format: "LUT4 per-tensor + pcs", Seed: 1})
	dir := t.TempDir()
	existing := filepath.Join(dir, "existing")
	os.Mkdir(existing, 0o755)
	os.WriteFile(filepath.Join(existing, "keep"), []byte("x"), 0o644)
	cases := []struct {
		name string
		cfg  forge.DequantizeConfig
		want string
	}{
		{"existing output", forge.DequantizeConfig{Bundle: b, Out: existing}, "already exists"},
		{"missing bundle", forge.DequantizeConfig{Bundle: filepath.Join(dir, "nope"), Out: filepath.Join(dir, "o1")}, "nope"},
		{"a checkpoint", forge.DequantizeConfig{Bundle: tinyDir, Out: filepath.Join(dir, "o2")}, "not a forge bundle"},
		{"empty dir", forge.DequantizeConfig{Bundle: existing, Out: filepath.Join(dir, "o3")}, "forge.json"},
		{"bad dtype", forge.DequantizeConfig{Bundle: b, Out: filepath.Join(dir, "o4"), DType: "f8"}, "f8"},
		{"output is the bundle", forge.DequantizeConfig{Bundle: b, Out: b, Overwrite: true}, "is the input"},
		{"a directory of the user's", forge.DequantizeConfig{Bundle: b, Out: existing, Overwrite: true}, "forge did not write (keep)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := forge.Dequantize(context.Background(), c.cfg)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
			if c.cfg.Out != existing && c.cfg.Out != b {
				if _, err := os.Stat(c.cfg.Out); !os.IsNotExist(err) {
					t.Errorf("%s was created", c.cfg.Out)
				}
			}
		})
	}
	if _, err := os.Stat(filepath.Join(existing, "keep")); err != nil {
		t.Error("the existing output was touched")
	}
	// Overwrite replaces forge's own checkpoint, not the user's directory.
	own := filepath.Join(dir, "own")
	for range 2 {
		if err := forge.Dequantize(context.Background(), forge.DequantizeConfig{Bundle: b, Out: own, Overwrite: true}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(existing, "keep")); err != nil {
		t.Error("the user's directory was touched")
	}
	if _, err := checkpoint.Open(own); err != nil {
		t.Error(err)
	}
}

// TestDequantizeFlatConfig: a bundle of a text-only checkpoint (flat
// config.json, the Qwen3_5ForCausalLM layout) is written with the "model."
// prefix that layout uses, not the multimodal "model.language_model.".
func TestDequantizeFlatConfig(t *testing.T) {
	dir := t.TempDir()
	flat := filepath.Join(dir, "flat")
	os.Mkdir(flat, 0o755)
	raw, err := os.ReadFile(filepath.Join(tinyDir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(flat, "config.json"), top["text_config"], 0o644)
	for _, f := range []string{"model.safetensors", "tokenizer.json", "tokenizer_config.json"} {
		abs, _ := filepath.Abs(filepath.Join(tinyDir, f))
		if err := os.Symlink(abs, filepath.Join(flat, f)); err != nil {
			t.Fatal(err)
		}
	}
	b := filepath.Join(dir, "bundle")
	if err := forge.Quantize(context.Background(), forge.QuantizeConfig{Model: flat, Out: b, Format: "LUT4 per-tensor + pcs"}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "ck")
	if err := forge.Dequantize(context.Background(), forge.DequantizeConfig{Bundle: b, Out: out}); err != nil {
		t.Fatal(err)
	}
	names := headers(t, out)
	src := headers(t, tinyDir)
	if len(names) != len(src) {
		t.Errorf("%d tensors, the source has %d", len(names), len(src))
	}
	for n := range names {
		if n != "lm_head.weight" && (!strings.HasPrefix(n, "model.") || strings.Contains(n, "language_model")) {
			t.Errorf("tensor %q: want the text-only prefix model.", n)
		}
	}
	if _, err := checkpoint.Open(out); err != nil {
		t.Error(err)
	}
}

// TestDequantizeRawDTypes: raw tensors follow --dtype only where that is
// exact. A copy of forge-tiny whose A_log and dt_bias are F32 (as some
// Qwen3.5 checkpoints store them) keeps them F32, bit for bit, with bf16
// output; with f32 output every tensor is F32 and the bf16 ones are
// widened exactly.
func TestDequantizeRawDTypes(t *testing.T) {
	dir := t.TempDir()
	mixed := filepath.Join(dir, "mixed")
	os.Mkdir(mixed, 0o755)
	for _, f := range []string{"config.json", "tokenizer.json", "tokenizer_config.json"} {
		abs, _ := filepath.Abs(filepath.Join(tinyDir, f))
		if err := os.Symlink(abs, filepath.Join(mixed, f)); err != nil {
			t.Fatal(err)
		}
	}
	isF32 := func(n string) bool { return strings.HasSuffix(n, ".A_log") || strings.HasSuffix(n, ".dt_bias") }
	src, err := safetensors.Open(filepath.Join(tinyDir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var infos []safetensors.TensorInfo
	for _, n := range src.Names() {
		info, _ := src.Info(n)
		if isF32(n) {
			info.DType = safetensors.F32
		}
		infos = append(infos, info)
	}
	w, err := safetensors.Create(filepath.Join(mixed, "model.safetensors"), infos, map[string]string{"format": "pt"})
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range infos {
		v, _ := src.Float32(info.Name)
		if err := w.WriteFloat32(info.Name, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b := filepath.Join(dir, "bundle")
	if err := forge.Quantize(context.Background(), forge.QuantizeConfig{Model: mixed, Out: b, Format: "LUT4 per-tensor + pcs"}); err != nil {
		t.Fatal(err)
	}
	for _, dt := range []string{"bf16", "f32"} {
		out := filepath.Join(dir, dt)
		if err := forge.Dequantize(context.Background(), forge.DequantizeConfig{Bundle: b, Out: out, DType: dt}); err != nil {
			t.Fatal(err)
		}
		ck, err := checkpoint.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		var f32 int
		for _, ti := range ck.Tensors() {
			want := safetensors.F32
			if dt == "bf16" && !isF32(ti.Spec.Name) {
				want = safetensors.BF16
			}
			if ti.DType != want {
				t.Errorf("%s: %s is %v, want %v", dt, ti.Spec.Name, ti.DType, want)
			}
			if isF32(ti.Spec.Name) {
				f32++
			}
			if (dt == "f32" && !ti.Spec.Matrix) || isF32(ti.Spec.Name) {
				got, _ := ck.Vector(ti.Spec.Name)
				want, _ := src.Float32("model.language_model." + ti.Spec.Name)
				if !slices.Equal(got, want) {
					t.Errorf("%s: raw tensor %s changed", dt, ti.Spec.Name)
				}
			}
		}
		ck.Close()
		if f32 != 2*6 {
			t.Errorf("%d A_log/dt_bias tensors, want 12", f32)
		}
	}
}
