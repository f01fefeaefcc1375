package forge_test

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"forge"
	"forge/ane/chunk"
	"forge/bundle"
)

// TestANEPlanBundle: forge-tiny quantized (RTN) with a per-group vector
// LUT on layer 0's gate (CPU), a grouped scalar LUT on layer 1's up (ANE,
// 1.2× cost) and LUT3 on layer 2's down (charged as LUT4): the chunk
// bytes add up to the manifest's matrices (each in exactly one chunk, the
// head in the head chunk, the embedding on the host), the KV bytes per
// position follow the formulas computed here from the config, the chunk
// count is ⌈L / layers per chunk⌉, the CPU matrix is warned about by
// name, and the JSON file holds the same facts.
func TestANEPlanBundle(t *testing.T) {
	dir := t.TempDir()
	planFile, out := filepath.Join(dir, "plan.json"), filepath.Join(dir, "b")
	os.WriteFile(planFile, []byte(`{"default": "LUT4 per-tensor + pcs", "matrices": {"0.gate": "vector 2x16 g128 + pcs",
		"1.up": "LUT4 g128 + pcs", "2.down": "LUT3 per-tensor + pcs"}}`), 0o644)
	if err := forge.Quantize(context.Background(), forge.QuantizeConfig{Model: filepath.Join("models", "forge-tiny"), Out: out, Plan: planFile, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	man, err := bundle.ReadManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	js := filepath.Join(dir, "plan-ane.json")
	p, err := forge.ANEPlan(forge.ANEPlanConfig{Model: out, JSON: js, Options: chunk.Options{LayersPerChunk: 3}})
	if err != nil {
		t.Fatal(err)
	}
	const L, lpc, kvHeads, headDim, attn = 8, 3, 1, 64, 2 // forge-tiny: LLLALLLA
	if p.Totals.Chunks != (L+lpc-1)/lpc || len(p.Chunks) != p.Totals.Chunks+1 {
		t.Fatalf("%d chunks for %d layers of %d", p.Totals.Chunks, L, lpc)
	}
	where := map[string]int{}
	var sum int64
	for i, ch := range p.Chunks {
		sum += ch.WeightBytes - ch.VectorBytes + ch.CPUBytes
		for _, m := range ch.Matrices {
			if _, dup := where[m.Name]; dup {
				t.Errorf("%s is in two chunks", m.Name)
			}
			where[m.Name] = i
		}
	}
	var manifest int64
	for _, e := range man.Matrices {
		want := len(p.Chunks) - 1
		if i := strings.Index(e.Name, "layers."); i == 0 {
			var l int
			json.Unmarshal([]byte(strings.Split(e.Name, ".")[1]), &l)
			want = l / lpc
		}
		got, ok := where[e.Name]
		switch {
		case e.Name == "embed_tokens.weight":
			if ok {
				t.Errorf("the embedding is in chunk %d, not on the host", got)
			}
			continue
		case !ok || got != want:
			t.Errorf("%s: in chunk %d (listed %t), want %d", e.Name, got, ok, want)
		}
		manifest += e.Bytes
	}
	if sum != manifest {
		t.Errorf("chunks hold %d bytes of matrices, the manifest lists %d (embedding aside)", sum, manifest)
	}
	fp16 := int64(2 * attn * kvHeads * headDim * 2)
	int8v := int64(attn * (kvHeads*headDim*2 + kvHeads*headDim + 2*kvHeads))
	if p.Totals.KVBytesPerTokenFP16 != fp16 || p.Totals.KVBytesPerTokenInt8V != int8v {
		t.Errorf("KV per position %d / %d bytes, want %d / %d", p.Totals.KVBytesPerTokenFP16, p.Totals.KVBytesPerTokenInt8V, fp16, int8v)
	}
	if len(p.Warnings) == 0 || !strings.Contains(strings.Join(p.Warnings, "\n"), "layers.0.mlp.gate_proj.weight (chunk 0") {
		t.Errorf("no warning names the CPU matrix: %q", p.Warnings)
	}
	for _, m := range p.Chunks[0].Matrices {
		e, _ := bundleEntry(man, m.Name)
		switch m.Name {
		case "layers.0.mlp.gate_proj.weight":
			if m.Where != "cpu" || p.Chunks[0].CPUBytes != e.Bytes {
				t.Errorf("%s: %s; chunk 0 CPU bytes %d, want %d", m.Name, m.Where, p.Chunks[0].CPUBytes, e.Bytes)
			}
		case "layers.1.mlp.up_proj.weight":
			if m.CostBytes != int64(math.Round(1.2*float64(e.Bytes))) {
				t.Errorf("%s: %d cost bytes for %d", m.Name, m.CostBytes, e.Bytes)
			}
		case "layers.2.mlp.down_proj.weight":
			if m.CostBytes != e.Bytes+int64(e.Shape[0]*e.Shape[1]/8) {
				t.Errorf("%s (LUT3): %d cost bytes for %d", m.Name, m.CostBytes, e.Bytes)
			}
		}
	}
	checkANEJSON(t, js, p)
}

func bundleEntry(m *bundle.Manifest, name string) (bundle.MatrixEntry, bool) {
	for _, e := range m.Matrices {
		if e.Name == name {
			return e, true
		}
	}
	return bundle.MatrixEntry{}, false
}

// checkANEJSON reads the plan's JSON file by its plain field names.
func checkANEJSON(t *testing.T, path string, p *chunk.Plan) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Version string `json:"forge_version"`
		Chunks  []struct {
			Layers  []int `json:"layers"`
			Weight  int64 `json:"weight_bytes"`
			FP16    int64 `json:"kv_bytes_per_token_fp16"`
			Int8V   int64 `json:"kv_bytes_per_token_int8v"`
			State   int64 `json:"state_bytes"`
			Entries []struct {
				Ctx   int     `json:"ctx"`
				KVLen int     `json:"kv_len"`
				KV    int64   `json:"kv_bytes_int8v"`
				MS    float64 `json:"ms_per_step_int8v"`
			} `json:"entries"`
		} `json:"chunks"`
		Bandwidth   float64 `json:"bandwidth_gbs"`
		Calibration struct {
			Points []struct {
				Measured float64 `json:"measured_ms"`
			} `json:"points"`
		} `json:"calibration"`
		Warnings []string `json:"warnings"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Chunks) != len(p.Chunks) {
		t.Fatalf("JSON file: %d chunks, want %d", len(v.Chunks), len(p.Chunks))
	}
	c1, e := v.Chunks[1], p.Chunks[1].Entries[0] // layers 3–5: one attention layer
	if v.Version == "" || len(c1.Layers) != 2 || c1.Layers[0] != p.LayersPerChunk || c1.Layers[1] != 2*p.LayersPerChunk-1 ||
		c1.Weight != p.Chunks[1].WeightBytes || c1.FP16 != p.Chunks[1].KVBytesPerTokenFP16 || c1.FP16 == 0 ||
		c1.Int8V != p.Chunks[1].KVBytesPerTokenInt8V || c1.State != p.Chunks[1].StateBytes || len(c1.Entries) != 3 ||
		c1.Entries[0].Ctx != 8192 || c1.Entries[0].KVLen != 8192-64 || c1.Entries[0].KV != e.KVBytesInt8V || c1.Entries[0].MS != e.MSPerStepInt8V ||
		v.Bandwidth != p.BandwidthGBs || len(v.Calibration.Points) != 4 || v.Calibration.Points[0].Measured != 91.5 ||
		len(v.Warnings) != len(p.Warnings) {
		t.Errorf("JSON file: %+v", v)
	}
}

// TestANEPlanRefusals: no model, a missing directory, bad options, a JSON
// path that is not forge's.
func TestANEPlanRefusals(t *testing.T) {
	dir := t.TempDir()
	tiny := filepath.Join("models", "forge-tiny")
	mine := filepath.Join(dir, "mine.json")
	os.WriteFile(mine, []byte(`{"a": 1}`), 0o644)
	for _, c := range []struct {
		cfg  forge.ANEPlanConfig
		want string
	}{
		{forge.ANEPlanConfig{}, "model directory is required"},
		{forge.ANEPlanConfig{Model: filepath.Join(dir, "none")}, "none"},
		{forge.ANEPlanConfig{Model: tiny, Options: chunk.Options{T: 65}}, "T = 65"},
		{forge.ANEPlanConfig{Model: tiny, Options: chunk.Options{Contexts: []int{10}}}, "context 10"},
		{forge.ANEPlanConfig{Model: tiny, JSON: mine}, "already exists"},
		{forge.ANEPlanConfig{Model: tiny, JSON: mine, Overwrite: true}, "not a file forge wrote"},
	} {
		if _, err := forge.ANEPlan(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error mentioning %q", c.cfg, err, c.want)
		}
	}
}
