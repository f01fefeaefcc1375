package ane

import (
	"math"
	"math/rand/v2"
	"testing"

	"forge/lut"
	"forge/model"
	"forge/quant"
	"forge/tensor"
)

// randomLUT returns a 128×256 LUT4 + pcs matrix fit by RTN to Gaussian
// weights, with an online Hadamard rotation and rank-8 fp16 factors.
func randomLUT(t *testing.T, scale float64) *lut.Matrix {
	t.Helper()
	const out, in, r = 128, 256, 8
	g := rand.New(rand.NewPCG(1, 2))
	w := tensor.New(out, in)
	for i := range w.Data {
		w.Data[i] = float32(g.NormFloat64() * scale)
	}
	f, err := lut.ParseFormat("LUT4 per-tensor + pcs")
	if err != nil {
		t.Fatal(err)
	}
	m, err := quant.RTN(w, f, quant.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := m.Parts()
	p.Rotation = lut.NewHadamard(in, 7)
	p.LowRankA, p.LowRankB = make([]uint16, out*r), make([]uint16, r*in)
	for i := range p.LowRankA {
		p.LowRankA[i] = tensor.F32ToF16(float32(g.NormFloat64() * 0.05 * scale))
	}
	for i := range p.LowRankB {
		p.LowRankB[i] = tensor.F32ToF16(float32(g.NormFloat64() * 0.05))
	}
	lm, err := lut.New(f, out, in, p)
	if err != nil {
		t.Fatal(err)
	}
	return lm
}

// TestLinearIsTheProductInFP16: the decorated product (rotation, LUT
// conv, scale after it, low-rank branch, each rounded to fp16) computes
// the matrix's product to fp16 precision: a handful of roundings of unit
// 2⁻¹¹ in sequence, so the relative error of the output vector stays
// under 4e-3, and every output is an fp16 value.
func TestLinearIsTheProductInFP16(t *testing.T) {
	m := randomLUT(t, 0.02)
	em := NewEmulator(1, Options{})
	d, err := decorate(m, 0, em)
	if err != nil {
		t.Fatal(err)
	}
	g := rand.New(rand.NewPCG(3, 4))
	x := tensor.New(5, 256)
	for i := range x.Data {
		x.Data[i] = Round(float32(g.NormFloat64()))
	}
	want, got := tensor.New(5, 128), tensor.New(5, 128)
	m.Mul(want, x)
	d.Mul(got, x)
	var num, den float64
	for i, v := range got.Data {
		if Round(v) != v {
			t.Fatalf("output %d = %g is not an fp16 value", i, v)
		}
		num += (float64(v) - float64(want.Data[i])) * (float64(v) - float64(want.Data[i]))
		den += float64(want.Data[i]) * float64(want.Data[i])
	}
	rel := math.Sqrt(num / den)
	if rel > 4e-3 || rel == 0 {
		t.Errorf("relative error of the fp16 product %.3g, want in (0, 4e-3]", rel)
	}
	if st := em.Stats(0, model.SiteMatmul); st.N == 0 || st.Overflow != 0 {
		t.Errorf("matmul counts %+v: want values counted and no overflow", st)
	}
}

// TestLinearScaleAfterConv: a LUT matrix's per-channel scale is applied
// after the conv on the device, so a conv output beyond fp16's range
// overflows even when the scaled product would fit: with weights of
// scale 1e-3 and inputs of 20000, the products fit (|y| of a few hundred) but
// y/scale does not.
func TestLinearScaleAfterConv(t *testing.T) {
	m := randomLUT(t, 1e-3)
	em := NewEmulator(1, Options{})
	d, err := decorate(m, 0, em)
	if err != nil {
		t.Fatal(err)
	}
	x := tensor.New(1, 256)
	for i := range x.Data {
		x.Data[i] = 20000
	}
	want, got := tensor.New(1, 128), tensor.New(1, 128)
	m.Mul(want, x)
	d.Mul(got, x)
	var big, inf int
	for i, v := range want.Data {
		s := tensor.F16ToF32(m.Parts().Scale[i])
		if math.Abs(float64(v)/float64(s)) > 70000 && math.Abs(float64(v)) < MaxFP16 {
			big++ // the product fits fp16, its conv output does not
			if math.IsInf(float64(got.Data[i]), 0) {
				inf++
			}
		}
	}
	if big == 0 {
		t.Fatalf("the test's inputs do not push any conv output past fp16's range")
	}
	if st := em.Stats(0, model.SiteMatmul); st.Overflow < int64(big) || inf < big {
		t.Errorf("%d conv outputs beyond fp16's range: %d overflows counted, %d infinite outputs", big, st.Overflow, inf)
	}
}
