package layout

import (
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"forge/lut"
	"forge/model"
	"forge/safetensors"
	"forge/tensor"
)

// mixedSpecs covers every format family the layout holds, low-rank
// factors on the mixers, INT8 k/v with factors, the MLP's online rotation
// and a head "grouped" in one group of all its rows (recorded per-tensor).
var mixedSpecs = map[string]spec{
	"gate": {format: "vector 2x16 + pcs", seed: 1000}, "up": {format: "LUT2 per-tensor + pcs", seed: 1000},
	"down": {format: "vector 2x64 + pcs", seed: 2000},
	"qkv":  {format: "vector 2x16 + pcs", rank: 3}, "z": {format: "vector 2x16 + pcs", rank: 3}, "out": {format: "vector 2x16 + pcs", rank: 3},
	"q": {format: "LUT8 per-tensor + pcs", rank: 2}, "o": {format: "LUT8 per-tensor + pcs", rank: 2},
	"k": {format: "INT8 per-channel", rank: 2}, "v": {format: "INT8 per-channel", rank: 2},
	"head": {format: "LUT4 g48 + pcs"},
}

// plainSpecs: unquantized matrices: a bf16-format gate, raw bf16/f16 up
// and down, raw DeltaNet and attention q/o (left out), fp16-format k/v,
// a raw head (no head file).
var plainSpecs = map[string]spec{
	"gate": {format: "bf16"}, "up": {raw: safetensors.BF16}, "down": {raw: safetensors.F16},
	"k": {format: "fp16"}, "v": {format: "fp16"},
}

// numpySpecs: online MLPs in both layers, with numpy's signs (a bundle
// imported from the reference's export).
var numpySpecs = map[string]spec{
	"gate": {format: "LUT4 per-tensor + pcs", seed: 1000, signs: lut.SignsNumpy}, "up": {format: "LUT2 per-tensor + pcs", seed: 1000, signs: lut.SignsNumpy},
	"down":                          {format: "vector 2x16 + pcs", seed: 2000, signs: lut.SignsNumpy},
	"layers.1.mlp.gate_proj.weight": {format: "LUT4 per-tensor + pcs", seed: 1001, signs: lut.SignsNumpy},
	"layers.1.mlp.up_proj.weight":   {format: "LUT4 per-tensor + pcs", seed: 1001, signs: lut.SignsNumpy},
	"layers.1.mlp.down_proj.weight": {format: "LUT4 per-tensor + pcs", seed: 2001, signs: lut.SignsNumpy},
}

// TestRoundTrip: Plan → Write → Open gives back every planned entry, and
// each matrix's stored arrays, rotation (seed, block, sign generator) and
// all, equal the source's.
func TestRoundTrip(t *testing.T) {
	cases := []struct {
		name  string
		base  spec
		by    map[string]spec
		files []string
	}{
		{"mixed", spec{format: "LUT4 per-tensor + pcs"}, mixedSpecs,
			[]string{"layer_00.safetensors", "layer_00_mixer.safetensors", "layer_01.safetensors", "layer_01_mixer.safetensors", HeadFile}},
		{"plain", spec{raw: safetensors.BF16}, plainSpecs,
			[]string{"layer_00.safetensors", "layer_01.safetensors", "layer_01_mixer.safetensors"}},
		{"numpy signs", spec{format: "LUT4 per-tensor + pcs"}, numpySpecs,
			[]string{"layer_00.safetensors", "layer_00_mixer.safetensors", "layer_01.safetensors", "layer_01_mixer.safetensors", HeadFile}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := tinyConfig()
			src := newSource(t, cfg, c.base, c.by)
			dir, files := writeLayout(t, cfg, src)
			var names []string
			var planned []Entry
			for _, f := range files {
				names = append(names, f.Name)
				planned = append(planned, f.Entries...)
			}
			if !slices.Equal(names, c.files) {
				t.Errorf("files %v, want %v", names, c.files)
			}
			l, err := Open(dir, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if got := l.Entries(); !reflect.DeepEqual(got, planned) {
				t.Fatalf("read back\n%+v\nplanned\n%+v", got, planned)
			}
			for _, e := range planned {
				checkSameArrays(t, l, src, e)
			}
		})
	}
}

