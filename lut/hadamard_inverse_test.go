package lut

import (
	"math"
	"testing"

	"forge/tensor"
)

// TestDequantRotateTranspose (named for forge dequantize, its user)
// compares RotateTranspose with the explicit x·Mᵀ, for block widths 1
// (odd width), 2, 4, 8 (odd log₂n: a final radix-2 stage), 64 and 1024
// (several blocks), in place and out of place, on enough rows to take the
// parallel path once. Tolerance: both compute an orthogonal transform of
// x, the fast one in float32 with at most (log₂n + 2)·2⁻²⁴·‖x‖ rounding
// error per row (the doc's bound), taken ×2.
func TestDequantRotateTranspose(t *testing.T) {
	cases := []struct {
		name        string
		rows, width int
		seed        uint64
	}{
		{"odd width", 3, 7, 1},
		{"block 2", 3, 6, 2},
		{"block 4", 2, 12, 3},
		{"block 8", 2, 24, 4},
		{"block 64", 4, 192, 5},
		{"block 1024", 2, 2048, 6},
		{"parallel", 80, 1024, 7},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := NewHadamard(c.width, c.seed)
			x := hdNormal(c.rows, c.width, c.seed+100)
			want := hadamardRefT(c.width, c.seed, x, true)
			got := tensor.New(c.rows, c.width)
			h.RotateTranspose(got, x)
			inPlace := tensor.New(c.rows, c.width)
			copy(inPlace.Data, x.Data)
			h.UnrotateWeights(inPlace)
			n := float64(h.Block())
			for r := range c.rows {
				var norm float64
				for _, v := range x.Row(r) {
					norm += float64(v) * float64(v)
				}
				tol := 2 * (math.Log2(n) + 2) * hdUnit * math.Sqrt(norm)
				for j := range c.width {
					if d := math.Abs(float64(got.Row(r)[j]) - want[r][j]); d > tol {
						t.Fatalf("row %d col %d: got %v, want %v (|diff| %.3g > %.3g)", r, j, got.Row(r)[j], want[r][j], d, tol)
					}
					if inPlace.Row(r)[j] != got.Row(r)[j] {
						t.Fatalf("row %d col %d: in place %v, out of place %v", r, j, inPlace.Row(r)[j], got.Row(r)[j])
					}
				}
			}
		})
	}
}

// TestDequantRotateRoundTrip: RotateTranspose undoes Rotate (M·Mᵀ = I) up to
// two transforms' float32 rounding, 2·(log₂n + 2)·2⁻²⁴·‖x‖ per row.
func TestDequantRotateRoundTrip(t *testing.T) {
	const rows, width = 5, 3072 // three 1024-wide blocks
	h := NewHadamard(width, 11)
	x := hdNormal(rows, width, 12)
	y := tensor.New(rows, width)
	h.Rotate(y, x)
	h.RotateTranspose(y, y)
	for r := range rows {
		var norm float64
		for _, v := range x.Row(r) {
			norm += float64(v) * float64(v)
		}
		tol := 2 * (math.Log2(float64(h.Block())) + 2) * hdUnit * math.Sqrt(norm)
		for j := range width {
			if d := math.Abs(float64(y.Row(r)[j] - x.Row(r)[j])); d > tol {
				t.Fatalf("row %d col %d: %v after the round trip, want %v (|diff| %.3g > %.3g)", r, j, y.Row(r)[j], x.Row(r)[j], d, tol)
			}
		}
	}
}
