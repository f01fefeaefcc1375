package checkpoint_test

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"forge/checkpoint"
	"forge/model"
	"forge/safetensors"
)

// TestSynth: a synthesized checkpoint opens through the sharded HF path, is
// byte-identical for the same seed, differs for another seed, and gives
// finite logits of moderate size (the init keeps activations O(1)).
func TestSynth(t *testing.T) {
	cfg := fixtureConfig(t)
	root := t.TempDir()
	dirs := []string{filepath.Join(root, "a"), filepath.Join(root, "b"), filepath.Join(root, "c")}
	seeds := []uint64{7, 7, 8}
	for i, d := range dirs {
		if err := checkpoint.Synth(context.Background(), cfg, d, checkpoint.SynthOptions{Seed: seeds[i], ShardSize: 3 << 20}); err != nil {
			t.Fatal(err)
		}
	}
	shards, _ := filepath.Glob(filepath.Join(dirs[0], "model-*.safetensors"))
	if len(shards) < 2 {
		t.Fatalf("%d shards, want several at a 3 MiB shard size", len(shards))
	}
	for _, s := range shards {
		a, _ := os.ReadFile(s)
		b, _ := os.ReadFile(filepath.Join(dirs[1], filepath.Base(s)))
		c, _ := os.ReadFile(filepath.Join(dirs[2], filepath.Base(s)))
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between two runs with seed 7", filepath.Base(s))
		}
		if bytes.Equal(a, c) {
			t.Errorf("%s is the same for seeds 7 and 8", filepath.Base(s))
		}
	}
	lg := logitsOf(t, dirs[0])
	var mx float64
	for _, v := range lg {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			t.Fatal("non-finite logit")
		}
		mx = max(mx, math.Abs(float64(v)))
	}
	if mx > 50 || mx < 0.1 {
		t.Errorf("max |logit| = %v, want O(1)", mx)
	}
	if err := checkpoint.Synth(context.Background(), cfg, dirs[0], checkpoint.SynthOptions{}); err == nil {
		t.Error("Synth over an existing directory succeeded")
	}
	ck, err := checkpoint.Open(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	c, _ := ck.Config()
	var n int64
	for _, ti := range ck.Tensors() {
		n += ti.Spec.Elements()
	}
	if n != model.ParamCount(&c) {
		t.Errorf("tensors hold %d parameters, ParamCount says %d", n, model.ParamCount(&c))
	}
}

// TestSynthCancel: a cancelled synth leaves no directory behind.
func TestSynthCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dir := filepath.Join(t.TempDir(), "x")
	if err := checkpoint.Synth(ctx, fixtureConfig(t), dir, checkpoint.SynthOptions{}); err == nil {
		t.Fatal("cancelled synth succeeded")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("output exists after cancel: %v", err)
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(dir), "*"))
	if len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestSynthFlatConfig: a text-only (flat) config is written with the
// "model." names of that class (Qwen3_5ForCausalLM), not the multimodal
// "model.language_model." ones.
func TestSynthFlatConfig(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "flat")
	if err := checkpoint.Synth(context.Background(), flatConfig(t, nil), dir, checkpoint.SynthOptions{Seed: 3}); err != nil {
		t.Fatal(err)
	}
	shards, _ := filepath.Glob(filepath.Join(dir, "model-*.safetensors"))
	if len(shards) != 1 {
		t.Fatalf("shards %v, want one model-00001-of-00001.safetensors", shards)
	}
	f, err := safetensors.Open(shards[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, n := range f.Names() {
		if n != "lm_head.weight" && (!strings.HasPrefix(n, "model.") || strings.HasPrefix(n, "model.language_model.")) {
			t.Errorf("tensor %q: want the text-only prefix model.", n)
		}
	}
	ck, err := checkpoint.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ck.Close()
}