// checkSameArrays compares the layout's matrix e with the source's.
func checkSameArrays(t *testing.T, l *Layout, src *fakeSource, e Entry) {
	t.Helper()
	got, err := l.Matrix(e.Name)
	if err != nil {
		t.Fatal(err)
	}
	g := got.Parts()
	want := src.m[e.Name]
	if want == nil { // raw in the source: its bytes are the weights
		raw := src.raw[e.Name].Data
		if len(g.Weight)*2 != len(raw) || got.Format().Kind == lut.Scalar {
			t.Fatalf("%s: raw %d bytes read back as %s", e.Name, len(raw), got)
		}
		for i, w := range g.Weight {
			if uint16(raw[2*i])|uint16(raw[2*i+1])<<8 != w {
				t.Fatalf("%s: weight %d differs", e.Name, i)
			}
		}
		return
	}
	w := want.Parts()
	if got.Format().Kind != want.Format().Kind || got.Format().Bits != want.Format().Bits || got.Format().Dim != want.Format().Dim || got.Rank() != want.Rank() {
		t.Fatalf("%s: %s, source %s", e.Name, got, want)
	}
	for _, a := range [][2][]uint16{{g.LUT, w.LUT}, {g.Scale, w.Scale}, {g.Weight, w.Weight}, {g.LowRankA, w.LowRankA}, {g.LowRankB, w.LowRankB}} {
		if !slices.Equal(a[0], a[1]) {
			t.Fatalf("%s: fp16 arrays differ", e.Name)
		}
	}
	if !slices.Equal(g.Index, w.Index) {
		t.Fatalf("%s: packed indices differ", e.Name)
	}
	gh, _ := g.Rotation.(*lut.Hadamard)
	wh, _ := w.Rotation.(*lut.Hadamard)
	if (gh == nil) != (wh == nil) || gh != nil && (gh.Seed() != wh.Seed() || gh.Block() != wh.Block() || gh.Signs() != wh.Signs()) {
		t.Fatalf("%s: rotation %v, source %v", e.Name, g.Rotation, w.Rotation)
	}
}

