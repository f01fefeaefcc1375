package tensor

// Portable kernels (see kernels): plain Go, float32 accumulation, with
// independent accumulators so that the adds do not serialise. They are the
// fallback when no vector kernels apply and a reference for the vector ones.

func dot1x1F32Go(w []float32, x []float32) float32 {
	w = w[:len(x)]
	var s0, s1, s2, s3 float32
	j := 0
	for ; j+4 <= len(x); j += 4 {
		xs, ws := x[j:j+4:j+4], w[j:j+4:j+4]
		s0 += ws[0] * xs[0]
		s1 += ws[1] * xs[1]
		s2 += ws[2] * xs[2]
		s3 += ws[3] * xs[3]
	}
	for ; j < len(x); j++ {
		s0 += w[j] * x[j]
	}
	return (s0 + s1) + (s2 + s3)
}

func dot1x4F32Go(w []float32, x0, x1, x2, x3 []float32) (s0, s1, s2, s3 float32) {
	n := len(x0)
	w, x1, x2, x3 = w[:n], x1[:n], x2[:n], x3[:n]
	for j, wj := range w {
		s0 += wj * x0[j]
		s1 += wj * x1[j]
		s2 += wj * x2[j]
		s3 += wj * x3[j]
	}
	return
}

func dot4x1F32Go(w0, w1, w2, w3 []float32, x []float32) (s0, s1, s2, s3 float32) {
	n := len(x)
	w0, w1, w2, w3 = w0[:n], w1[:n], w2[:n], w3[:n]
	for j, xj := range x {
		s0 += w0[j] * xj
		s1 += w1[j] * xj
		s2 += w2[j] * xj
		s3 += w3[j] * xj
	}
	return
}

// dot2x4F32Go is two dot1x4F32Go: in plain Go the eight accumulators and
// six slices of a fused loop spill, which is slower than reading x twice.
// dot8x1F32Go is two dot4x1F32Go (eight accumulators and nine slices
// would spill in plain Go).
func dot8x1F32Go(w []float32, ldw int, x []float32) (s0, s1, s2, s3, s4, s5, s6, s7 float32) {
	n := len(x)
	r := func(i int) []float32 { return w[i*ldw:][:n] }
	s0, s1, s2, s3 = dot4x1F32Go(r(0), r(1), r(2), r(3), x)
	s4, s5, s6, s7 = dot4x1F32Go(r(4), r(5), r(6), r(7), x)
	return
}

func dot2x4F32Go(w0, w1 []float32, x0, x1, x2, x3 []float32) (s00, s01, s02, s03, s10, s11, s12, s13 float32) {
	s00, s01, s02, s03 = dot1x4F32Go(w0, x0, x1, x2, x3)
	s10, s11, s12, s13 = dot1x4F32Go(w1, x0, x1, x2, x3)
	return
}

func dot1x1BF16Go(w []uint16, x []float32) float32 {
	w = w[:len(x)]
	var s0, s1, s2, s3 float32
	j := 0
	for ; j+4 <= len(x); j += 4 {
		xs, ws := x[j:j+4:j+4], w[j:j+4:j+4]
		s0 += BF16ToF32(ws[0]) * xs[0]
		s1 += BF16ToF32(ws[1]) * xs[1]
		s2 += BF16ToF32(ws[2]) * xs[2]
		s3 += BF16ToF32(ws[3]) * xs[3]
	}
	for ; j < len(x); j++ {
		s0 += BF16ToF32(w[j]) * x[j]
	}
	return (s0 + s1) + (s2 + s3)
}

func dot1x4BF16Go(w []uint16, x0, x1, x2, x3 []float32) (s0, s1, s2, s3 float32) {
	n := len(x0)
	w, x1, x2, x3 = w[:n], x1[:n], x2[:n], x3[:n]
	for j, h := range w {
		wj := BF16ToF32(h)
		s0 += wj * x0[j]
		s1 += wj * x1[j]
		s2 += wj * x2[j]
		s3 += wj * x3[j]
	}
	return
}

func dot4x1BF16Go(w0, w1, w2, w3 []uint16, x []float32) (s0, s1, s2, s3 float32) {
	n := len(x)
	w0, w1, w2, w3 = w0[:n], w1[:n], w2[:n], w3[:n]
	for j, xj := range x {
		s0 += BF16ToF32(w0[j]) * xj
		s1 += BF16ToF32(w1[j]) * xj
		s2 += BF16ToF32(w2[j]) * xj
		s3 += BF16ToF32(w3[j]) * xj
	}
	return
}

// dot2x4BF16Go is two dot1x4BF16Go: in plain Go the eight accumulators and
// six slices of a fused loop spill, which is slower than reading x twice.
// dot8x1BF16Go is two dot4x1BF16Go.
func dot8x1BF16Go(w []uint16, ldw int, x []float32) (s0, s1, s2, s3, s4, s5, s6, s7 float32) {
	n := len(x)
	r := func(i int) []uint16 { return w[i*ldw:][:n] }
	s0, s1, s2, s3 = dot4x1BF16Go(r(0), r(1), r(2), r(3), x)
	s4, s5, s6, s7 = dot4x1BF16Go(r(4), r(5), r(6), r(7), x)
	return
}

func dot2x4BF16Go(w0, w1 []uint16, x0, x1, x2, x3 []float32) (s00, s01, s02, s03, s10, s11, s12, s13 float32) {
	s00, s01, s02, s03 = dot1x4BF16Go(w0, x0, x1, x2, x3)
	s10, s11, s12, s13 = dot1x4BF16Go(w1, x0, x1, x2, x3)
	return
}
