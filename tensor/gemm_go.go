package tensor

// Portable GEMM microkernels (see gemmKernels): panels of 8 outputs,
// float32 accumulation.

// gemmGoNR is the panel width of the portable kernels.
const gemmGoNR = 8

var gemmGo = gemmKernels{
	nr:       gemmGoNR,
	minT:     4,
	k4:       gemm4x8Go,
	k1:       gemm1x8Go,
	packBF16: packBF16Go,
	packF32:  packF32Go,
}

// gemm4x8Go is gemmKernels.k4 for nr = 8: four rows of x at a time, each
// against the eight panel values of a column.
func gemm4x8Go(d []float32, ldd int, x []float32, ldx int, p []float32, kc int, add bool) {
	x0, x1, x2, x3 := x[:kc], x[ldx:][:kc], x[2*ldx:][:kc], x[3*ldx:][:kc]
	p = p[:kc*8]
	var a [4][8]float32
	for j := range kc {
		w := p[j*8:][:8:8]
		for m, xv := range [4]float32{x0[j], x1[j], x2[j], x3[j]} {
			r := &a[m]
			r[0] += xv * w[0]
			r[1] += xv * w[1]
			r[2] += xv * w[2]
			r[3] += xv * w[3]
			r[4] += xv * w[4]
			r[5] += xv * w[5]
			r[6] += xv * w[6]
			r[7] += xv * w[7]
		}
	}
	for m := range 4 {
		dr := d[m*ldd:][:8]
		if add {
			for r := range 8 {
				dr[r] += a[m][r]
			}
		} else {
			copy(dr, a[m][:])
		}
	}
}

// gemm1x8Go is gemmKernels.k1 for nr = 8.
func gemm1x8Go(d []float32, x []float32, p []float32, kc int, add bool) {
	x = x[:kc]
	p = p[:kc*8]
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	for j, xv := range x {
		w := p[j*8:][:8:8]
		s0 += xv * w[0]
		s1 += xv * w[1]
		s2 += xv * w[2]
		s3 += xv * w[3]
		s4 += xv * w[4]
		s5 += xv * w[5]
		s6 += xv * w[6]
		s7 += xv * w[7]
	}
	d = d[:8]
	if add {
		s0 += d[0]
		s1 += d[1]
		s2 += d[2]
		s3 += d[3]
		s4 += d[4]
		s5 += d[5]
		s6 += d[6]
		s7 += d[7]
	}
	d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7] = s0, s1, s2, s3, s4, s5, s6, s7
}
