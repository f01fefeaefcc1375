package forge_test

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"forge"
	"forge/ane/layout"
	"forge/bundle"
	"forge/safetensors"
)

// refPlan: the MLPs of layers 0–2 quantized, rotated online in layers 0
// (vector 2x16: vector quantization is slow, so only there) and 1 (bf16:
// k.weight in the rotated basis), plain in layer 2 (LUT4, down INT8);
// those of layers 3–7 left raw (k.weight, plain); LUT4 DeltaNet mixers
// with rank-4 factors; attention q/o left raw (out of the layout, from
// the checkpoint); INT8 k/v with factors; a LUT4 head.
const refPlan = `{"parts": {"gdn": "LUT4 per-tensor + pcs", "kv": "INT8 per-channel", "head": "LUT4 per-tensor + pcs"},
 "matrices": {"0.mlp": "vector 2x16 + pcs", "1.mlp": "bf16", "2.mlp": "LUT4 per-tensor + pcs", "2.down": "INT8 per-channel"},
 "basis": {"2": "plain"}}`

// TestExportImportRoundTrip: bundle → forge export → forge import (base
// from forge-export.json) gives a bundle whose every matrix has the same
// facts and the same stored arrays as the source bundle's, and whose
// logits are bit-identical on two token sequences. The files' headers
// follow docs/reference-pipeline.md §9.3.
func TestExportImportRoundTrip(t *testing.T) {
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.json")
	os.WriteFile(plan, []byte(refPlan), 0o644)
	cases := []struct {
		name   string
		cfg    forge.QuantizeConfig
		online int      // layers with basis online
		raw    []string // quantizable matrices left out of the layout
		rawMLP int      // raw MLP matrices (k.weight in the layout)
	}{
		{"lut4+lowrank", forge.QuantizeConfig{Format: "LUT4 per-tensor + pcs", Seed: 1,
			LowRankRank: 4, LowRankParts: []string{"gdn", "attn", "kv", "head"}}, 0, nil, 0},
		{"plan+hadamard", forge.QuantizeConfig{Plan: plan, Hadamard: true, Seed: 2, LowRankRank: 4, LowRankParts: []string{"gdn", "kv"}}, 2,
			[]string{"layers.3.self_attn.q_proj.weight", "layers.3.self_attn.o_proj.weight", "layers.7.self_attn.q_proj.weight", "layers.7.self_attn.o_proj.weight"}, 15},
	}
	toks := dequantTokens(t)
	seqs := [][]int{toks, toks[7:19]}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := quantizeTiny(t, c.cfg)
			out := filepath.Join(t.TempDir(), "ref")
			rep, err := forge.Export(context.Background(), forge.ExportConfig{Model: src, Out: out})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(rep.Unexported, c.raw) || (c.online > 0) != (len(rep.Warnings) > 0) {
				t.Errorf("report: unexported %v, want %v; warnings %q", rep.Unexported, c.raw, rep.Warnings)
			}
			checkHeaders(t, out, c.online)
			back := filepath.Join(t.TempDir(), "back")
			irep, err := forge.Import(context.Background(), forge.ImportConfig{Dir: out, Out: back})
			if err != nil {
				t.Fatal(err)
			}
			if abs, _ := filepath.Abs(tinyDir); irep.Base != abs || !slices.Equal(irep.FromBase, c.raw) {
				t.Errorf("import: base %s (want %s), from base %v", irep.Base, abs, irep.FromBase)
			}
			if n := sameMatrices(t, src, back); n != c.rawMLP {
				t.Errorf("%d raw MLP matrices, want %d", n, c.rawMLP)
			}
			for i, s := range seqs {
				a, b := dequantLogits(t, src, s), dequantLogits(t, back, s)
				for k := range a {
					if math.Float32bits(a[k]) != math.Float32bits(b[k]) {
						t.Fatalf("sequence %d: logit %d: %v exported and imported, %v in the source bundle", i, k, b[k], a[k])
					}
				}
			}
		})
	}
}

