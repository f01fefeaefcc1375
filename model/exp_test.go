package model

import (
	"math"
	"testing"
)

// TestExp32 compares exp32 with math.Exp (float64, correctly rounded to
// within 1 ulp of float64) over every float32 in [−104, 89] at a stride, and
// special values. The bound is 2 float32 ulps of the true value: the
// polynomial's truncation error (r⁸/8! < 3e−9 relative) plus a few
// roundings.
func TestExp32(t *testing.T) {
	lo, hi := math.Float32bits(-104), math.Float32bits(89)
	check := func(x float32) {
		want := math.Exp(float64(x))
		got := float64(exp32(x))
		if want > math.MaxFloat32 {
			if !math.IsInf(got, 1) {
				t.Fatalf("exp32(%v) = %v, want +Inf", x, got)
			}
			return
		}
		ulp := float64(math.Nextafter32(float32(want), float32(math.Inf(1))) - float32(want))
		if want < 1.2e-38 {
			ulp = 1.4e-45 // subnormal spacing
		}
		if math.Abs(got-want) > 2*ulp {
			t.Fatalf("exp32(%v) = %v, want %v (%.2f ulp)", x, got, want, math.Abs(got-want)/ulp)
		}
	}
	for b := uint32(0); b < lo; b += 97 { // positive x in [0, 89]
		check(math.Float32frombits(b))
		if b > hi {
			break
		}
	}
	for b := uint32(0x80000000); b <= lo; b += 97 { // negative x down to −104
		check(math.Float32frombits(b))
	}
	for _, x := range []float32{0, -0, 1, -1, 88.72, 88.73, -87.3, -103.9, -104, -200, 200} {
		check(x)
	}
	if v := exp32(float32(math.NaN())); v == v {
		t.Error("exp32(NaN) is not NaN")
	}
}

// TestSigmoidExtremes: σ saturates without inf/inf (docs/model.md §11.6), and silu
// of a huge negative input is −0, not NaN.
func TestSigmoidExtremes(t *testing.T) {
	for _, c := range []struct{ x, want float32 }{{0, 0.5}, {100, 1}, {-1e30, 0}, {1e30, 1}} {
		if got := sigmoid(c.x); got != c.want {
			t.Errorf("σ(%v) = %v, want %v", c.x, got, c.want)
		}
	}
	if got := sigmoid(-100); !(got > 0 && math.Abs(float64(got)-math.Exp(-100)) < 1e-45) {
		t.Errorf("σ(−100) = %v, want e^−100 ≈ 3.7e−44", got)
	}
	if got := silu(-1e30); got != 0 {
		t.Errorf("silu(−1e30) = %v, want 0", got)
	}
}

// TestDecayFlushes: decay and decay32 never return a subnormal float32 —
// they are eˣ (to float32 rounding, or exp32's 2 ulp) down to the smallest
// normal, and 0 below it.
func TestDecayFlushes(t *testing.T) {
	const minNormal = 0x1p-126
	for x := 0.0; x > -120; x -= 0.01 {
		for name, got := range map[string]float32{"decay": decay(x), "decay32": decay32(float32(x))} {
			want := math.Exp(x)
			if name == "decay32" {
				want = math.Exp(float64(float32(x)))
			}
			switch {
			case got != 0 && got < minNormal:
				t.Fatalf("%s(%g) = %g is subnormal", name, x, got)
			case want >= 1.0001*minNormal && math.Abs(float64(got)-want) > 3e-7*want:
				t.Fatalf("%s(%g) = %g, want %g", name, x, got, want)
			case want < minNormal && got != 0:
				t.Fatalf("%s(%g) = %g, want 0", name, x, got)
			}
		}
	}
}
