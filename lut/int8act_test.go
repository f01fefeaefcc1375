package lut

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"forge/tensor"
)

// int8Formats are the formats with int8-activation kernels, with codebook
// groups that do (g8: 8 rows) and do not (g5, 2x16 g6: 3 index rows) line
// up with the kernels' groups of eight outputs.
var int8Formats = []string{
	"LUT4 per-tensor + pcs", "LUT4 g8 + pcs", "LUT4 g5 + pcs",
	"vector 2x16 + pcs", "vector 2x16 g6 + pcs",
}

// int8X returns random rows with the features of real activations: a few
// outlier columns 20× the rest, and (row 0, when in > 512) a block of
// zeros.
func int8X(T, in int, seed uint64) *tensor.Matrix {
	x := randomX(T, in, seed)
	g := rand.New(rand.NewPCG(seed, 7))
	for t := range T {
		row := x.Row(t)
		for range 3 {
			row[g.IntN(in)] *= 20
		}
	}
	if in > int8Block {
		clear(x.Row(0)[:int8Block]) // block 0: 16 zero scale groups
	}
	return x
}

// TestInt8KernelsMatchTwin: the assembly kernels give the portable twin's
// bits for every format, shape, range and row count, and a row's result
// does not depend on the other rows or the range it was computed in.
//
// The kernels are the AVX-512 ones (int8_amd64.s) where the CPU has VNNI
// and VBMI, the AVX2 ones (int8_avx2_amd64.s) where it has AVX2 only.
// Without either (no GOEXPERIMENT=simd, or an older CPU) the twin is
// compared with itself, and the range and row checks still run.
func TestInt8KernelsMatchTwin(t *testing.T) {
	for _, name := range int8Formats {
		f := mustFormat(t, name)
		for _, sh := range [][2]int{{8, 128}, {24, 192}, {40, 384}, {96, 512}, {120, 640}, {40, 704}, {16, 1664}} {
			out, in := sh[0], sh[1]
			m := randomMatrix(t, f, out, in, 0, false, uint64(out*in))
			if !m.Int8Activations() {
				t.Fatalf("%s %dx%d: no int8 kernels", name, out, in)
			}
			x := int8X(3, in, uint64(in))
			var q Int8Input
			m.QuantizeInput(&q, x)
			fast := kernelTwin(t, m, x, fmt.Sprintf("%s %dx%d", name, out, in))
			// Ranges (8-aligned and not) and single rows give the same bits.
			for _, r := range [][2]int{{0, 8}, {8, out}, {2, out - 2}, {out / 2, out}} {
				part := tensor.New(3, out)
				m.MulRowsInt8(part, &q, r[0], r[1])
				d := f.Dim
				lo, hi := r[0]/d*d, r[1]/d*d
				for tt := range 3 {
					for o := lo; o < hi; o++ {
						if a, b := part.Row(tt)[o], fast.Row(tt)[o]; math.Float32bits(a) != math.Float32bits(b) {
							t.Fatalf("%s %dx%d rows [%d,%d): row %d output %d = %v, whole call %v", name, out, in, r[0], r[1], tt, o, a, b)
						}
					}
				}
			}
			pooled := tensor.New(3, out)
			m.MulInt8(pooled, &q)
			for i := range pooled.Data {
				if math.Float32bits(pooled.Data[i]) != math.Float32bits(fast.Data[i]) {
					t.Fatalf("%s %dx%d: MulInt8 output %d = %v, MulRowsInt8 %v", name, out, in, i, pooled.Data[i], fast.Data[i])
				}
			}
			one := tensor.New(1, out)
			var q1 Int8Input
			m.QuantizeInput(&q1, tensor.FromSlice(1, in, x.Row(2)))
			m.MulRowsInt8(one, &q1, 0, out)
			for o := range out {
				if math.Float32bits(one.Data[o]) != math.Float32bits(fast.Row(2)[o]) {
					t.Fatalf("%s: row 2 alone differs at %d: %v vs %v", name, o, one.Data[o], fast.Row(2)[o])
				}
			}
		}
	}
}

