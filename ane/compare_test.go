package ane

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"forge/model"
	"forge/source"
	"forge/tensor"
)

// compareTiny runs Compare on forge-tiny's checkpoint (its bf16 weights
// are the reference) over two rows of 96 tokens.
func compareTiny(t *testing.T, src model.Source, configs ...Options) *Report {
	t.Helper()
	ref, err := model.Load(src)
	if err != nil {
		t.Fatal(err)
	}
	toks := tinyTokens(192)
	rows := [][]int{toks[:96], toks[96:]}
	rep, err := Compare(context.Background(), ref, func(o Options) (*model.Model, *Emulator, error) { return Load(src, o) },
		rows, CompareOptions{Configs: configs})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func siteOf(l LayerReport, name string) SiteReport {
	for _, s := range l.Sites {
		if s.Site == name {
			return s
		}
	}
	return SiteReport{}
}

// TestCompareFixes measures forge-tiny's fp16 emulation with and without
// the reference's fixes and checks what the fixes are for: gdn-scale
// lifts the DeltaNet core output out of the subnormal range (forge-tiny:
// 26% of its values flushed without it), all three fixes together cut
// the worst layer's error several-fold (forge-tiny: 0.0085 → 0.0008;
// asserted: by 3×) and the end-to-end KL, the rejected down-input
// scaling multiplies the largest activation by its ×64, and chunk 1 run
// alone on the fp32 stream errs less than with chunk 0's error inherited
// (these rows: 0.0080 against 0.0120 unfixed, 0.00072 against 0.00093
// with the fixes).
func TestCompareFixes(t *testing.T) {
	_, src, err := source.Load(tinyModel)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	down := append(append([]Fix{}, Recommended...), FixMLPDownScale)
	rep := compareTiny(t, src, Options{}, Options{Fixes: Recommended}, Options{Fixes: down})
	none, fixed, scaled := rep.Configs[0], rep.Configs[1], rep.Configs[2]
	if none.Label != "none" || fixed.Label != "tanh-silu+stable-softplus+gdn-scale" {
		t.Fatalf("labels %q, %q", none.Label, fixed.Label)
	}
	worst := func(c ConfigReport) float64 {
		var w float64
		for _, l := range c.Layers {
			w = math.Max(w, float64(l.RelL2))
		}
		return w
	}
	if worst(none) < 3*worst(fixed) || worst(fixed) == 0 {
		t.Errorf("worst layer error %.3g without fixes, %.3g with: want at least 3× less", worst(none), worst(fixed))
	}
	if none.EndToEnd.MeanKL <= fixed.EndToEnd.MeanKL {
		t.Errorf("mean KL %.3g without fixes, %.3g with", none.EndToEnd.MeanKL, fixed.EndToEnd.MeanKL)
	}
	core0, core1 := siteOf(none.Layers[0], "gdn_core"), siteOf(fixed.Layers[0], "gdn_core")
	if core0.SubnormalFrac < 0.05 || core1.SubnormalFrac > core0.SubnormalFrac/5 {
		t.Errorf("layer 0 DeltaNet core output: %.2f%% subnormal without gdn-scale, %.2f%% with: want a fall of 5×",
			100*core0.SubnormalFrac, 100*core1.SubnormalFrac)
	}
	a1, a2 := siteOf(fixed.Layers[1], "act"), siteOf(scaled.Layers[1], "act")
	if a2.MaxAbs < 16*a1.MaxAbs {
		t.Errorf("largest activation %.3g with the down-input ×64, %.3g without", a2.MaxAbs, a1.MaxAbs)
	}
	for _, c := range rep.Configs {
		t.Logf("%s: chunk 1 alone %.4g, inherited %.4g", c.Label, c.Chunks[1].Isolated.RelL2, c.Chunks[1].Inherited.RelL2)
		if c.Chunks[1].Isolated.RelL2 >= c.Chunks[1].Inherited.RelL2 {
			t.Errorf("%s: chunk 1 alone has error %.4g, with the error of chunk 0 inherited %.4g: fed the fp32 stream it must err less",
				c.Label, c.Chunks[1].Isolated.RelL2, c.Chunks[1].Inherited.RelL2)
		}
		if len(c.Chunks) != 2 || c.Chunks[1].First != 4 || c.Chunks[1].Last != 7 {
			t.Errorf("%s: chunks %+v, want layers 0–3 and 4–7", c.Label, c.Chunks)
		}
		for _, l := range c.Layers {
			if l.Overflow != 0 || l.NonFinite != 0 {
				t.Errorf("%s layer %d: %d overflows, %d non-finite tokens on forge-tiny", c.Label, l.Layer, l.Overflow, l.NonFinite)
			}
		}
	}
}

// overflowSource scales one matrix's weights by 1e5 (wrapping its
// product), so that its outputs overflow fp16.
type overflowSource struct {
	model.Source
	name string
}

type scaled struct{ model.Linear }

func (s scaled) Mul(dst, x *tensor.Matrix) {
	s.Linear.Mul(dst, x)
	for i := range dst.Data {
		dst.Data[i] *= 1e5
	}
}

func (s overflowSource) Linear(name string) (model.Linear, error) {
	l, err := s.Source.Linear(name)
	if err != nil || name != s.name {
		return l, err
	}
	return scaled{l}, nil
}

// TestCompareOverflow: a layer whose product overflows fp16 is reported
// — overflows counted at its matmul, its tokens and every later layer's
// counted as non-finite, the end-to-end positions too — and the report
// still encodes as JSON (errors that are not finite become null).
func TestCompareOverflow(t *testing.T) {
	_, src, err := source.Load(tinyModel)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	rep := compareTiny(t, overflowSource{src, "layers.2.mlp.down_proj.weight"}, Options{Fixes: Recommended})
	c := rep.Configs[0]
	if c.Layers[1].NonFinite != 0 || c.Layers[1].Overflow != 0 {
		t.Errorf("layer 1 (before the overflow): %d non-finite tokens, %d overflows", c.Layers[1].NonFinite, c.Layers[1].Overflow)
	}
	if siteOf(c.Layers[2], "matmul").Overflow == 0 || c.Layers[2].NonFinite == 0 || c.Layers[7].NonFinite == 0 {
		t.Errorf("layer 2's overflow: matmul %+v, non-finite tokens %d (layer 7: %d)", siteOf(c.Layers[2], "matmul"), c.Layers[2].NonFinite, c.Layers[7].NonFinite)
	}
	if c.EndToEnd.NonFinite == 0 {
		t.Errorf("no non-finite positions end to end")
	}
	raw, err := json.Marshal(rep)
	if err != nil {
		t.Fatalf("the report does not encode: %v", err)
	}
	if !math.IsInf(float64(c.EndToEnd.MeanKL), 1) || !math.IsNaN(float64(c.Layers[7].RelL2)) {
		t.Errorf("mean KL %v and layer 7's error %v with non-finite positions: want +Inf and NaN", c.EndToEnd.MeanKL, c.Layers[7].RelL2)
	}
	if !strings.Contains(string(raw), `"rel_l2":null`) {
		t.Errorf("a non-finite error is not written as null")
	}
}
