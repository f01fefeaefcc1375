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