// TestFormula: the layout's arrays mean what the reference's reader makes
// of them (docs/reference-pipeline.md §9.1: lut[idx].permute(0,2,1)
// .reshape(Cout, Cin)·scale, int8·scale, plus lr_a·lr_b): each matrix's
// dense form, computed here from the file's tensors alone in float64,
// equals lut.Matrix.Dequantize to float32 rounding (the products of two
// fp16 values are exact; the factor sum is rounded once either way, 1e-6
// relative covers a different summation order).
func TestFormula(t *testing.T) {
	cfg := tinyConfig()
	src := newSource(t, cfg, spec{format: "LUT4 per-tensor + pcs"}, mixedSpecs)
	dir, _ := writeLayout(t, cfg, src)
	l, err := Open(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, name := range []string{"layers.0.linear_attn.in_proj_qkv.weight", "layers.1.self_attn.k_proj.weight",
		"layers.1.self_attn.o_proj.weight", "layers.0.mlp.down_proj.weight", "lm_head.weight"} {
		e, _ := l.Entry(name)
		m, err := l.Matrix(name)
		if err != nil {
			t.Fatal(err)
		}
		out, in := e.Shape[0], e.Shape[1]
		got := tensor.New(out, in)
		m.Dequantize(got)
		want := formula(t, at(dir, e.File), e)
		for i, v := range want {
			if d := math.Abs(float64(got.Data[i]) - v); d > 1e-6*math.Abs(v)+1e-12 {
				t.Fatalf("%s [%d][%d]: Dequantize %v, the reference's formula %v", name, i/in, i%in, got.Data[i], v)
			}
		}
	}
}

// formula computes a matrix [out][in] from its tensors as the reference
// reads them.
func formula(t *testing.T, path string, e Entry) []float64 {
	ts, _ := readAll(t, path)
	get := func(sfx string) safetensors.Tensor {
		i := slices.IndexFunc(ts, func(x safetensors.Tensor) bool { return x.Name == e.Key+sfx })
		if i < 0 {
			t.Fatalf("%s: no %s", path, e.Key+sfx)
		}
		return ts[i]
	}
	f16 := func(x safetensors.Tensor, i int) float64 {
		return float64(tensor.F16ToF32(uint16(x.Data[2*i]) | uint16(x.Data[2*i+1])<<8))
	}
	out, in := e.Shape[0], e.Shape[1]
	w := make([]float64, out*in)
	scale := get(".scale")
	if e.Format.Kind == lut.Int8 {
		codes := get(".int8")
		for i := range w {
			w[i] = float64(int8(codes.Data[i])) * f16(scale, i/in)
		}
	} else {
		book, idx := get(".lut"), get(".idx")
		d := book.Shape[1]
		for r := range idx.Shape[0] {
			for j := range in {
				c := int(idx.Data[r*in+j])
				for k := range d {
					o := r*d + k
					w[o*in+j] = f16(book, c*d+k) * f16(scale, o)
				}
			}
		}
	}
	if e.Rank > 0 {
		a, b := get(".lr_a"), get(".lr_b")
		for o := range out {
			for j := range in {
				var s float64
				for k := range e.Rank {
					s += f16(a, o*e.Rank+k) * f16(b, k*in+j)
				}
				w[o*in+j] = float64(float32(float64(float32(w[o*in+j])) + s))
			}
		}
	}
	return w
}

// TestPlanRefusals: what the layout cannot hold is refused before
// anything is written, naming the matrix.
func TestPlanRefusals(t *testing.T) {
	on := func(f string, seed uint64) spec { return spec{format: f, seed: seed} }
	cases := []struct {
		name string
		by   map[string]spec
		cfg  func(*model.Config)
		want string // the matrix named
	}{
		{"row-grouped LUT", map[string]spec{"z": {format: "LUT4 g8 + pcs"}}, nil, "layers.0.linear_attn.in_proj_z.weight"},
		{"3-bit scalar", map[string]spec{"up": {format: "LUT3 per-tensor + pcs"}}, nil, "layers.0.mlp.up_proj.weight"},
		{"6-bit scalar", map[string]spec{"layers.1.mlp.down_proj.weight": {format: "LUT6 per-tensor + pcs"}}, nil, "layers.1.mlp.down_proj.weight"},
		{"vector too long", map[string]spec{"gate": {format: "vector 32x2 + pcs"}}, nil, "layers.0.mlp.gate_proj.weight"},
		{"rotated mixer input", map[string]spec{"q": on("LUT4 per-tensor + pcs", 5)}, nil, "layers.1.self_attn.q_proj.weight"},
		{"rotated head input", map[string]spec{"head": on("LUT4 per-tensor + pcs", 9)}, nil, "lm_head.weight"},
		{"MLP partly rotated", map[string]spec{"gate": on("LUT4 per-tensor + pcs", 1000), "up": on("LUT4 per-tensor + pcs", 1000)}, nil,
			"layers.0.mlp.down_proj.weight"},
		{"gate and up seeds differ", map[string]spec{"gate": on("LUT4 per-tensor + pcs", 1000), "up": on("LUT4 per-tensor + pcs", 1001),
			"down": on("LUT4 per-tensor + pcs", 2000)}, nil, "layers.0.mlp.up_proj.weight"},
		{"blocks differ", map[string]spec{"gate": on("LUT4 per-tensor + pcs", 1000), "up": on("LUT4 per-tensor + pcs", 1000),
			"down": on("LUT4 per-tensor + pcs", 2000)}, func(c *model.Config) { c.Intermediate = 64 }, "layers.0.mlp.down_proj.weight"},
		{"sign generators differ", map[string]spec{"gate": on("LUT4 per-tensor + pcs", 1000),
			"up": {format: "LUT4 per-tensor + pcs", seed: 1000, signs: lut.SignsNumpy}, "down": on("LUT4 per-tensor + pcs", 2000)}, nil,
			"layers.0.mlp.up_proj.weight"},
		{"MLP factors under online", map[string]spec{"gate": on("LUT4 per-tensor + pcs", 1000),
			"up": {format: "LUT4 per-tensor + pcs", seed: 1000, rank: 2}, "down": on("LUT4 per-tensor + pcs", 2000)}, nil, "layers.0.mlp.up_proj.weight"},
		{"mixer formats differ", map[string]spec{"z": {format: "vector 2x16 + pcs"}}, nil, "layers.0.linear_attn.in_proj_z.weight"},
		{"mixer half raw", map[string]spec{"out": {raw: safetensors.BF16}}, nil, "layers.0.linear_attn.out_proj.weight"},
		{"k/v formats differ", map[string]spec{"k": {format: "INT8 per-channel"}}, nil, "layers.1.self_attn.v_proj.weight"},
		{"f32 MLP", map[string]spec{"down": {raw: safetensors.F32}}, nil, "layers.0.mlp.down_proj.weight"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := tinyConfig()
			if c.cfg != nil {
				c.cfg(cfg)
			}
			src := newSource(t, cfg, spec{format: "LUT4 per-tensor + pcs"}, c.by)
			files, err := Plan(cfg, src)
			if err == nil || !errors.Is(err, ErrInexpressible) || !strings.Contains(err.Error(), `"`+c.want+`"`) {
				t.Fatalf("Plan: %v (%d files), want an error naming %q", err, len(files), c.want)
			}
			t.Log(err)
		})
	}
}

