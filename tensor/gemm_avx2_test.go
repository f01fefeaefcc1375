//go:build goexperiment.simd && amd64

package tensor

import (
	"math"
	"math/rand/v2"
	"simd/archsimd"
	"testing"
)

// TestGemm4x16Twin: the assembly 4×16 tile (gemm4x16avx2) gives its Go
// twin's bits, storing and adding, for column counts that leave the
// two-column loop a remainder and for x and d rows wider than the tile.
func TestGemm4x16Twin(t *testing.T) {
	if !archsimd.X86.AVX2() || !archsimd.X86.FMA() {
		t.Skip("no AVX2 and FMA on this CPU")
	}
	g := rand.New(rand.NewPCG(7, 8))
	for _, kc := range []int{1, 2, 3, 7, 16, 33, 2048} {
		ldx, ldd := kc+5, 16+3
		x := make([]float32, 3*ldx+kc)
		p := make([]float32, 16*kc)
		for i := range x {
			x[i] = float32(g.NormFloat64())
		}
		for i := range p {
			p[i] = float32(g.NormFloat64())
		}
		for _, add := range []bool{false, true} {
			da, dg := make([]float32, 3*ldd+16), make([]float32, 3*ldd+16)
			for i := range da {
				da[i] = float32(g.NormFloat64())
				dg[i] = da[i]
			}
			gemm4x16x8(da, ldd, x, ldx, p, kc, add)
			useGemmAsm = false
			gemm4x16x8(dg, ldd, x, ldx, p, kc, add)
			useGemmAsm = true
			for i := range da {
				if math.Float32bits(da[i]) != math.Float32bits(dg[i]) {
					t.Fatalf("kc %d add %v: d[%d] = %v, Go twin %v", kc, add, i, da[i], dg[i])
				}
			}
		}
	}
}