// TestInt8Accuracy bounds the int8 product against the exact product of
// the stored matrix (float64): for every output,
//
//	|y − Ŵx| ≤ Σ_j |Ŵ[o,j]|·d_G(j)/2 + s[o]·c_g/2·Σ_j |x̂_j| + 1e-5·Σ_j |Ŵ[o,j]·x_j|
//
// (x's rounding, then the codebook's on x̂ = q·d, then float32 sums of
// at most 640 terms, far below 1e-5 relative); and over all outputs the
// RMS error is below 2% of the RMS output (expected ≈ 1%: uniform
// rounding of x at ≈ 0.7% of a block's largest value, of the codebook at
// 0.4% of its largest entry).
func TestInt8Accuracy(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		type shape struct {
			name string
			in   int
		}
		cases := []shape{{"LUT4 per-tensor + pcs", 192}, {"vector 2x16 + pcs", 192}} // padded widths
		for _, name := range int8Formats {
			cases = append(cases, shape{name, 640})
		}
		for _, c := range cases {
			name, in := c.name, c.in
			f := mustFormat(t, name)
			out := 48
			m := randomMatrix(t, f, out, in, 0, false, 11)
			x := int8X(2, in, 5)
			var q Int8Input
			m.QuantizeInput(&q, x)
			y := tensor.New(2, out)
			m.MulRowsInt8(y, &q, 0, out)
			w := refWeights(m)
			var se, sy float64
			for tt := range 2 {
				xr := x.Row(tt)
				for o := range out {
					ref, bound, absx := 0.0, 0.0, 0.0
					for j := range in {
						wj := w[o*in+j]
						ref += wj * float64(xr[j])
						_, g := int8Lane(j)
						db := float64(q.d[tt*16*((in+int8Block-1)/int8Block)+g])
						bound += math.Abs(wj)*db/2 + 1e-5*math.Abs(wj*float64(xr[j]))
						absx += math.Abs(float64(xr[j])) + db/2
					}
					bound += float64(m.scale[o]) * float64(m.cbd[m.group8(o/f.Dim)]) / 2 * absx
					got := float64(y.Row(tt)[o])
					if math.Abs(got-ref) > bound {
						t.Fatalf("%s: row %d output %d = %v, exact %v, bound %v", name, tt, o, got, ref, bound)
					}
					se += (got - ref) * (got - ref)
					sy += ref * ref
				}
			}
			if rel := math.Sqrt(se / sy); rel > 0.02 {
				t.Errorf("%s: RMS error %.4f of the RMS output, want < 0.02", name, rel)
			} else {
				t.Logf("%s: RMS error %.4f of the RMS output", name, rel)
			}
		}
	})
}

// TestInt8Quantize checks the activation quantizer: codes in [−127, 127],
// each scale group's largest |x| at ±127, zero groups with d = 0, and the
// phase layout (q·d back in natural order is x within d/2).
func TestInt8Quantize(t *testing.T) {
	in := 768
	m := randomMatrix(t, mustFormat(t, "LUT4 per-tensor + pcs"), 8, in, 0, false, 1)
	x := int8X(1, in, 3)
	var q Int8Input
	m.QuantizeInput(&q, x)
	seen := make([]bool, len(q.d))
	for j, v := range x.Row(0) {
		pos, g := int8Lane(j)
		c, d := q.q[pos], q.d[g]
		if j < int8Block && d != 0 {
			t.Fatalf("column %d: zero group has d = %v", j, d)
		}
		if c == -128 {
			t.Fatalf("column %d: code −128", j)
		}
		if e := math.Abs(float64(c)*float64(d) - float64(v)); e > float64(d)/2*(1+1e-6) {
			t.Fatalf("column %d: %v quantized to %d·%v (error %v > d/2)", j, v, c, d, e)
		}
		seen[g] = seen[g] || c == 127 || c == -127
	}
	for g, d := range q.d {
		if d != 0 && !seen[g] {
			t.Errorf("scale group %d: no code at ±127", g)
		}
	}
}

