package ane

import "math"

// The device's forms of the ops whose fp16 behaviour the reference
// measured (reference-pipeline §3.2, docs/ane.md §1.2). Each rounds every
// intermediate it would hold with Round.

// siluGrid is the spacing of the native SiLU model's table.
const siluGrid = 1.0 / 8

// siluNative models the Neural Engine's built-in SiLU, whose algorithm
// Apple does not publish; the reference measured about 1e-3 absolute
// error near 0. forge models it as linear interpolation between exact
// (fp16-rounded) values of silu on a grid of step h = 1/8 over [−16, 16]
// (silu(x) = x above, 0 below): linear interpolation of a function with
// curvature silu″ errs by up to h²·|silu″|/8, and silu″(0) = 1/2, so the
// model's error near 0 is up to h²/16 = 0.98e-3 — the magnitude measured —
// and falls off where silu is straight. The result is rounded.
func siluNative(x float32) float32 {
	switch {
	case x != x:
		return x
	case x >= 16:
		return Round(x)
	case x <= -16:
		return 0
	}
	u := float64(x) / siluGrid
	k := math.Floor(u)
	f := u - k
	a, b := Round(siluExact(float32(k*siluGrid))), Round(siluExact(float32((k+1)*siluGrid)))
	return Round(float32(float64(a) + f*float64(b-a)))
}

// siluTanh is the reference's fix: silu(x) = 0.5·x·(1 + tanh(x/2)), each
// op's result rounded (tanh taken as accurate before its rounding). It
// stays accurate near 0, where x·σ(x) is ≈ x/2.
func siluTanh(x float32) float32 {
	h := Round(x / 2)
	t := Round(float32(math.Tanh(float64(h))))
	return Round(0.5 * Round(x*Round(1+t)))
}

// siluExact is x·σ(x) in float64, rounded to float32 (the model's fp32 op).
func siluExact(x float32) float32 {
	return float32(float64(x) / (1 + math.Exp(-float64(x))))
}

// softplusNaive is ln(1 + eˣ) as written, each op rounded: eˣ overflows
// fp16 for x > ln 65504 ≈ 11.09 (then the result is +Inf), and 1 + eˣ
// rounds to 1 for eˣ below half fp16's spacing at 1 (x ≲ −7.6), giving 0.
func softplusNaive(x float32) float32 {
	x = Round(x) // a + dt_bias, as the device holds it
	e := Round(float32(math.Exp(float64(x))))
	return Round(float32(math.Log(float64(Round(1 + e)))))
}

// softplusStable is the reference's fix relu(x) + ln(1 + e^−|x|), each
// op rounded: e^−|x| ≤ 1 never overflows. (It loses small values as the
// naive form does: ln(1 + e^−|x|) rounds to 0 for x ≲ −7.6.)
func softplusStable(x float32) float32 {
	x = Round(x)
	e := Round(float32(math.Exp(-math.Abs(float64(x)))))
	l := Round(float32(math.Log(float64(Round(1 + e)))))
	return Round(max(x, 0) + l)
}
