package model_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"forge/model"
)

// TestKVInt8Cache: an int8 cache holds the fp32 cache's keys to fp16
// rounding (relative 2⁻¹¹) and its values to half a quantization step
// (scale/2, scale = max|v|/127 per token and head); the logits move, but
// little (max |Δ| < 0.25 over 300 positions of forge-tiny, whose logits
// span ~±20); Mark/Rewind reproduce int8 runs bit for bit; a decode step
// allocates nothing.
func TestKVInt8Cache(t *testing.T) {
	m := loadModel(t, repoPath("models", "forge-tiny"))
	c := m.Config()
	toks := randTokens(rand.New(rand.NewPCG(11, 12)), 300, c.Vocab)
	ref, q := m.NewState(), m.NewStateKV(model.KVInt8)
	a := copyOf(m.Forward(ref, toks))
	b := copyOf(m.Forward(q, toks))
	if d := maxAbsDiff(a, b); d == 0 || d > 0.25 {
		t.Errorf("logits int8 vs f32 cache: max |Δ| = %.3g, want in (0, 0.25]", d)
	}
	li := 3 // forge-tiny's first attention layer
	kf, kq := ref.KVCacheHeads(li, true), q.KVCacheHeads(li, true)
	vf, vq := ref.KVCacheHeads(li, false), q.KVCacheHeads(li, false)
	D := c.HeadDim
	for i := range kf {
		// The int8 cache was filled from the int8 run's own keys, which
		// equal the fp32 run's: layers before the first attention layer
		// do not read the cache.
		if d := math.Abs(float64(kf[i] - kq[i])); d > math.Abs(float64(kf[i]))/2048+1e-7 {
			t.Fatalf("key %d: %g vs %g", i, kf[i], kq[i])
		}
	}
	for r := 0; r < len(vf)/D; r++ {
		var amax float64
		for _, x := range vf[r*D : (r+1)*D] {
			amax = max(amax, math.Abs(float64(x)))
		}
		for i := r * D; i < (r+1)*D; i++ {
			if d := math.Abs(float64(vf[i] - vq[i])); d > amax/127/2*(1+1e-5) {
				t.Fatalf("value %d: %g vs %g (step %g)", i, vf[i], vq[i], amax/127)
			}
		}
	}
	s := m.NewStateKV(model.KVInt8)
	m.Forward(s, toks[:100])
	mk := s.Mark()
	x := copyOf(m.Forward(s, toks[100:200]))
	s.Rewind(mk)
	if d := maxAbsDiff(x, copyOf(m.Forward(s, toks[100:200]))); d != 0 {
		t.Errorf("int8 cache after Rewind: max |Δ| = %g, want 0", d)
	}
	s.Reserve(64)
	tok := []int{7}
	if n := testing.AllocsPerRun(20, func() { m.Forward(s, tok) }); n != 0 {
		t.Errorf("int8 decode step: %v allocations", n)
	}
	for in, want := range map[string]model.KV{"": model.KVFloat32, "f32": model.KVFloat32, "int8": model.KVInt8} {
		if got, err := model.ParseKV(in); err != nil || got != want {
			t.Errorf("ParseKV(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := model.ParseKV("int4"); err == nil {
		t.Error("ParseKV accepted int4")
	}
}