// TestInt8Fallbacks: formats without int8 kernels compute MulRows on x'
// bit for bit; a rotated matrix
// rotates before quantizing and adds its low-rank term; an input made for
// another rotation does not Fit.
func TestInt8Fallbacks(t *testing.T) {
	for _, c := range []struct {
		name string
		in   int
	}{{"LUT3 per-tensor + pcs", 256}, {"INT8 per-channel", 256}, {"bf16", 256}} {
		m := randomMatrix(t, mustFormat(t, c.name), 16, c.in, 0, false, 2)
		if m.Int8Activations() {
			t.Fatalf("%s in=%d claims int8 kernels", c.name, c.in)
		}
		x := int8X(2, c.in, 4)
		var q Int8Input
		m.QuantizeInput(&q, x)
		a, b := tensor.New(2, 16), tensor.New(2, 16)
		m.MulRowsInt8(a, &q, 0, 16)
		m.MulRows(b, x, 0, 16)
		for i := range a.Data {
			if math.Float32bits(a.Data[i]) != math.Float32bits(b.Data[i]) {
				t.Fatalf("%s: output %d: %v, MulRows %v", c.name, i, a.Data[i], b.Data[i])
			}
		}
	}
	f := mustFormat(t, "LUT4 per-tensor + pcs")
	p := randomParts(f, 32, 256, 4, false, 9)
	h := NewHadamard(256, 1)
	p.Rotation = h
	m, err := New(f, 32, 256, p)
	if err != nil {
		t.Fatal(err)
	}
	plain := randomMatrix(t, f, 32, 256, 0, false, 9)
	x := int8X(1, 256, 8)
	var q Int8Input
	m.QuantizeInput(&q, x)
	if !q.Fits(m) || q.Fits(plain) {
		t.Fatalf("Fits: rotated %v (want true), plain %v (want false)", q.Fits(m), q.Fits(plain))
	}
	y, ref := tensor.New(1, 32), tensor.New(1, 32)
	m.MulRowsInt8(y, &q, 0, 32)
	m.Mul(ref, x)
	var se, sy float64
	for o := range 32 {
		e := float64(y.Data[o] - ref.Data[o])
		se, sy = se+e*e, sy+float64(ref.Data[o])*float64(ref.Data[o])
	}
	if rel := math.Sqrt(se / sy); rel > 0.02 {
		t.Errorf("rotated + low rank: RMS error %.4f of the RMS output, want < 0.02", rel)
	}
}

// TestInt8Padding: a width that is not a multiple of 128 is the same
// product, bit for bit, as the matrix with its index rows padded by
// code-0 columns to the next multiple of 128 times x padded by zeros
// (Int8Activations), for scalar and 2-vector LUTs and widths with half a
// step (192) and more (320, 448) past the last whole one.
func TestInt8Padding(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		for _, name := range int8Formats {
			f := mustFormat(t, name)
			for _, in := range []int{192, 320, 448} {
				out, w := 24, int8Width(in)
				p := randomParts(f, out, in, 0, false, uint64(in))
				rows, n := f.IndexRows(out), in/2
				pw := p
				pw.Index = make([]byte, rows*w/2)
				for r := range rows {
					copy(pw.Index[r*w/2:], p.Index[r*n:(r+1)*n])
				}
				m, err := New(f, out, in, p)
				if err != nil {
					t.Fatal(err)
				}
				mw, err := New(f, out, w, pw)
				if err != nil {
					t.Fatal(err)
				}
				if !m.Int8Activations() {
					t.Fatalf("%s in=%d: no int8 kernels", name, in)
				}
				x, xw := int8X(3, in, uint64(in)+1), tensor.New(3, w)
				for tt := range 3 {
					copy(xw.Row(tt), x.Row(tt))
				}
				var q, qw Int8Input
				m.QuantizeInput(&q, x)
				mw.QuantizeInput(&qw, xw)
				y, yw := tensor.New(3, out), tensor.New(3, out)
				m.MulRowsInt8(y, &q, 0, out)
				mw.MulRowsInt8(yw, &qw, 0, out)
				for i := range y.Data {
					if math.Float32bits(y.Data[i]) != math.Float32bits(yw.Data[i]) {
						t.Fatalf("%s in=%d: output %d = %v, padded matrix %v", name, in, i, y.Data[i], yw.Data[i])
					}
				}
			}
		}
	})
}

