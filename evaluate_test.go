package forge_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"forge"
	"forge/bundle"
)

var (
	evalTiny = filepath.Join("models", "forge-tiny")
	evalData = filepath.Join("testdata", "calib", "code.txt")
)

// traceTiny records forge-tiny over 4 rows of 64 tokens of code.txt.
func traceTiny(t *testing.T, topK int) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "ref.trace")
	rep, err := forge.Trace(context.Background(), forge.TraceConfig{Model: evalTiny, Data: []string{evalData + ":4"}, Out: out, Seq: 64, TopK: topK, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Meta.Positions != 4*63 || rep.Tokens != 4*64 {
		t.Fatalf("trace report %+v", rep)
	}
	return out
}

// readNPY reads a 1-D float32 NPY v1 file as npy.EncodeFloat32 writes it.
func readNPY(t *testing.T, path string) []float32 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 10 || string(b[:8]) != "\x93NUMPY\x01\x00" {
		t.Fatalf("%s: not NPY 1.0", path)
	}
	data := b[10+int(binary.LittleEndian.Uint16(b[8:])):]
	out := make([]float32, len(data)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
	}
	return out
}

// TestEvaluateSelfAndQuantized: the reference against its own trace scores
// KL exactly 0 and top-1 100% at 16 bits per weight; an RTN LUT4 bundle of
// it scores KL ≥ 0 everywhere (Gibbs' inequality; the renormalized float64
// KL is exact to ~1e-15 and the quantized model's KLs are ≫ that), a
// positive mean, about 4 bits per weight, the same KL from a top-V trace
// (within 1e-6), and writes JSON, Markdown and the per-position .npy.
func TestEvaluateSelfAndQuantized(t *testing.T) {
	trace := traceTiny(t, 0)
	self, err := forge.Evaluate(context.Background(), forge.EvalConfig{Trace: trace, Model: evalTiny})
	if err != nil {
		t.Fatal(err)
	}
	if self.MeanKL != 0 || self.MaxKL != 0 || self.Top1 != 1 || self.Definition != "full" || self.Positions != 252 {
		t.Errorf("self: %+v", self)
	}
	// The stored reference NLLs are float32 (relative rounding 6e-8).
	if math.Abs(self.PPL/self.RefPPL-1) > 1e-6 || self.BPW != 16 {
		t.Errorf("self: ppl %g vs %g, %g bpw", self.PPL, self.RefPPL, self.BPW)
	}

	b := filepath.Join(t.TempDir(), "lut4")
	if err := forge.Quantize(context.Background(), forge.QuantizeConfig{Model: evalTiny, Out: b, Format: "LUT4 per-tensor + pcs", Seed: 1}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := forge.EvalConfig{Trace: trace, Model: b, JSON: filepath.Join(dir, "r.json"),
		KLOut: filepath.Join(dir, "kl.npy"), Markdown: filepath.Join(dir, "r.md")}
	rep, err := forge.Evaluate(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	kl := readNPY(t, cfg.KLOut)
	if len(kl) != 252 {
		t.Fatalf("%d KL values", len(kl))
	}
	for i, v := range kl {
		if v < 0 || v != float32(rep.KL[i]) {
			t.Fatalf("position %d: KL %g (report %g)", i, v, rep.KL[i])
		}
	}
	if !(rep.MeanKL > 0) || rep.MedianKL > rep.P90KL || rep.P90KL > rep.P99KL || rep.P99KL > rep.P999KL || rep.P999KL > rep.MaxKL {
		t.Errorf("quantized: %+v", rep)
	}
	man, err := bundle.ReadManifest(b)
	if err != nil {
		t.Fatal(err)
	}
	var bytes int64
	for _, e := range man.Matrices {
		if strings.HasPrefix(e.Format, "LUT4") {
			bytes += e.Bytes
		}
	}
	if rep.Bytes != bytes || rep.BPW < 4 || rep.BPW > 4.2 {
		t.Errorf("%d bytes (manifest LUT4 matrices: %d), %.3f bpw", rep.Bytes, bytes, rep.BPW)
	}
	// The blocks' bpw leaves the head out: over the layers' matrices alone.
	var blockBytes, blockWeights int64
	for _, e := range man.Matrices {
		if strings.HasPrefix(e.Name, "layers.") && strings.HasPrefix(e.Format, "LUT4") {
			blockBytes += e.Bytes
			blockWeights += int64(e.Shape[0]) * int64(e.Shape[1])
		}
	}
	if want := 8 * float64(blockBytes) / float64(blockWeights); math.Abs(rep.BlocksBPW-want) > 1e-9 {
		t.Errorf("blocks bpw %.6f, want %.6f from the manifest", rep.BlocksBPW, want)
	}
	var js map[string]any
	raw, _ := os.ReadFile(cfg.JSON)
	if err := json.Unmarshal(raw, &js); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"n_positions", "mean_kl", "median_kl", "p90_kl", "p99_kl", "p999_kl", "max_kl", "top1",
		"ppl", "ref_ppl", "mean_delta_p", "bytes", "bpw", "blocks_bpw", "definition", "trace", "model"} {
		if _, ok := js[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	if md, _ := os.ReadFile(cfg.Markdown); !strings.Contains(string(md), "| mean KL |") {
		t.Errorf("markdown:\n%s", md)
	}

	// A candidate made from the trace's reference logs nothing; scored
	// against another model's trace (forge-tiny-draft, same vocabulary) it
	// is flagged.
	var logged []string
	logf := func(line string) { logged = append(logged, line) }
	if _, err := forge.Evaluate(context.Background(), forge.EvalConfig{Trace: trace, Model: b, Log: logf}); err != nil || len(logged) != 0 {
		t.Errorf("same reference: %v, logged %q", err, logged)
	}
	draft := filepath.Join(t.TempDir(), "draft.trace")
	if _, err := forge.Trace(context.Background(), forge.TraceConfig{Model: filepath.Join("models", "forge-tiny-draft"), Data: []string{evalData + ":1"}, Out: draft, Seq: 16}); err != nil {
		t.Fatal(err)
	}
	if _, err := forge.Evaluate(context.Background(), forge.EvalConfig{Trace: draft, Model: b, Log: logf}); err != nil || len(logged) != 1 || !strings.Contains(logged[0], "not made from") {
		t.Errorf("other reference: %v, logged %q", err, logged)
	}
	// A bundle as the reference is fingerprinted by its manifest.
	btrace := filepath.Join(t.TempDir(), "bundle.trace")
	brep, err := forge.Trace(context.Background(), forge.TraceConfig{Model: b, Data: []string{evalData + ":1"}, Out: btrace, Seq: 16})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(mustRead(t, filepath.Join(b, bundle.ManifestName)))
	if brep.Meta.ModelKind != "bundle" || brep.Meta.Fingerprint != hex.EncodeToString(sum[:]) {
		t.Errorf("bundle reference: %s %s", brep.Meta.ModelKind, brep.Meta.Fingerprint)
	}

	topV, err := forge.Evaluate(context.Background(), forge.EvalConfig{Trace: traceTiny(t, 4160), Model: b})
	if err != nil {
		t.Fatal(err)
	}
	if topV.Definition != "top-4160+tail" || math.Abs(topV.MeanKL-rep.MeanKL) > 1e-6 || topV.Top1 != rep.Top1 {
		t.Errorf("top-V: %s mean KL %g top-1 %g; full %g %g", topV.Definition, topV.MeanKL, topV.Top1, rep.MeanKL, rep.Top1)
	}
}

// TestEvaluateRefused: a candidate with another vocabulary, a cut trace
// and a missing one are refused, naming the trace.
func TestEvaluateRefused(t *testing.T) {
	trace := traceTiny(t, 8)
	other := filepath.Join("testdata", "qwen35-tiny-random")
	_, err := forge.Evaluate(context.Background(), forge.EvalConfig{Trace: trace, Model: other})
	if err == nil || !strings.Contains(err.Error(), trace) || !strings.Contains(err.Error(), "vocabulary") {
		t.Errorf("other vocabulary: %v", err)
	}
	raw, _ := os.ReadFile(trace)
	cut := filepath.Join(t.TempDir(), "cut.trace")
	os.WriteFile(cut, raw[:len(raw)/2], 0o644)
	for _, p := range []string{cut, filepath.Join(t.TempDir(), "none.trace")} {
		_, err := forge.Evaluate(context.Background(), forge.EvalConfig{Trace: p, Model: evalTiny})
		if err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: %v", p, err)
		}
	}
	// A cancelled run stops.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := forge.Evaluate(ctx, forge.EvalConfig{Trace: trace, Model: evalTiny}); err != context.Canceled {
		t.Errorf("cancelled: %v", err)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestEvaluateAblation: an ablation that takes every part of every layer
// from the bundle scores exactly as the bundle; taking only the MLP of
// layers 0-3 scores strictly between the reference (0) and the whole
// bundle, and the report records the ablation and counts only the bytes
// taken from the bundle as quantized.
func TestEvaluateAblation(t *testing.T) {
	tr := traceTiny(t, 0)
	b := filepath.Join(t.TempDir(), "b")
	if err := forge.Quantize(context.Background(), forge.QuantizeConfig{Model: evalTiny, Out: b, Format: "LUT2 per-tensor + pcs"}); err != nil {
		t.Fatal(err)
	}
	ev := func(ref, parts, layers string) float64 {
		rep, err := forge.Evaluate(context.Background(), forge.EvalConfig{Trace: tr, Model: b, Reference: ref, Parts: parts, Layers: layers})
		if err != nil {
			t.Fatal(err)
		}
		if ref != "" && (rep.Reference != ref || rep.Parts != parts || rep.Layers != layers) {
			t.Errorf("report does not record the ablation: %q %q %q", rep.Reference, rep.Parts, rep.Layers)
		}
		return rep.MeanKL
	}
	whole, all, part := ev("", "", ""), ev(evalTiny, "", ""), ev(evalTiny, "mlp", "0-3")
	if all != whole {
		t.Errorf("ablation of everything: mean KL %v, the bundle's %v", all, whole)
	}
	if !(part > 0 && part < whole) {
		t.Errorf("MLP of layers 0-3: mean KL %v, want in (0, %v)", part, whole)
	}
}
