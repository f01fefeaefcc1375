package model_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"forge/model"
)

func randTokens(r *rand.Rand, n, vocab int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = r.IntN(vocab)
	}
	return out
}

// TestPrefillSplit: prefill(a) then prefill(b) equals prefill(a‖b), for
// splits inside and across 64-token chunks. The chunk boundaries move, so the
// two round differently; docs/model.md (§8.2, §11.11) puts that at the 1e-5 level
// on O(5) logits, hence 1e-3 as everywhere else.
func TestPrefillSplit(t *testing.T) {
	m := loadModel(t, repoPath("models", "forge-tiny"))
	r := rand.New(rand.NewPCG(1, 2))
	toks := randTokens(r, 150, m.Config().Vocab)
	whole := copyOf(m.Forward(m.NewState(), toks))
	for _, cut := range []int{1, 3, 63, 64, 65, 100, 149} {
		s := m.NewState()
		a := copyOf(m.Forward(s, toks[:cut]))
		b := copyOf(m.Forward(s, toks[cut:]))
		if d := maxAbsDiff(append(a, b...), whole); d > logitTol {
			t.Errorf("cut %d: max |Δ| = %.3g", cut, d)
		}
		if s.Pos() != len(toks) {
			t.Errorf("cut %d: pos %d", cut, s.Pos())
		}
	}
}

// TestMarkRewind: after Rewind, re-running the same tokens reproduces the
// logits bit for bit, in prefill and decode, and marks taken after the
// rewind point are released.
func TestMarkRewind(t *testing.T) {
	m := loadModel(t, repoPath("models", "forge-tiny"))
	r := rand.New(rand.NewPCG(3, 4))
	V := m.Config().Vocab
	prompt, cont := randTokens(r, 40, V), randTokens(r, 30, V)
	s := m.NewState()
	m.Forward(s, prompt)
	mk := s.Mark()
	first := copyOf(m.Forward(s, cont))
	firstDec := decodeLogits(m, s, cont[:5])
	later := s.Mark()

	// Something else entirely, then back.
	m.Forward(s, randTokens(r, 70, V))
	s.Rewind(mk)
	if s.Pos() != len(prompt) {
		t.Fatalf("pos after rewind %d, want %d", s.Pos(), len(prompt))
	}
	again := copyOf(m.Forward(s, cont))
	againDec := decodeLogits(m, s, cont[:5])
	if !bitsEqual(first, again) || !bitsEqual(firstDec, againDec) {
		t.Fatal("logits after Rewind differ from the first run")
	}
	// Rewind twice to the same mark, from decode.
	s.Rewind(mk)
	dec := decodeLogits(m, s, cont)
	s.Rewind(mk)
	if !bitsEqual(dec, decodeLogits(m, s, cont)) {
		t.Fatal("decode after second Rewind differs")
	}
	defer func() {
		if recover() == nil {
			t.Error("Rewind to a released mark did not panic")
		}
	}()
	s.Rewind(later)
}

func bitsEqual(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

// TestDecodeAllocs: a decode step allocates nothing once the KV cache has
// room (State.Reserve) and the scratch has been sized by a first step.
func TestDecodeAllocs(t *testing.T) {
	m := loadModel(t, repoPath("models", "forge-tiny"))
	s := m.NewState()
	s.Reserve(200)
	m.Forward(s, []int{1, 2, 3})
	m.Forward(s, []int{4})
	tok := []int{5}
	if n := testing.AllocsPerRun(50, func() { m.Forward(s, tok) }); n != 0 {
		t.Errorf("decode step allocates %v times", n)
	}
}

func TestEmptyAndBadTokens(t *testing.T) {
	m := loadModel(t, repoPath("models", "forge-tiny"))
	s := m.NewState()
	if lg := m.Forward(s, nil); lg.Rows != 0 || s.Pos() != 0 {
		t.Errorf("empty call: %d rows, pos %d", lg.Rows, s.Pos())
	}
	if err := m.CheckTokens([]int{0, m.Config().Vocab}); err == nil {
		t.Error("CheckTokens accepted an id = vocab")
	}
	if err := m.CheckTokens([]int{-1}); err == nil {
		t.Error("CheckTokens accepted -1")
	}
}

// TestParamCount27B checks the tensor inventory against docs/model.md §12
// parameter formula for Qwen3.5-27B: 26,895,998,464.
func TestParamCount27B(t *testing.T) {
	c := model.Config{
		Vocab: 248320, Hidden: 5120, Intermediate: 17408, Heads: 24, KVHeads: 4, HeadDim: 256,
		KeyHeads: 16, ValueHeads: 48, KeyDim: 128, ValueDim: 128, ConvKernel: 4,
	}
	for i := range 64 {
		if i%4 == 3 {
			c.Layers = append(c.Layers, model.Attention)
		} else {
			c.Layers = append(c.Layers, model.DeltaNet)
		}
	}
	if got := model.ParamCount(&c); got != 26_895_998_464 {
		t.Errorf("ParamCount = %d, want 26,895,998,464", got)
	}
}

func TestConfigValidate(t *testing.T) {
	good := model.Config{
		Vocab: 10, Hidden: 8, Intermediate: 8, Layers: []model.LayerKind{model.DeltaNet}, Heads: 2, KVHeads: 1,
		HeadDim: 8, Eps: 1e-6, KeyHeads: 2, ValueHeads: 4, KeyDim: 4, ValueDim: 4, ConvKernel: 4,
		RopeTheta: 1e4, RotaryFactor: 0.25,
	}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		edit  func(*model.Config)
		field string
	}{
		{"value heads not a multiple", func(c *model.Config) { c.ValueHeads = 3 }, "linear_num_value_heads"},
		{"q heads not a multiple", func(c *model.Config) { c.Heads, c.KVHeads = 3, 2 }, "num_attention_heads"},
		{"zero hidden", func(c *model.Config) { c.Hidden = 0 }, "hidden_size"},
		{"odd rotary dim", func(c *model.Config) { c.HeadDim = 12 }, "rotary"},
		{"no layers", func(c *model.Config) { c.Layers = nil }, "num_hidden_layers"},
		{"bad eps", func(c *model.Config) { c.Eps = 0 }, "rms_norm_eps"},
		{"absurd layer count", func(c *model.Config) { c.Layers = make([]model.LayerKind, model.MaxLayers+1) }, "num_hidden_layers"},
		{"absurd width", func(c *model.Config) { c.Intermediate = 1 << 40 }, "intermediate_size"},
		{"absurd vocabulary", func(c *model.Config) { c.Vocab = 1 << 62 }, "vocab_size"},
		{"matrix too large", func(c *model.Config) { c.Vocab, c.Hidden = 1<<24, 1<<20 }, "vocab_size × hidden_size"},
		{"negative context", func(c *model.Config) { c.MaxContext = -5 }, "max_position_embeddings"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := good
			tc.edit(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.field) {
				t.Errorf("Validate() = %v, want an error naming %s", err, tc.field)
			}
		})
	}
}
