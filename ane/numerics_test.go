package ane

import (
	"math"
	"testing"

	"forge/model"
	"forge/source"
	"forge/tensor"
)

const tinyModel = "../models/forge-tiny"

// exact is a model.Numerics that stores nothing and computes the ops
// exactly (fp32), with the given scaling: the numerics path of the
// forward must then compute the model's function.
type exact struct{ sc model.Scaling }

func (exact) Store(model.Site, int, []float32) {}
func (exact) Silu(x []float32) {
	for i, v := range x {
		x[i] = siluExact(v)
	}
}
func (exact) Softplus(x float32) float32 {
	return float32(math.Max(float64(x), 0) + math.Log1p(math.Exp(-math.Abs(float64(x)))))
}
func (e exact) Scaling() model.Scaling { return e.sc }

// tinyTokens returns n token ids spread over forge-tiny's vocabulary.
func tinyTokens(n int) []int {
	t := make([]int, n)
	for i := range t {
		t[i] = (i*389 + 17) % 4000
	}
	return t
}

// TestNumericsPathIsTheForward: the forward's Numerics path (DeltaNet
// recurrent row by row, attention row by row, the ops through the
// Numerics) computes the same function as the fp32 forward when nothing
// is rounded — with and without the rescalings, which are exact in real
// arithmetic (the gated norm's ε scaled by (16·64)² cancels q×16, v×64;
// ×64 before the down-projection is undone after it; blocked attention
// with a global max is the same softmax). The tolerance, 1e-5 of the
// logits' spread (ten times what forge-tiny shows), covers fp32 reassociation: the chunked delta rule
// against the recurrent one, and the rescaled sums.
func TestNumericsPathIsTheForward(t *testing.T) {
	m, src, err := source.Load(tinyModel)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	toks := tinyTokens(150)
	want := m.Forward(m.NewState(), toks)
	ref := tensor.New(want.Rows, want.Cols)
	copy(ref.Data, want.Data)
	var spread float64
	for _, v := range ref.Data {
		spread = math.Max(spread, math.Abs(float64(v)))
	}
	for _, sc := range []model.Scaling{{}, {GDNQuery: 16, GDNValue: 64}, {DownInput: 64}, {AttBlock: 32}} {
		s := m.NewState()
		s.SetNumerics(exact{sc})
		got := m.Forward(s, toks)
		var worst float64
		for i, v := range got.Data {
			worst = math.Max(worst, math.Abs(float64(v)-float64(ref.Data[i])))
		}
		if worst > 1e-5*spread || math.IsNaN(worst) {
			t.Errorf("scaling %+v: logits differ from the fp32 forward by %.3g (spread %.3g)", sc, worst, spread)
		}
		t.Logf("scaling %+v: max |Δlogit| %.3g of spread %.3g", sc, worst, spread)
	}
}
