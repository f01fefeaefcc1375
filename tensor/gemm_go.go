package tensor

// Portable GEMM kernels (see gemmKernels): panels of 8 outputs, float32
// accumulation. Plain Go gains nothing from an outer-product microkernel:
// scalar float32 lives in 15 registers and a loop body's products are all
// scheduled before its sums, so a 4×8 register tile spills and runs no
// faster than the dot-product kernels (about one multiply-add per cycle
// either way). The portable GEMM therefore widens each panel once,
// row-major (p[r·kc + j] = W[o0+r][j0+j]), and runs the float32 dot-product
// kernels over it for every row of x: the weights are read from memory and
// widened once per call instead of once per pair of x rows.

// gemmGoNR is the panel width of the portable kernels.
const gemmGoNR = 8

var gemmGo = gemmKernels{
	nr: gemmGoNR,
	// Measured: bf16 and f16 gain from T = 8 (no more widening per pair
	// of x rows), f32 only from T = 16.
	minT:     [3]int{dtF32: 16, dtBF16: 8, dtF16: 8},
	k4:       gemm4x8Go,
	k1:       gemm1x8Go,
	packBF16: packRowsBF16Go,
	packF32:  packRowsF32Go,
	packF16:  packRowsF16Go,
}

// gemm4x8Go is gemmKernels.k4 for the row-major panel of 8 rows.
func gemm4x8Go(d []float32, ldd int, x []float32, ldx int, p []float32, kc int, add bool) {
	p = p[:gemmGoNR*kc]
	out := blockOut{&Matrix{Rows: 4, Cols: ldd, Data: d}, add}
	for t := 0; t < 4; t += 2 {
		x0, x1 := x[t*ldx:][:kc], x[(t+1)*ldx:][:kc]
		for q := 0; q < gemmGoNR; q += 4 {
			a0, a1, b0, b1, c0, c1, d0, d1 := dot4x2F32Go(p[q*kc:], kc, x0, x1)
			out.quad2(t, q, a0, a1, b0, b1, c0, c1, d0, d1)
		}
	}
}

// gemm1x8Go is gemmKernels.k1 for the row-major panel of 8 rows.
func gemm1x8Go(d []float32, x []float32, p []float32, kc int, add bool) {
	s0, s1, s2, s3, s4, s5, s6, s7 := dot8x1F32Go(p[:gemmGoNR*kc], kc, x[:kc])
	out := blockOut{&Matrix{Rows: 1, Cols: gemmGoNR, Data: d}, add}
	out.row4(0, 0, s0, s1, s2, s3)
	out.row4(0, 4, s4, s5, s6, s7)
}

// packRowsBF16Go widens rows [0, rows) of w (columns [0, kc), row stride
// ldw) into p[r·kc + j] and zeroes rows [rows, nr) of p.
func packRowsBF16Go(p []float32, nr int, w []uint16, ldw, rows, kc int) {
	p = p[:nr*kc]
	for r := range rows {
		BF16ToF32Slice(p[r*kc:][:kc], w[r*ldw:][:kc])
	}
	clear(p[rows*kc:])
}

// packRowsF32Go is packRowsBF16Go for float32 weights.
func packRowsF32Go(p []float32, nr int, w []float32, ldw, rows, kc int) {
	p = p[:nr*kc]
	for r := range rows {
		copy(p[r*kc:][:kc], w[r*ldw:][:kc])
	}
	clear(p[rows*kc:])
}

// packRowsF16Go is packRowsBF16Go for binary16 weights.
func packRowsF16Go(p []float32, nr int, w []uint16, ldw, rows, kc int) {
	p = p[:nr*kc]
	for r := range rows {
		F16ToF32Slice(p[r*kc:][:kc], w[r*ldw:][:kc])
	}
	clear(p[rows*kc:])
}
