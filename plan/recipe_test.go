package plan

import (
	"errors"
	"strings"
	"testing"

	"forge/lut"
	"forge/model"
	"forge/quant"
)

func lut4(t *testing.T) *lut.Format {
	f, err := lut.ParseFormat("LUT4 per-tensor + pcs")
	if err != nil {
		t.Fatal(err)
	}
	return &f
}

// TestRecipeCheck: every conflicting or incomplete combination is an
// error wrapping ErrRecipe, saying what is wrong.
func TestRecipeCheck(t *testing.T) {
	f := lut4(t)
	cases := []struct {
		r          Recipe
		calibrated bool
		want       string // "" = accepted
	}{
		{Recipe{Format: f}, false, ""},
		{Recipe{Format: f, Method: quant.MethodGPTQ}, true, ""},
		{Recipe{Format: f, Method: quant.MethodGPTQ}, false, "needs calibration data"},
		{Recipe{Format: f, AW: true}, false, "give calibration data"},
		{Recipe{Format: f, LowRank: LowRank{Rank: 4, Weighted: true}}, false, "needs calibration data"},
		{Recipe{Format: f, LowRank: LowRank{Weighted: true}}, true, "needs a low-rank rank"},
		{Recipe{Format: f, LowRank: LowRank{Parts: []model.Part{model.PartGDN}}}, false, "without a low-rank rank"},
		{Recipe{Format: f, LowRank: LowRank{Rank: -1}}, false, "negative"},
		{Recipe{Format: f}, true, "none is asked for"},
		{Recipe{}, false, "give a format, or a plan"},
		{Recipe{Format: f, LowRank: LowRank{Rank: 4, Parts: []model.Part{model.PartEmbed}}}, false, "unknown part"},
	}
	for i, c := range cases {
		err := c.r.Check(c.calibrated)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !errors.Is(err, ErrRecipe) || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("case %d: %v, want %q", i, err, c.want)
		}
	}
}

// TestRecipeSpec: a matrix's spec combines the default format, the plan,
// the low-rank parts, the Hadamard rule and the seeds.
func TestRecipeSpec(t *testing.T) {
	p, err := Parse([]byte(`{"parts": {"kv": "INT8 per-channel"}, "matrices": {"3.o": {"format": "LUT4 per-tensor + pcs", "rank": 8}}}`))
	if err != nil {
		t.Fatal(err)
	}
	r := Recipe{Format: lut4(t), Plan: p, Hadamard: true, Seed: 10, LowRank: LowRank{Rank: 4}}
	c := model.Config{Vocab: 64, Hidden: 32, Intermediate: 64, Heads: 2, KVHeads: 1, HeadDim: 16,
		KeyHeads: 1, ValueHeads: 2, KeyDim: 8, ValueDim: 8, ConvKernel: 4,
		Layers: []model.LayerKind{model.DeltaNet, model.DeltaNet, model.DeltaNet, model.Attention}}
	specs := map[string]specResult{}
	for i, ts := range model.Tensors(&c) {
		s, ok, err := r.Spec(ts, i)
		specs[ts.Name] = specResult{s, ok, err, i}
	}
	check := func(name string, fn func(s quant.Spec, i int) bool) {
		t.Helper()
		got := specs[name]
		if got.err != nil || !got.ok || !fn(got.s, got.i) {
			t.Errorf("%s: %+v ok %v err %v", name, got.s, got.ok, got.err)
		}
	}
	check("layers.0.mlp.down_proj.weight", func(s quant.Spec, i int) bool {
		return s.Rotation != nil && *s.Rotation == 2000 && s.Rank == 0 && s.Seed == 10+uint64(i) && s.LowRankSeed == 10
	})
	check("layers.2.mlp.gate_proj.weight", func(s quant.Spec, _ int) bool { return s.Rotation != nil && *s.Rotation == 1002 })
	check("layers.1.linear_attn.in_proj_qkv.weight", func(s quant.Spec, _ int) bool { return s.Rank == 4 && s.Rotation == nil })
	check("layers.3.self_attn.k_proj.weight", func(s quant.Spec, _ int) bool { return s.Format.Kind == lut.Int8 && s.Rank == 4 })
	if got := specs["layers.3.self_attn.o_proj.weight"]; got.err == nil || !strings.Contains(got.err.Error(), "plan rank 8 conflicts") {
		t.Errorf("conflicting ranks: %v", got.err)
	}
	for _, name := range []string{"embed_tokens.weight", "layers.0.linear_attn.in_proj_a.weight", "norm.weight"} {
		if got := specs[name]; got.ok || got.err != nil {
			t.Errorf("%s was assigned a spec: %+v %v", name, got.s, got.err)
		}
	}
}

// specResult is one Spec call's result, for TestRecipeSpec.
type specResult struct {
	s   quant.Spec
	ok  bool
	err error
	i   int
}
