package forge_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"forge"
	"forge/lut"
)

// TestReconstructBundle: --reconstruct on forge-tiny (GPTQ LUT4 with the
// Hadamard rotation and rank-2 factors, a few Adam steps) writes a bundle
// whose matrices have exactly the formats, shapes, ranks and bytes of the
// same recipe without reconstruction, with one log entry per layer in the
// manifest (finite held-out losses; kept only where the loss dropped); a
// run interrupted after three layers resumes, reconstructing only the
// layers it had not, to the same bundle as the run in one go (every
// tensor's hash equal: the fit is deterministic).
func TestReconstructBundle(t *testing.T) {
	dir := t.TempDir()
	base := tinyCalib(forge.QuantizeConfig{Format: "LUT4 per-tensor + pcs", Method: "gptq", Hadamard: true,
		LowRankRank: 2, Reconstruct: true, ReconSteps: 3, ReconLRLUT: 1e-3})
	base.Seq = 64
	run := func(out string, mod func(*forge.QuantizeConfig)) error {
		cfg := base
		cfg.Out = out
		if mod != nil {
			mod(&cfg)
		}
		return forge.Quantize(context.Background(), cfg)
	}
	a, plain, c := filepath.Join(dir, "a"), filepath.Join(dir, "plain"), filepath.Join(dir, "c")
	if err := run(a, nil); err != nil {
		t.Fatal(err)
	}
	if err := run(plain, func(cfg *forge.QuantizeConfig) { cfg.Reconstruct = false }); err != nil {
		t.Fatal(err)
	}
	ma, mp := readManifest(t, a), readManifest(t, plain)
	if len(ma.Matrices) != len(mp.Matrices) {
		t.Fatalf("%d matrices, without reconstruction %d", len(ma.Matrices), len(mp.Matrices))
	}
	for i, e := range ma.Matrices {
		p := mp.Matrices[i]
		if e.Name != p.Name || e.Format != p.Format || e.Shape != p.Shape || e.Rank != p.Rank || e.Bytes != p.Bytes {
			t.Errorf("%s: %s %v rank %d %d bytes; without reconstruction %s %v rank %d %d bytes",
				e.Name, e.Format, e.Shape, e.Rank, e.Bytes, p.Format, p.Shape, p.Rank, p.Bytes)
		}
	}
	log, ok := ma.Quant.Recipe["reconstruction_log"].([]any)
	if !ok || len(log) != 8 {
		t.Fatalf("reconstruction log %v, want 8 layers", ma.Quant.Recipe["reconstruction_log"])
	}
	for li, raw := range log {
		e := raw.(map[string]any)
		before, after := e["held_before"].(float64), e["held_after"].(float64)
		if int(e["layer"].(float64)) != li || !(before > 0) || !(after > 0) || e["kept"].(bool) != (after < before) {
			t.Errorf("layer %d log entry %v", li, e)
		}
	}
	if s, ok := ma.Quant.Recipe["reconstruct"].(map[string]any); !ok || s["steps"].(float64) != 3 || s["target"] != "stream" {
		t.Errorf("recipe reconstruct settings %v", ma.Quant.Recipe["reconstruct"])
	}

	if in, err := forge.Inspect(a); err != nil || !strings.HasPrefix(in.Reconstruction, "kept on ") || !strings.Contains(in.Reconstruction, " of 8 layers") {
		t.Errorf("inspect: reconstruction %q, %v", in.Reconstruction, err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cfg := base
	cfg.Out = c
	cfg.Log = func(line string) {
		if strings.HasPrefix(line, "reconstruct layer 2 ") {
			cancel()
		}
	}
	if err := forge.Quantize(ctx, cfg); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: %v", err)
	}
	var redone []string
	if err := run(c, func(cfg *forge.QuantizeConfig) {
		cfg.Resume = true
		cfg.Log = func(line string) {
			if strings.HasPrefix(line, "reconstruct layer") {
				redone = append(redone, line[:len("reconstruct layer 3")])
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	if len(redone) != 5 || redone[0] != "reconstruct layer 3" {
		t.Errorf("the resumed run reconstructed %q, want layers 3–7", redone)
	}
	if untimed(manifestBytes(t, c)) != untimed(manifestBytes(t, a)) {
		t.Error("the resumed run wrote a different bundle")
	}
	if _, err := os.Stat(c + ".work"); !os.IsNotExist(err) {
		t.Errorf("work directory left after success: %v", err)
	}
}

// untimed removes the seconds of the reconstruction log (and the
// manifest's content hash, which covers them) from a manifest:
// everything else, the file hashes of every tensor included, must be equal
// between runs.
func untimed(m string) string {
	m = regexp.MustCompile(`"s":\s*[0-9.eE+-]+`).ReplaceAllString(m, "")
	return regexp.MustCompile(`"content_sha256":\s*"[0-9a-f]*"`).ReplaceAllString(m, "")
}

// TestReconstructAndPresetErrors: settings that cannot run are refused
// before any work, naming the problem.
func TestReconstructAndPresetErrors(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		cfg  forge.QuantizeConfig
		want string
	}{
		{forge.QuantizeConfig{Format: "LUT4 + pcs", Reconstruct: true}, "give calibration data"},
		{tinyCalib(forge.QuantizeConfig{Format: "LUT4 + pcs", Method: "gptq", Reconstruct: true, ReconLRLUT: -1}), "learning rates"},
		{tinyCalib(forge.QuantizeConfig{Format: "LUT4 + pcs", Method: "gptq", Reconstruct: true, ReconTarget: "both"}), `target "both"`},
		{forge.QuantizeConfig{Preset: "4bit"}, "give calibration data"},
		{tinyCalib(forge.QuantizeConfig{Preset: "5bit"}), `unknown preset "5bit"`},
		{tinyCalib(forge.QuantizeConfig{Preset: "4bit", Format: "LUT4 + pcs"}), "give no format or plan"},
		{tinyCalib(forge.QuantizeConfig{Preset: "4bit", Budget: "4bpw", Method: "gptq"}), "held-out trace"},
		{forge.QuantizeConfig{Preset: "4bit", Budget: "4bpw"}, "give calibration data"},
	}
	for i, c := range cases {
		if c.cfg.Model == "" {
			c.cfg.Model = filepath.Join("models", "forge-tiny")
		}
		c.cfg.Out = filepath.Join(dir, "out")
		err := forge.Quantize(context.Background(), c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("case %d: %v, want an error saying %q", i, err, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "out.work")); !os.IsNotExist(err) {
		t.Errorf("a refused run left a work directory: %v", err)
	}
	for _, p := range forge.Presets { // formats the ANE runs (no 5- or 7-bit indices)
		for _, f := range []lut.Format{p.Blocks, p.Head} {
			if err := f.Check(); err != nil {
				t.Errorf("preset %s: %v", p.Name, err)
			}
		}
	}
}