// TestInt8QuantizeTwin: the vector quantizer gives the portable one's
// codes, scales and k bit for bit (rows with outliers, zero groups and
// values on rounding ties), and declines rows that are not whole steps.
func TestInt8QuantizeTwin(t *testing.T) {
	for _, in := range []int{128, 640, 1664} {
		x := int8X(4, in, uint64(in))
		row := x.Row(3) // ties: every group's max is 127, so v·127/max = v, a half-integer
		for j := range row {
			row[j] = float32(j%255-127) / 2
			if j%int8Block < int8Step && j%8 == 0 {
				row[j] = 127 // the group's first column
			}
		}
		nb := 16 * ((in + int8Block - 1) / int8Block)
		for tt := range 4 {
			qa, qb := make([]int8, in), make([]int8, in)
			da, db := make([]float32, nb), make([]float32, nb)
			sa, sb := make([]int32, nb), make([]int32, nb)
			kb := quantizeRowGo(qb, db, x.Row(tt))
			laneSums(sb, qb)
			ka, ok := quantizeFast(qa, da, sa, x.Row(tt))
			if !ok {
				if int8Ready {
					t.Fatalf("in %d: the vector quantizer declined a row of whole steps", in)
				}
				continue
			}
			if math.Float32bits(ka) != math.Float32bits(kb) {
				t.Fatalf("in %d row %d: k %v, portable %v", in, tt, ka, kb)
			}
			for i := range qa {
				if qa[i] != qb[i] {
					t.Fatalf("in %d row %d: code %d = %d, portable %d", in, tt, i, qa[i], qb[i])
				}
			}
			for i := range da {
				if math.Float32bits(da[i]) != math.Float32bits(db[i]) {
					t.Fatalf("in %d row %d: scale %d = %v, portable %v", in, tt, i, da[i], db[i])
				}
				if sa[i] != sb[i] {
					t.Fatalf("in %d row %d: lane sum %d = %d, laneSums %d", in, tt, i, sa[i], sb[i])
				}
			}
		}
	}
	if _, ok := quantizeFast(make([]int8, 192), make([]float32, 16), nil, make([]float32, 192)); ok {
		t.Error("the vector quantizer took a row of 192 columns")
	}
}

// TestInt8RowsMatchOneRow: a product of T rows of x (the multi-row kernel
// for scalar LUTs, by chunks of eight rows) gives every row the bits of
// that row's one-row product, for T = 2…17, per-tensor and grouped
// codebooks, widths with a partial last block, long rows (up to 54 steps),
// output counts and ranges that leave groups of eight rows incomplete.
func TestInt8RowsMatchOneRow(t *testing.T) {
	for _, name := range int8Formats {
		f := mustFormat(t, name)
		for _, sh := range [][2]int{{8, 128}, {20, 192}, {44, 384}, {96, 512}, {120, 640}, {16, 1664}, {16, 4224}, {24, 6912}} {
			out, in := sh[0], sh[1]
			m := randomMatrix(t, f, out, in, 0, false, uint64(out*in+7))
			for T := 2; T <= 17; T++ {
				x := int8X(T, in, uint64(T*in))
				var q, q1 Int8Input
				m.QuantizeInput(&q, x)
				if int8Ready && len(q.qi) == 0 {
					t.Fatal("the rows were not interleaved for the multi-row kernel")
				}
				for _, r := range [][2]int{{0, out}, {8, out}, {2, out - 2}} {
					all := tensor.New(T, out)
					m.MulRowsInt8(all, &q, r[0], r[1])
					one := tensor.New(1, out)
					d := f.Dim
					lo, hi := r[0]/d*d, r[1]/d*d
					for row := range T {
						m.QuantizeInput(&q1, tensor.FromSlice(1, in, x.Row(row)))
						m.MulRowsInt8(one, &q1, r[0], r[1])
						for o := lo; o < hi; o++ {
							if a, b := all.Row(row)[o], one.Data[o]; math.Float32bits(a) != math.Float32bits(b) {
								t.Fatalf("%s %dx%d, T=%d, rows [%d,%d): x row %d output %d = %v, alone %v",
									name, out, in, T, r[0], r[1], row, o, a, b)
							}
						}
					}
				}
			}
		}
	}
}