// TestSpell: forge's formats map onto the reference's spellings and back.
func TestSpell(t *testing.T) {
	for _, c := range []struct {
		format string
		out    int
		want   string // "" = refused
	}{
		{"LUT4 per-tensor + pcs", 64, "LUT4 per-tensor + pcs"},
		{"LUT4 g64 + pcs", 64, "LUT4 per-tensor + pcs"},
		{"LUT4 g32 + pcs", 64, ""},
		{"vector 2x16 + pcs", 64, "vector 2x16 + pcs"},
		{"vector 2x64 + pcs", 64, "vector 2x64 + pcs"},
		{"vector 2x16 g8 + pcs", 64, ""},
		{"vector 4x256 + pcs", 64, ""},
		{"vector 16x16 + pcs", 64, "vector 16x16 + pcs"},
		{"LUT3 per-tensor + pcs", 64, ""},
		{"LUT8 per-tensor + pcs", 64, "LUT8 per-tensor + pcs"},
		{"INT8 per-channel", 64, "INT8 per-channel"},
		{"bf16", 64, "bf16"},
		{"fp16", 64, "fp16"},
	} {
		f, err := lut.ParseFormat(c.format)
		if err != nil {
			t.Fatal(err)
		}
		got, norm, err := Spell(f, c.out)
		switch {
		case c.want == "" && (err == nil || !errors.Is(err, ErrInexpressible)):
			t.Errorf("Spell(%s, %d) = %q, %v: want a refusal", c.format, c.out, got, err)
		case c.want != "" && (err != nil || got != c.want):
			t.Errorf("Spell(%s, %d) = %q, %v: want %q", c.format, c.out, got, err, c.want)
		case c.want != "":
			if back, err := ParseFormat(got); err != nil || back != norm {
				t.Errorf("ParseFormat(%q) = %v, %v: want %v", got, back, err, norm)
			}
		}
	}
}

// TestSignRNG: what a layer file's sign_rng means. Plan writes
// forge-pcg-v1 for forge's signs and numpy-default-rng-choice for numpy's;
// Open reads each back, and a layer file with basis online and no
// sign_rng (the reference's own export) as numpy's: the numpy layout
// without the key reads back exactly as planned, forge's does not.
func TestSignRNG(t *testing.T) {
	cfg := tinyConfig()
	for _, c := range []struct {
		name string
		by   map[string]spec
		want lut.SignSource
		rng  string
	}{
		{"forge", mixedSpecs, lut.SignsForge, SignRNGForge},
		{"numpy", numpySpecs, lut.SignsNumpy, SignRNGNumpy},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := newSource(t, cfg, spec{format: "LUT4 per-tensor + pcs"}, c.by)
			dir, files := writeLayout(t, cfg, src)
			if files[0].Meta["sign_rng"] != c.rng || files[0].Entries[0].Rotation.Signs != c.want {
				t.Fatalf("planned %v, rotation %+v", files[0].Meta, files[0].Entries[0].Rotation)
			}
			var planned []Entry
			for _, f := range files {
				planned = append(planned, f.Entries...)
			}
			for _, f := range files {
				if f.Meta["basis"] == BasisOnline {
					rewrite(t, at(dir, f.Name), func(ts []safetensors.Tensor, meta map[string]string) []safetensors.Tensor {
						delete(meta, "sign_rng")
						return ts
					})
				}
			}
			l, err := Open(dir, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			online := 0
			for _, e := range l.Entries() {
				if e.Rotation != nil {
					online++
					if e.Rotation.Signs != lut.SignsNumpy {
						t.Errorf("%s: no sign_rng read as %v, want numpy's", e.Name, e.Rotation.Signs)
					}
				}
			}
			if online == 0 {
				t.Fatal("no rotated matrix")
			}
			if same := reflect.DeepEqual(l.Entries(), planned); same != (c.want == lut.SignsNumpy) {
				t.Errorf("without sign_rng the entries read back as planned: %t", same)
			}
		})
	}
}
