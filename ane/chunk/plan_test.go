package chunk

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"forge/lut"
	"forge/model"
)

// TestChunks27B: the reference's layout — 16 chunks of 4 layers (LLLA)
// and a head chunk — and, at 5 layers per chunk, ⌈64/5⌉ = 13 chunks, the
// last holding layers 60–63; every matrix but the embedding is in the
// chunk of its layer (the head in the head chunk) exactly once.
func TestChunks27B(t *testing.T) {
	c := Reference27B()
	ws := deployedWeights(&c)
	for _, lpc := range []int{4, 5} {
		p, err := New(&c, ws, Options{LayersPerChunk: lpc})
		if err != nil {
			t.Fatal(err)
		}
		n := (64 + lpc - 1) / lpc
		if p.Totals.Chunks != n || len(p.Chunks) != n+1 || p.Chunks[n].Name != "head" {
			t.Fatalf("%d layers per chunk: %d chunks", lpc, p.Totals.Chunks)
		}
		if last := p.Chunks[n-1].Layers; last[0] != (n-1)*lpc || last[1] != 63 {
			t.Errorf("%d layers per chunk: last chunk holds layers %v", lpc, last)
		}
		if lpc == 4 && slices.ContainsFunc(p.Chunks[:n], func(ch Chunk) bool { return ch.Kinds != "LLLA" }) {
			t.Errorf("a chunk of 4 layers is not LLLA")
		}
		seen := map[string]int{}
		for i, ch := range p.Chunks {
			for _, m := range ch.Matrices {
				seen[m.Name]++
				want := n // the head chunk
				if m.Layer >= 0 {
					want = m.Layer / lpc
				}
				if i != want {
					t.Errorf("%s is in chunk %d, want %d", m.Name, i, want)
				}
			}
		}
		for _, w := range ws {
			if want := map[bool]int{true: 0, false: 1}[w.Name == "embed_tokens.weight"]; seen[w.Name] != want {
				t.Errorf("%s is in %d chunks, want %d", w.Name, seen[w.Name], want)
			}
		}
		if len(p.Warnings) != 0 {
			t.Errorf("warnings: %q", p.Warnings)
		}
	}
}

// tinyConfig is a small hybrid: 6 layers (LLLALL), untied unless asked.
func tinyConfig(tied bool) model.Config {
	c := model.Config{Vocab: 64, Hidden: 32, Intermediate: 48, Heads: 4, KVHeads: 2, HeadDim: 8, Eps: 1e-6,
		KeyHeads: 2, ValueHeads: 4, KeyDim: 8, ValueDim: 8, ConvKernel: 4, RopeTheta: 1e4, RotaryFactor: 0.5,
		Tied: tied, MaxContext: 1 << 20}
	for i := range 6 {
		k := model.DeltaNet
		if i%4 == 3 {
			k = model.Attention
		}
		c.Layers = append(c.Layers, k)
	}
	return c
}

// floatWeights are every matrix of c as bf16, with formats overridden by name.
func floatWeights(t *testing.T, c *model.Config, formats map[string]lut.Format) []Weight {
	var ws []Weight
	for _, s := range model.Tensors(c) {
		if !s.Matrix {
			continue
		}
		w, err := FloatWeight(s.Name, "bf16", s.Shape[0], s.Shape[1])
		if err != nil {
			t.Fatal(err)
		}
		if f, ok := formats[s.Name]; ok {
			w = Weight{Name: s.Name, Format: f, Bytes: f.Size(s.Shape[0], s.Shape[1], 0).Total()}
		}
		ws = append(ws, w)
	}
	return ws
}

// TestPlacementWarnings: a per-group vector LUT falls back to the CPU and a
// 32-entry vector of length 16 cannot be expressed: each is warned about
// by name, counted in CPU bytes and left out of the ANE weights; a grouped
// scalar LUT stays on the ANE with its cost note. A tied model's head is
// the embedding matrix, in the head chunk.
func TestPlacementWarnings(t *testing.T) {
	c := tinyConfig(true)
	gate, up, down := "layers.0.mlp.gate_proj.weight", "layers.4.mlp.up_proj.weight", "layers.1.mlp.down_proj.weight"
	vg := lut.Format{Kind: lut.Vector, Bits: 4, Dim: 2, Group: 16}
	big := lut.VectorFormat(16, 32)
	p, err := New(&c, floatWeights(t, &c, map[string]lut.Format{gate: vg, up: big, down: lut.LUTFormat(4, 16)}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var cpu int64
	for _, n := range []string{gate, up} {
		i := slices.IndexFunc(p.Warnings, func(w string) bool { return strings.HasPrefix(w, n) })
		if i < 0 {
			t.Errorf("no warning names %s: %q", n, p.Warnings)
		}
	}
	for _, ch := range p.Chunks {
		for _, m := range ch.Matrices {
			switch m.Name {
			case gate, up:
				cpu += m.Bytes
				if m.Where == "ane" || m.CostBytes != 0 {
					t.Errorf("%s: %s, %d cost bytes", m.Name, m.Where, m.CostBytes)
				}
			case down:
				if m.Where != "ane" || !strings.Contains(m.Placement, "~20%") {
					t.Errorf("%s: %s", m.Name, m.Placement)
				}
			}
		}
	}
	if cpu == 0 || p.Totals.CPUBytes != cpu || p.Chunks[0].CPUBytes+p.Chunks[1].CPUBytes != cpu {
		t.Errorf("CPU bytes: totals %d, chunks %d + %d; want %d", p.Totals.CPUBytes, p.Chunks[0].CPUBytes, p.Chunks[1].CPUBytes, cpu)
	}
	head := p.Chunks[len(p.Chunks)-1]
	if len(head.Matrices) != 1 || head.Matrices[0].Name != "embed_tokens.weight" || head.Matrices[0].Role != "head" {
		t.Errorf("tied head chunk: %+v", head.Matrices)
	}
}

// TestNewRefuses: bad options and weights that do not match the model.
func TestNewRefuses(t *testing.T) {
	c := tinyConfig(false)
	ws := floatWeights(t, &c, nil)
	for _, o := range []Options{
		{LayersPerChunk: -1}, {T: -1}, {T: PrefillRows + 1}, {Contexts: []int{}}, {Contexts: []int{PrefillRows}},
		{Contexts: []int{0}}, {Contexts: []int{4096, 4096}}, {Bandwidth: Bandwidths{Weights: -1}},
	} {
		if _, err := New(&c, ws, o); !errors.Is(err, ErrOptions) {
			t.Errorf("%+v: %v, want an ErrOptions error", o, err)
		}
	}
	for name, bad := range map[string][]Weight{
		"missing":  ws[1:],
		"twice":    append(slices.Clone(ws), ws[0]),
		"unknown":  append(slices.Clone(ws), Weight{Name: "layers.9.mlp.up_proj.weight", Format: lut.BFloat16, Bytes: 2}),
		"no bytes": append([]Weight{{Name: ws[0].Name, Format: lut.BFloat16}}, ws[1:]...),
	} {
		if _, err := New(&c, bad, Options{}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := FloatWeight("x", "i8", 2, 2); err == nil {
		t.Error("FloatWeight took dtype i8")
	}
}