// TestInt8CodebookBound checks the int8 codebooks against codebookBound:
// every |ℓ| ≤ B (the AVX2 2-vector kernel's products would saturate
// above 64) and every entry within c_g/2 of c_g·ℓ, on random codebooks
// and on one whose entries are all equal, which puts every ℓ at +B. With
// x constant too, every q is 127 and every pair of products in the AVX2
// kernel is at its largest: the kernels must still give the twin's bits.
func TestInt8CodebookBound(t *testing.T) {
	for _, name := range int8Formats {
		f := mustFormat(t, name)
		out, in := 40, 512
		for _, flat := range []bool{false, true} {
			p := randomParts(f, out, in, 0, false, 3)
			if flat {
				for i := range p.LUT {
					p.LUT[i] = tensor.F32ToF16(0.75)
				}
			}
			m, err := New(f, out, in, p)
			if err != nil {
				t.Fatal(err)
			}
			B := int(codebookBound(f))
			for g := range f.Groups(out) {
				c := float64(m.cbd[g])
				for tt := range f.Dim {
					for e, v := range m.tab[(g*f.Dim+tt)*m.stride:][:16] {
						l := int(m.tab8[(g*f.Dim+tt)*64+e]) - 128
						if l < -B || l > B {
							t.Fatalf("%s flat=%v: group %d entry %d: ℓ = %d outside ±%d", name, flat, g, e, l, B)
						}
						if flat && l != B {
							t.Fatalf("%s flat: group %d entry %d: ℓ = %d, want %d", name, g, e, l, B)
						}
						if d := math.Abs(float64(v) - c*float64(l)); d > c/2*(1+1e-6) {
							t.Fatalf("%s flat=%v: group %d entry %d: |L − c·ℓ| = %g > c/2 = %g", name, flat, g, e, d, c/2)
						}
					}
				}
			}
			onesKernelTwin(t, m, 2, fmt.Sprintf("%s flat=%v", name, flat))
		}
	}
}

// kernelTwin runs m on x with the fast kernels and with the twin, fails
// unless every output has the same bits, and returns the outputs.
func kernelTwin(t *testing.T, m *Matrix, x *tensor.Matrix, name string) *tensor.Matrix {
	t.Helper()
	out, _ := m.Dims()
	var q Int8Input
	m.QuantizeInput(&q, x)
	fast, slow := tensor.New(x.Rows, out), tensor.New(x.Rows, out)
	m.MulRowsInt8(fast, &q, 0, out)
	useFast = false
	m.MulRowsInt8(slow, &q, 0, out)
	useFast = true
	for i := range fast.Data {
		if math.Float32bits(fast.Data[i]) != math.Float32bits(slow.Data[i]) {
			t.Fatalf("%s: output %d: kernel %v, twin %v", name, i, fast.Data[i], slow.Data[i])
		}
	}
	return fast
}

// onesKernelTwin is kernelTwin on rows rows of ones (q = 127 in every
// column, the largest products the kernels meet).
func onesKernelTwin(t *testing.T, m *Matrix, rows int, name string) {
	t.Helper()
	_, in := m.Dims()
	x := tensor.New(rows, in)
	for i := range x.Data {
		x.Data[i] = 1
	}
	kernelTwin(t, m, x, name)
}