// sameMatrices checks that two bundles record every matrix with the same
// facts and store the same arrays, but for a raw MLP matrix of a, which
// comes back from the layout's k.weight as a bf16-format matrix of b with
// the same bytes.
func sameMatrices(t *testing.T, a, b string) (rawMLPs int) {
	t.Helper()
	ba, err := bundle.Open(a)
	if err != nil {
		t.Fatal(err)
	}
	defer ba.Close()
	bb, err := bundle.Open(b)
	if err != nil {
		t.Fatal(err)
	}
	defer bb.Close()
	ma, mb := ba.Manifest().Matrices, bb.Manifest().Matrices
	if len(ma) != len(mb) {
		t.Fatalf("%d matrices, the source has %d", len(mb), len(ma))
	}
	for i, ea := range ma {
		eb := mb[i]
		rawMLP := ea.Raw && strings.Contains(ea.Name, ".mlp.")
		if ea.Name != eb.Name || ea.Format != eb.Format || ea.Shape != eb.Shape || ea.Rank != eb.Rank || ea.Raw != eb.Raw && !rawMLP ||
			(ea.Rotation == nil) != (eb.Rotation == nil) || ea.Rotation != nil && *ea.Rotation != *eb.Rotation {
			t.Fatalf("matrix %d: %+v, the source's %+v", i, eb, ea)
		}
		la, _ := ba.Matrix(ea.Name)
		lb, _ := bb.Matrix(ea.Name)
		if rawMLP && eb.Raw {
			t.Fatalf("%s: raw again after the round trip", ea.Name)
		}
		if rawMLP {
			rawMLPs++
			_, ra, _ := ba.Raw(ea.Name)
			w := lb.Parts().Weight
			for k := range w {
				if uint16(ra[2*k])|uint16(ra[2*k+1])<<8 != w[k] {
					t.Fatalf("%s: weight %d differs", ea.Name, k)
				}
			}
			continue
		}
		if la == nil {
			_, ra, _ := ba.Raw(ea.Name)
			_, rb, _ := bb.Raw(ea.Name)
			if !slices.Equal(ra, rb) {
				t.Fatalf("%s: raw bytes differ", ea.Name)
			}
			continue
		}
		pa, pb := la.Parts(), lb.Parts()
		if !slices.Equal(pa.Index, pb.Index) || !slices.Equal(pa.LUT, pb.LUT) || !slices.Equal(pa.Scale, pb.Scale) ||
			!slices.Equal(pa.Weight, pb.Weight) || !slices.Equal(pa.LowRankA, pb.LowRankA) || !slices.Equal(pa.LowRankB, pb.LowRankB) {
			t.Fatalf("%s: stored arrays differ", ea.Name)
		}
	}
	return rawMLPs
}

