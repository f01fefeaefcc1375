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

// dot8x1F32Go is two dot4x1F32Go (eight accumulators and nine slices
// would spill in plain Go).
func dot8x1F32Go(w []float32, ldw int, x []float32) (s0, s1, s2, s3, s4, s5, s6, s7 float32) {
	n := len(x)
	r := func(i int) []float32 { return w[i*ldw:][:n] }
	s0, s1, s2, s3 = dot4x1F32Go(r(0), r(1), r(2), r(3), x)
	s4, s5, s6, s7 = dot4x1F32Go(r(4), r(5), r(6), r(7), x)
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

// dot8x1BF16Go is two dot4x1BF16Go.
func dot8x1BF16Go(w []uint16, ldw int, x []float32) (s0, s1, s2, s3, s4, s5, s6, s7 float32) {
	n := len(x)
	r := func(i int) []uint16 { return w[i*ldw:][:n] }
	s0, s1, s2, s3 = dot4x1BF16Go(r(0), r(1), r(2), r(3), x)
	s4, s5, s6, s7 = dot4x1BF16Go(r(4), r(5), r(6), r(7), x)
	return
}

// dot4x2F32Go computes four rows against two x rows by rows: each x pair is
// read four times from L1, which in plain Go is cheaper than the register
// pressure of a fused loop.
func dot4x2F32Go(w []float32, ldw int, x0, x1 []float32) (s00, s01, s10, s11, s20, s21, s30, s31 float32) {
	n := len(x0)
	r := func(i int) []float32 { return w[i*ldw:][:n] }
	s00, s01 = dot1x2F32Go(r(0), x0, x1)
	s10, s11 = dot1x2F32Go(r(1), x0, x1)
	s20, s21 = dot1x2F32Go(r(2), x0, x1)
	s30, s31 = dot1x2F32Go(r(3), x0, x1)
	return
}

// dot1x2F32Go returns Σ w[j]·x0[j] and Σ w[j]·x1[j], two accumulators each.
func dot1x2F32Go(w []float32, x0, x1 []float32) (s0, s1 float32) {
	n := len(x0)
	w, x1 = w[:n], x1[:n]
	var t0, t1 float32
	j := 0
	for ; j+2 <= n; j += 2 {
		a, b := w[j], w[j+1]
		s0 += a * x0[j]
		s1 += a * x1[j]
		t0 += b * x0[j+1]
		t1 += b * x1[j+1]
	}
	if j < n {
		a := w[j]
		s0 += a * x0[j]
		s1 += a * x1[j]
	}
	return s0 + t0, s1 + t1
}

// dot4x2BF16Go computes four rows against two x rows by rows: each x pair is
// read four times from L1, which in plain Go is cheaper than the register
// pressure of a fused loop.
func dot4x2BF16Go(w []uint16, ldw int, x0, x1 []float32) (s00, s01, s10, s11, s20, s21, s30, s31 float32) {
	n := len(x0)
	r := func(i int) []uint16 { return w[i*ldw:][:n] }
	s00, s01 = dot1x2BF16Go(r(0), x0, x1)
	s10, s11 = dot1x2BF16Go(r(1), x0, x1)
	s20, s21 = dot1x2BF16Go(r(2), x0, x1)
	s30, s31 = dot1x2BF16Go(r(3), x0, x1)
	return
}

// dot1x2BF16Go returns Σ w[j]·x0[j] and Σ w[j]·x1[j], two accumulators each.
func dot1x2BF16Go(w []uint16, x0, x1 []float32) (s0, s1 float32) {
	n := len(x0)
	w, x1 = w[:n], x1[:n]
	var t0, t1 float32
	j := 0
	for ; j+2 <= n; j += 2 {
		a, b := BF16ToF32(w[j]), BF16ToF32(w[j+1])
		s0 += a * x0[j]
		s1 += a * x1[j]
		t0 += b * x0[j+1]
		t1 += b * x1[j+1]
	}
	if j < n {
		a := BF16ToF32(w[j])
		s0 += a * x0[j]
		s1 += a * x1[j]
	}
	return s0 + t0, s1 + t1
}
