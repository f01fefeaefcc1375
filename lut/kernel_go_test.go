package lut

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestDotBytes4Order checks that dotBytes4, four bytes a step, keeps the
// partial sums of the plain two-bytes-a-step loop (column 4k+p to s_p)
// bit for bit, for every length of a short row (odd lengths included).
func TestDotBytes4Order(t *testing.T) {
	g := rand.New(rand.NewPCG(3, 4))
	var tab [16]float32
	for i := range tab {
		tab[i] = float32(g.NormFloat64())
	}
	for n := range 40 {
		codes, x := make([]byte, n), make([]float32, 2*n)
		for i := range codes {
			codes[i] = byte(g.Uint32())
		}
		for i := range x {
			x[i] = float32(g.NormFloat64())
		}
		var s [4]float32
		for i, c := range codes {
			s[2*(i%2)] += tab[c&15] * x[2*i]
			s[2*(i%2)+1] += tab[c>>4] * x[2*i+1]
		}
		want := (s[0] + s[1]) + (s[2] + s[3])
		if got := dotBytes4(&tab, codes, x); math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("%d bytes: dotBytes4 = %g, want %g", n, got, want)
		}
	}
}