// checkHeaders checks the §9.3 fields of a few files of an export of
// forge-tiny (hidden 256, MLP 768, DeltaNet qkv 320, attention k 64).
func checkHeaders(t *testing.T, dir string, online int) {
	t.Helper()
	f, err := safetensors.Open(filepath.Join(dir, "layer_00.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	meta := f.Metadata()
	if online > 0 {
		want := map[string]string{"basis": "online", "seed_in": "1000", "seed_mid": "2000", "block": "256", "sign_rng": "forge-pcg-v1",
			"gate.format": "vector 2x16 + pcs"}
		for k, v := range want {
			if meta[k] != v {
				t.Errorf("layer_00 metadata %s = %q, want %q", k, meta[k], v)
			}
		}
		shapes := map[string][]int{"gate.lut": {16, 2}, "gate.idx": {384, 256}, "gate.scale": {768}, "down.idx": {128, 768}}
		for n, s := range shapes {
			if info, ok := f.Info(n); !ok || !slices.Equal(info.Shape, s) {
				t.Errorf("layer_00 %s: %+v, want shape %v", n, info, s)
			}
		}
		mx, err := safetensors.Open(filepath.Join(dir, "layer_03_mixer.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		defer mx.Close()
		if m := mx.Metadata(); m["kind"] != "full_attention" || m["format"] != "bf16" || m["kv_format"] != "INT8 per-channel" {
			t.Errorf("layer_03_mixer metadata %v", m)
		}
		if info, ok := mx.Info("self_attn.k_proj.int8"); !ok || info.DType != safetensors.I8 || !slices.Equal(info.Shape, []int{64, 256}) {
			t.Errorf("self_attn.k_proj.int8: %+v", info)
		}
		if slices.ContainsFunc(mx.Names(), func(n string) bool { return strings.HasPrefix(n, "self_attn.q_proj") }) {
			t.Errorf("raw q_proj exported: %v", mx.Names())
		}
		return
	}
	if meta["basis"] != "plain" || meta["up.format"] != "LUT4 per-tensor + pcs" {
		t.Errorf("layer_00 metadata %v", meta)
	}
	if info, ok := f.Info("up.lut"); !ok || !slices.Equal(info.Shape, []int{16, 1}) {
		t.Errorf("up.lut: %+v, want [16 1]", info)
	}
	h, err := safetensors.Open(filepath.Join(dir, layout.HeadFile))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if info, ok := h.Info("lm_head.idx"); h.Metadata()["format"] != "LUT4 per-tensor + pcs" || !ok || info.DType != safetensors.U8 ||
		!slices.Equal(info.Shape, []int{4160, 256}) {
		t.Errorf("lm_head: %v %+v", h.Metadata(), info)
	}
	if info, ok := h.Info("lm_head.lr_a"); !ok || !slices.Equal(info.Shape, []int{4160, 4}) {
		t.Errorf("lm_head.lr_a: %+v", info)
	}
}

// TestExportRefusals: a grouped codebook is refused naming the matrix,
// with nothing written; a checkpoint is not a bundle; an existing output
// is replaced only with Overwrite.
func TestExportRefusals(t *testing.T) {
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.json")
	os.WriteFile(plan, []byte(`{"default": "LUT4 per-tensor + pcs", "matrices": {"2.z": "LUT4 g64 + pcs"}}`), 0o644)
	grouped := quantizeTiny(t, forge.QuantizeConfig{Plan: plan, Seed: 1})
	out := filepath.Join(dir, "ref")
	_, err := forge.Export(context.Background(), forge.ExportConfig{Model: grouped, Out: out})
	if !errors.Is(err, layout.ErrInexpressible) || !strings.Contains(err.Error(), `"layers.2.linear_attn.in_proj_z.weight"`) {
		t.Errorf("grouped: %v", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("refused export left %s", out)
	}
	if _, err := os.Stat(out + ".partial"); !os.IsNotExist(err) {
		t.Errorf("refused export left %s.partial", out)
	}
	if _, err := forge.Export(context.Background(), forge.ExportConfig{Model: tinyDir, Out: out}); err == nil || !strings.Contains(err.Error(), "not a forge bundle") {
		t.Errorf("checkpoint: %v", err)
	}
	if _, err := forge.Export(context.Background(), forge.ExportConfig{Model: grouped, Out: out, Layout: "coreml"}); err == nil || !strings.Contains(err.Error(), "coreml") {
		t.Errorf("layout coreml: %v", err)
	}
	mine := filepath.Join(dir, "mine")
	os.Mkdir(mine, 0o755)
	os.WriteFile(filepath.Join(mine, "notes.txt"), []byte("mine"), 0o644)
	if _, err := forge.Export(context.Background(), forge.ExportConfig{Model: grouped, Out: mine, Overwrite: true}); err == nil || !strings.Contains(err.Error(), "did not write") {
		t.Errorf("someone else's directory: %v", err)
	}
}
