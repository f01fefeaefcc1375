//go:build goexperiment.simd && amd64

package lut

import (
	"simd/archsimd"
	"testing"

	"forge/tensor"
)

// TestInt8AVX2Kernels runs the int8 twin tests with the AVX2 kernels and
// quantizer forced (the AVX-512 ones switched off), so that a CPU with
// AVX-512, where they would never run, tests them too.
func TestInt8AVX2Kernels(t *testing.T) {
	if !archsimd.X86.AVX2() {
		t.Skip("no AVX2 on this CPU")
	}
	f, r, a, v := fastReady, int8Ready, int8A2, int8Vert
	fastReady, int8Ready, int8A2, int8Vert = false, false, true, false
	defer func() { fastReady, int8Ready, int8A2, int8Vert = f, r, a, v }()
	t.Run("MatchTwin", TestInt8KernelsMatchTwin)
	t.Run("QuantizeTwin", TestInt8QuantizeTwin)
	t.Run("RowsMatchOneRow", TestInt8RowsMatchOneRow)
	t.Run("CodebookBound", TestInt8CodebookBound)
	t.Run("Mul", TestMulRandomShapes) // the panel path, with the fast kernels off
}

// TestInt8WideCodebookAVX2 gives the AVX2 one-row kernel a LUT4 matrix
// whose codebook was made with 8 bits (|ℓ| = 127: made where int8A2 was
// off) and x at q = 127: its products of ℓ + 64 would saturate, so the
// matrix must run the twin (Matrix.narrow8) and give its bits.
func TestInt8WideCodebookAVX2(t *testing.T) {
	if !archsimd.X86.AVX2() {
		t.Skip("no AVX2 on this CPU")
	}
	f, r, a, v := fastReady, int8Ready, int8A2, int8Vert
	defer func() { fastReady, int8Ready, int8A2, int8Vert = f, r, a, v }()
	fastReady, int8Ready, int8A2, int8Vert = false, false, false, false
	lf := mustFormat(t, "LUT4 per-tensor + pcs")
	out, in := 16, 512
	p := randomParts(lf, out, in, 0, false, 3)
	for i := range p.LUT {
		p.LUT[i] = tensor.F32ToF16(0.75)
	}
	m, err := New(lf, out, in, p)
	if err != nil {
		t.Fatal(err)
	}
	if l := int(m.tab8[0]) - 128; l != 127 {
		t.Fatalf("ℓ = %d with 8-bit codebooks, want 127", l)
	}
	int8A2 = true
	onesKernelTwin(t, m, 1, "8-bit codebook")
}
