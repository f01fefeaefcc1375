package ane

import (
	"math"
	"testing"
)

// TestRound checks binary16 rounding with the device's flush of
// subnormals, on values whose fp16 neighbours are known by hand.
func TestRound(t *testing.T) {
	inf := float32(math.Inf(1))
	cases := []struct {
		x, want float32
		o       outcome
	}{
		{0, 0, roundNormal},
		{1, 1, roundNormal},
		{1 + 1.0/2048, 1, roundNormal},                       // a tie between 1 and 1+2⁻¹⁰: to even (1)
		{1 + 3.0/2048, 1 + 2.0/1024, roundNormal},            // a tie between 1+2⁻¹⁰ and 1+2⁻⁹: to even
		{65504, 65504, roundNormal},                          // the largest finite value
		{65519, 65504, roundNormal},                          // rounds down to it
		{65520, inf, roundInf},                               // the tie above rounds to even: Inf
		{-1e6, -inf, roundInf},                               //
		{MinNormalFP16, MinNormalFP16, roundNormal},          // the smallest normal stays
		{MinNormalFP16 / 2, 0, roundFlushed},                 // a subnormal is flushed
		{-3e-8, float32(math.Copysign(0, -1)), roundFlushed}, // below the smallest subnormal too, sign kept
		{inf, inf, roundNaN},                                 // an infinity that arrived is not a new overflow
	}
	for _, c := range cases {
		got, o := round(c.x)
		if got != c.want || o != c.o || math.Signbit(float64(got)) != math.Signbit(float64(c.want)) {
			t.Errorf("round(%g) = %g (%d), want %g (%d)", c.x, got, o, c.want, c.o)
		}
	}
	if nan, o := round(float32(math.NaN())); nan == nan || o != roundNaN {
		t.Errorf("round(NaN) = %g (%d)", nan, o)
	}
	var st Stat
	x := []float32{1, MinNormalFP16 / 4, 7e4, float32(math.Inf(-1)), -3}
	roundInto(x, &st)
	if st.N != 5 || st.Flushed != 1 || st.Overflow != 1 || st.NaN != 1 || st.MaxAbs != 7e4 {
		t.Errorf("roundInto counts %+v, want N 5, Flushed 1, Overflow 1, NaN 1, MaxAbs 7e4", st)
	}
}

// TestSiLUForms: the native model errs by about 1e-3 near 0 (the
// reference's measurement; h²·silu″(0)/8 = 0.98e-3 for the grid h = 1/8),
// which is a large relative error for the small values a DeltaNet conv
// makes; the tanh form is within fp16 rounding there (a few units of
// 2⁻¹¹ relative, plus the flush of results below 2⁻¹⁴).
func TestSiLUForms(t *testing.T) {
	var worstNative, worstTanh float64
	for i := -4000; i <= 4000; i++ {
		x := float32(i) / 8000 // [−0.5, 0.5], where >99% of GDN conv outputs lie
		x = Round(x)
		want := float64(siluExact(x))
		worstNative = math.Max(worstNative, math.Abs(float64(siluNative(x))-want))
		e := math.Abs(float64(siluTanh(x)) - want)
		if e > 4*math.Abs(want)/2048+MinNormalFP16 {
			t.Fatalf("tanh-form silu(%g) = %g, exact %g", x, siluTanh(x), want)
		}
		worstTanh = math.Max(worstTanh, e)
	}
	if worstNative < 0.8e-3 || worstNative > 1.1e-3 {
		t.Errorf("native silu's worst error on [−0.5, 0.5] is %.3g, want about 1e-3", worstNative)
	}
	if worstTanh > worstNative/3 {
		t.Errorf("tanh-form silu's worst error %.3g is not well below the native one's %.3g", worstTanh, worstNative)
	}
	// Far from 0 both forms follow silu to fp16 precision.
	for _, x := range []float32{-12, -3, 2.5, 9, 20, 300} {
		want := float64(siluExact(x))
		for name, f := range map[string]func(float32) float32{"native": siluNative, "tanh": siluTanh} {
			if e := math.Abs(float64(f(x)) - want); e > 8*math.Abs(want)/2048+2e-3 {
				t.Errorf("%s silu(%g) = %g, exact %g", name, x, f(x), want)
			}
		}
	}
}

// TestSoftplusForms: the naive form overflows past ln 65504 ≈ 11.09 and
// the stable one does not; in between both agree with softplus to a few
// fp16 units plus the rounding of 1 + e^(·) to fp16 (2⁻¹¹ absolute).
func TestSoftplusForms(t *testing.T) {
	if v := softplusNaive(12); !math.IsInf(float64(v), 1) {
		t.Errorf("naive softplus(12) = %g, want +Inf (e¹² > 65504)", v)
	}
	if v := softplusStable(12); v != 12 {
		t.Errorf("stable softplus(12) = %g, want 12", v)
	}
	for x := float32(-6); x <= 11; x += 0.25 {
		want := math.Log1p(math.Exp(float64(x)))
		for name, f := range map[string]func(float32) float32{"naive": softplusNaive, "stable": softplusStable} {
			// A few fp16 units of the result, plus half fp16's spacing
			// at 1: both forms round 1 + e^(·) before the logarithm.
			if e := math.Abs(float64(f(x)) - want); e > 6*want/2048+1.0/2048 {
				t.Errorf("%s softplus(%g) = %g, exact %g (error %.2g)", name, x, f(x), want, e)
			}
		}
	}
}
