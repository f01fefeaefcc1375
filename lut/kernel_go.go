package lut

import "forge/tensor"

// Portable kernels: every format and alignment, in plain Go (the only
// kernels without GOEXPERIMENT=simd, and the reference-checked fallback
// with it).

// goChunk is the number of codes the portable kernel unpacks at a time.
const goChunk = 256

// mulGo is the portable kernel for index rows [r0, r1) and x rows
// [t0, t1). Byte-aligned rows of 1-, 2-, 4- and 8-bit codes are read in
// place (mulGoBytes); anything else is unpacked goChunk codes at a time
// (Unpack), table lookups times x summed per chunk into dst, and the
// scales applied last. It handles every quantized format and alignment.
func (m *Matrix) mulGo(dst, x *tensor.Matrix, r0, r1, t0, t1 int) {
	if b := m.f.Bits; m.in*b%8 == 0 && b != 3 && b != 6 {
		m.mulGoBytes(dst, x, r0, r1, t0, t1)
		return
	}
	var buf [goChunk]uint8
	d, in, out := m.f.Dim, m.in, m.out
	for r := r0; r < r1; r++ {
		o0 := r * d
		for t := t0; t < t1; t++ {
			clear(dst.Data[t*out+o0 : t*out+o0+d])
		}
		for j0 := 0; j0 < in; j0 += goChunk {
			codes := buf[:min(goChunk, in-j0)]
			Unpack(codes, m.p.Index, m.f.Bits, r*in+j0)
			for k := range d {
				tab := m.table(r, k)
				for t := t0; t < t1; t++ {
					dst.Data[t*out+o0+k] += dotCodes(tab, codes, x.Data[t*in+j0:][:len(codes)])
				}
			}
		}
		for k := range d {
			s := m.scale[o0+k]
			for t := t0; t < t1; t++ {
				dst.Data[t*out+o0+k] *= s
			}
		}
	}
}

// dotCodes returns Σ_i tab[codes[i]]·x[i] with four partial sums.
func dotCodes(tab []float32, codes []uint8, x []float32) float32 {
	x = x[:len(codes)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(codes); i += 4 {
		c, v := codes[i:i+4:i+4], x[i:i+4:i+4]
		s0 += tab[c[0]] * v[0]
		s1 += tab[c[1]] * v[1]
		s2 += tab[c[2]] * v[2]
		s3 += tab[c[3]] * v[3]
	}
	for ; i < len(codes); i++ {
		s0 += tab[codes[i]] * x[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// mulGoBytes is mulGo for byte-aligned rows of 1-, 2-, 4- or 8-bit codes:
// each code byte is split in place, no unpacking, and the table lookups
// need no bounds checks (a masked index into a [16] or [256] array).
func (m *Matrix) mulGoBytes(dst, x *tensor.Matrix, r0, r1, t0, t1 int) {
	d, in, out, b := m.f.Dim, m.in, m.out, m.f.Bits
	n := in * b / 8 // bytes per index row
	for r := r0; r < r1; r++ {
		codes := m.p.Index[r*n : (r+1)*n]
		for k := range d {
			o := r*d + k
			tab := m.table(r, k)
			for t := t0; t < t1; t++ {
				xr := x.Data[t*in : (t+1)*in]
				var s float32
				switch b {
				case 8:
					s = dotBytes8((*[256]float32)(tab[:256]), codes, xr)
				case 4:
					s = dotBytes4((*[16]float32)(tab[:16]), codes, xr)
				default:
					s = dotBytesN((*[16]float32)(tab[:16]), b, codes, xr)
				}
				dst.Data[t*out+o] = m.scale[o] * s
			}
		}
	}
}

// dotBytes4 returns Σ_j tab[code(j)]·x[j] for 4-bit codes, two per byte
// (low nibble first): column 4k+p goes to partial sum s_p, the sums added
// in order. The loop takes four bytes a step (one bounds check for eight
// columns) with the same partial sums in the same order as two.
func dotBytes4(tab *[16]float32, codes []byte, x []float32) float32 {
	x = x[:2*len(codes)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(codes); i += 4 {
		c := codes[i : i+4 : i+4]
		v := x[2*i : 2*i+8 : 2*i+8]
		s0 += tab[c[0]&15] * v[0]
		s1 += tab[c[0]>>4] * v[1]
		s2 += tab[c[1]&15] * v[2]
		s3 += tab[c[1]>>4] * v[3]
		s0 += tab[c[2]&15] * v[4]
		s1 += tab[c[2]>>4] * v[5]
		s2 += tab[c[3]&15] * v[6]
		s3 += tab[c[3]>>4] * v[7]
	}
	for ; i+2 <= len(codes); i += 2 {
		c0, c1 := codes[i], codes[i+1]
		v := x[2*i : 2*i+4 : 2*i+4]
		s0 += tab[c0&15] * v[0]
		s1 += tab[c0>>4] * v[1]
		s2 += tab[c1&15] * v[2]
		s3 += tab[c1>>4] * v[3]
	}
	if i < len(codes) {
		s0 += tab[codes[i]&15] * x[2*i]
		s1 += tab[codes[i]>>4] * x[2*i+1]
	}
	return (s0 + s1) + (s2 + s3)
}

// dotBytes8 is dotBytes4 for one 8-bit code per byte (LUT8, and INT8 with
// its fixed table).
func dotBytes8(tab *[256]float32, codes []byte, x []float32) float32 {
	x = x[:len(codes)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(codes); i += 4 {
		c, v := codes[i:i+4:i+4], x[i:i+4:i+4]
		s0 += tab[c[0]] * v[0]
		s1 += tab[c[1]] * v[1]
		s2 += tab[c[2]] * v[2]
		s3 += tab[c[3]] * v[3]
	}
	for ; i < len(codes); i++ {
		s0 += tab[codes[i]] * x[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// dotBytesN is dotBytes4 for 1- and 2-bit codes (P = 8/bits per byte,
// lowest bits first). The table repeats with period K up to 16 entries
// (Matrix.buildTables), so the masked index (c >> shift) & 15 picks the
// right entry whatever the higher codes in the byte are.
func dotBytesN(tab *[16]float32, bits int, codes []byte, x []float32) float32 {
	P := 8 / bits
	x = x[:P*len(codes)]
	var s0, s1 float32
	for i, c := range codes {
		v := x[P*i : P*i+P]
		for p := 0; p+1 < len(v); p += 2 {
			s0 += tab[c>>(bits*p)&15] * v[p]
			s1 += tab[c>>(bits*p+bits)&15] * v[p+1]
		}
	}
	return s0 + s1
}
