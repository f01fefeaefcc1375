//go:build goexperiment.simd && amd64

package lut

import (
	"simd/archsimd"
	"sync"
	"unsafe"
)

// fastReady: the fast kernels (kernel_avx512.go) need AVX-512 F/BW/DQ/VL.
// On other CPUs every matrix runs on the portable kernel.
var fastReady = archsimd.X86.AVX512()

// geom is the block geometry of a byte-aligned index row.
type geom struct {
	bits, P  int // code width, codes per byte
	n        int // bytes per index row
	nb, tail int // whole 16-byte blocks, bytes in the last partial block
	blocks   int // blocks including the partial one
	xt       int // offset in floats of the partial block's x in a row of xp
}

func (j *mulJob) geom() geom {
	b := j.m.f.Bits
	n := j.m.in * b / 8
	return geom{bits: b, P: 8 / b, n: n, nb: n / 16, tail: n % 16, blocks: (n + 15) / 16, xt: n / 16 * 16 * (8 / b)}
}

// prepare lays out every row of x in phase layout (permuteX) in j.xp,
// each row padded with zeros to whole 16-byte blocks of codes plus one
// spare zero block (fusedVec2).
func (j *mulJob) prepare() {
	g := j.geom()
	j.xs = (g.blocks + 1) * 16 * g.P
	need := j.x.Rows * j.xs
	if cap(j.xp) < need {
		j.xp = make([]float32, need)
	}
	j.xp = j.xp[:need]
	for t := range j.x.Rows {
		permuteX(j.xp[t*j.xs:(t+1)*j.xs], j.x.Row(t), g.P)
	}
	j.xq = j.xq[:0]
	if j.x.Rows >= tileX && j.tiledOK(g) {
		nt, nv := j.x.Rows/tileX, j.xs/16
		need := nt * tileX * j.xs
		if cap(j.xq) < need {
			j.xq = make([]float32, need)
		}
		j.xq = j.xq[:need]
		for t := range nt * tileX {
			src := j.xp[t*j.xs : (t+1)*j.xs]
			dst := j.xq[(t/tileX*nv*tileX+t%tileX)*16:]
			for v := range nv {
				copy(dst[v*tileX*16:][:16], src[16*v:])
			}
		}
	}
}

// tiledOK reports whether the T > 1 register kernels (lut1x8, i8x8) run
// the matrix: 4-bit scalar and 2-vector LUTs, INT8.
func (j *mulJob) tiledOK(g geom) bool { return g.bits == 4 || j.m.fam == famInt8 }

// xqptr returns x tile t/tileX (t a multiple of tileX) in j.xq from its
// phase-layout vector v.
func (j *mulJob) xqptr(t, v int) unsafe.Pointer {
	return unsafe.Pointer(&j.xq[(t/tileX*(j.xs/16)+v)*tileX*16])
}

// permuteX writes x in the phase layout of P codes per byte: in each block
// of 16·P columns, dst[16·p + i] = x[P·i + p] (i < 16, p < P), and zero
// past the end of x.
func permuteX(dst, x []float32, P int) {
	if P == 1 {
		clear(dst[copy(dst, x):])
		return
	}
	bs := 16 * P
	full := len(x) / bs
	if P == 2 {
		deinterleave(dst[:full*bs], x[:full*bs])
	} else {
		for b := range full {
			src, blk := x[b*bs:(b+1)*bs], dst[b*bs:(b+1)*bs]
			for p := range P {
				o := blk[16*p : 16*p+16]
				for i := range o {
					o[i] = src[P*i+p]
				}
			}
		}
	}
	for b0 := full * bs; b0 < len(dst); b0 += bs {
		blk := dst[b0 : b0+bs]
		for i := range 16 {
			for p := range P {
				v := float32(0)
				if c := b0 + P*i + p; c < len(x) {
					v = x[c]
				}
				blk[16*p+i] = v
			}
		}
	}
}

// xptr returns the phase-layout row t of x, offset by off floats.
func (j *mulJob) xptr(t, off int) unsafe.Pointer { return unsafe.Pointer(&j.xp[t*j.xs+off]) }

// tab16 returns the first 16 floats of index row r's component-c table.
func (j *mulJob) tab16(r, c int) *[16]float32 { return (*[16]float32)(j.m.table(r, c)) }

// fastRows computes index rows [r0, r1) for x rows [t0, t1): fused
// kernels for a single x row, decode-and-multiply otherwise and for the
// rows the fused kernels leave.
func (j *mulJob) fastRows(r0, r1, t0, t1 int) {
	g := j.geom()
	if t1-t0 == 1 {
		r0 = j.fusedRows(g, r0, r1, t0)
	} else if t8 := t0 + (t1-t0)/tileX*tileX; t8 > t0 && len(j.xq) > 0 {
		j.tiledRows(g, r0, r1, t0, t8)
		t0 = t8
	}
	if r0 < r1 && t0 < t1 {
		j.decodedRows(g, r0, r1, t0, t1)
	}
}

// fusedRows runs the T = 1 kernels on eight output rows at a time (eight
// scalar or INT8 rows, four 2-vector index rows) that share one codebook
// and returns the first index row it left (fewer than a whole group).
func (j *mulJob) fusedRows(g geom, r0, r1, t int) int {
	m := j.m
	R := 8 / m.f.Dim // index rows per kernel call
	idx := m.p.Index[:r1*g.n]
	r := r0
	for ; r+R <= r1; r += R {
		if m.rowsG > 0 && r/m.rowsG != (r+R-1)/m.rowsG {
			j.decodedRows(g, r, r+R, t, t+1)
			continue
		}
		s := j.fused(g, unsafe.Pointer(&idx[r*g.n]), g.n, g.nb, r, j.xptr(t, 0))
		if g.tail > 0 && m.fam != famVec2 { // fusedVec2 reads its own tail
			var buf [8 * 16]byte // the rows' partial last blocks, zero-padded
			for i := range R {
				copy(buf[16*i:16*i+g.tail], idx[(r+i)*g.n+16*g.nb:][:g.tail])
			}
			a := j.fused(g, unsafe.Pointer(&buf), 16, 1, r, j.xptr(t, g.xt))
			for i := range s {
				s[i] += a[i]
			}
		}
		o0, dst := r*m.f.Dim, j.dst.Data[t*m.out:]
		for i, v := range s {
			dst[o0+i] = m.scale[o0+i] * v
		}
	}
	return r
}

// fused calls the family's T = 1 kernel on nb blocks of the rows at w
// (stride ld) whose first index row is r.
func (j *mulJob) fused(g geom, w unsafe.Pointer, ld, nb, r int, xp unsafe.Pointer) [8]float32 {
	switch {
	case j.m.fam == famInt8:
		return i8Rows8(w, ld, nb, xp)
	case j.m.fam == famVec2:
		return j.fusedVec2(g, w, ld, nb, r, xp)
	case g.bits == 4:
		return lut4Rows8(j.tab16(r, 0), w, ld, nb, xp)
	}
	return lutRows8(j.tab16(r, 0), g.bits, w, ld, nb, xp)
}

// fusedVec2 runs vec2Rows4 on the four 2-vector index rows at w (stride
// ld, nb whole blocks plus the partial block, if any), each read as two
// streams of h = nb/2 blocks; the blocks the streams leave (at most two,
// one of them partial) are copied to a zeroed buffer and run as one more
// pair. xp has two spare zero blocks for the pair's second x block.
func (j *mulJob) fusedVec2(g geom, w unsafe.Pointer, ld, nb, r int, xp unsafe.Pointer) [8]float32 {
	u0, u1 := j.tab16(r, 0), j.tab16(r, 1)
	h := nb / 2
	var s [8]float32
	if h > 0 {
		s = vec2Rows4(u0, u1, g.bits, w, ld, h, xp)
	}
	if 2*h == g.blocks {
		return s
	}
	var buf [4 * 32]byte // row k: block 2h at 32k, block 2h+1 (or zeros) at 32k+16
	rest := g.n - 32*h   // bytes left per row: 1…32
	for k := range 4 {
		copy(buf[32*k:32*k+rest], unsafe.Slice((*byte)(unsafe.Add(w, k*ld+32*h)), rest))
	}
	a := vec2Rows4(u0, u1, g.bits, unsafe.Pointer(&buf), 32, 1, unsafe.Add(xp, 4*32*g.P*h))
	for i := range s {
		s[i] += a[i]
	}
	return s
}

// Decode-and-multiply geometry: decRows output rows (eight memory
// streams, like the fused kernels) are decoded decChunk phase-layout
// floats at a time into a buffer small enough to stay in L1 with a chunk
// of a few x rows (8·512·4 = 16 KiB).
const (
	decRows  = 8
	decChunk = 512
)

// decBufs holds decode buffers, 64-byte aligned so that no vector load
// splits a cache line (a stack array is only 8-byte aligned).
var decBufs = sync.Pool{New: func() any {
	b := make([]float32, decRows*decChunk+16)
	off := int(uintptr(unsafe.Pointer(&b[0])) % 64 / 4)
	return (*[decRows * decChunk]float32)(b[(16-off)%16:])
}}

// decodedRows computes index rows [r0, r1) for x rows [t0, t1): up to
// eight output rows at a time are decoded (unscaled, in phase layout) a
// chunk at a time, block by block across the rows so that they stream
// from memory together, and each chunk is multiplied with every x row by
// dot4x2 and dot4x1, chunk sums added into dst; the scales come last.
func (j *mulJob) decodedRows(g geom, r0, r1, t0, t1 int) {
	m := j.m
	d, out := m.f.Dim, m.out
	for t := t0; t < t1; t++ {
		clear(j.dst.Data[t*out+r0*d : t*out+r1*d])
	}
	buf := decBufs.Get().(*[decRows * decChunk]float32) // [decRows][decChunk]
	defer decBufs.Put(buf)
	pb := unsafe.Pointer(buf)
	cb := decChunk / (16 * g.P) // blocks per chunk
	for r := r0; r < r1; r += decRows / d {
		ri := min(decRows/d, r1-r) // index rows of this group
		no := ri * d               // output rows
		clear(buf[no*decChunk : (no+3)/4*4*decChunk])
		for b0 := 0; b0 < g.blocks; b0 += cb {
			b1 := min(b0+cb, g.blocks)
			j.decode(g, r, ri, b0, b1, pb)
			n, xo := (b1-b0)*16*g.P, b0*16*g.P
			for q := 0; q < no; q += 4 {
				j.mulDecoded(unsafe.Add(pb, 4*q*decChunk), n, xo, r*d+q, min(4, no-q), t0, t1)
			}
		}
	}
	for t := t0; t < t1; t++ {
		dst := j.dst.Data[t*out:]
		for o := r0 * d; o < r1*d; o++ {
			dst[o] *= m.scale[o]
		}
	}
}

// decode writes blocks [b0, b1) of the ri index rows from r, decoded and
// unscaled, to the buffer at dst (row stride decChunk). Partial last
// blocks are copied to a zeroed array first.
func (j *mulJob) decode(g geom, r, ri, b0, b1 int, dst unsafe.Pointer) {
	idx := j.m.p.Index[:(r+ri)*g.n]
	if full := min(b1, g.nb) - b0; full > 0 {
		j.dec(g, unsafe.Pointer(&idx[r*g.n+16*b0]), g.n, ri, full, r, dst)
		dst = unsafe.Add(dst, 4*16*g.P*full)
	}
	if b1 > g.nb {
		var tb [decRows * 16]byte
		for k := range ri {
			copy(tb[16*k:16*k+g.tail], idx[(r+k)*g.n+16*g.nb:][:g.tail])
		}
		j.dec(g, unsafe.Pointer(&tb), 16, ri, 1, r, dst)
	}
}

// dec calls the family's decoder on nb blocks of the ri index rows at w
// (stride ld) from index row r (all of one codebook group, or each row
// separately when the group changes).
func (j *mulJob) dec(g geom, w unsafe.Pointer, ld, ri, nb, r int, dst unsafe.Pointer) {
	m := j.m
	if m.fam != famInt8 && m.rowsG > 0 && r/m.rowsG != (r+ri-1)/m.rowsG {
		for k := range ri {
			j.dec(g, unsafe.Add(w, k*ld), ld, 1, nb, r+k, unsafe.Add(dst, 4*k*m.f.Dim*decChunk))
		}
		return
	}
	switch m.fam {
	case famInt8:
		decI8(w, ld, ri, nb, dst, decChunk)
	case famVec2:
		decVec2(j.tab16(r, 0), j.tab16(r, 1), g.bits, w, ld, ri, nb, dst, decChunk)
	default:
		decLUT(j.tab16(r, 0), g.bits, w, ld, ri, nb, dst, decChunk)
	}
}

// mulDecoded adds to dst[t][o0+k] (k < rows ≤ 4, t0 ≤ t < t1) the dot
// products of the four decoded buffer rows at w (n floats, stride
// decChunk; rows past `rows` are zero) with x rows' phase-layout floats
// [xo, xo+n).
func (j *mulJob) mulDecoded(w unsafe.Pointer, n, xo, o0, rows, t0, t1 int) {
	out := j.m.out
	t := t0
	for ; t+2 <= t1; t += 2 {
		s := dot4x2(w, decChunk, n, j.xptr(t, xo), j.xptr(t+1, xo))
		d0, d1 := j.dst.Data[t*out+o0:][:rows], j.dst.Data[(t+1)*out+o0:][:rows]
		for k := range rows {
			d0[k] += s[2*k]
			d1[k] += s[2*k+1]
		}
	}
	if t < t1 {
		s := dot4x1(w, decChunk, n, j.xptr(t, xo))
		d := j.dst.Data[t*out+o0:][:rows]
		for k := range rows {
			d[k] += s[k]
		}
	}
}

// tileX is the number of x rows the T > 1 register kernels (lut1x8, i8x8)
// take at a time; tileO the output rows one pass keeps partial sums for;
// tileC the phase-layout x floats per row of a column chunk (eight x rows'
// chunks, 16 KiB, stay in L1 while the tileO rows run over them).
const (
	tileX = 8
	tileO = 16
	tileC = 512
)

// tiledRows computes index rows [r0, r1) for x rows [t0, t1), t1−t0 a
// multiple of tileX, with the register kernels: up to tileO output rows
// at a time, each multiplied with eight x rows per call a column chunk at
// a time, vector partial sums kept in a buffer, summed and scaled at the
// end. A row's partial last block is copied to a zeroed buffer and run
// as one more block.
func (j *mulJob) tiledRows(g geom, r0, r1, t0, t1 int) {
	m := j.m
	d, out := m.f.Dim, m.out
	idx := m.p.Index[:r1*g.n]
	buf := decBufs.Get().(*[decRows * decChunk]float32)
	defer decBufs.Put(buf)
	acc := (*[tileO][8][16]float32)(unsafe.Pointer(buf))
	cb := tileC / (16 * g.P) // blocks per chunk
	for rg := r0; rg < r1; rg += tileO / d {
		ri := min(tileO/d, r1-rg) // index rows of this group
		no := ri * d
		for t := t0; t < t1; t += tileX {
			clear(acc[:no])
			for c0 := 0; c0 < g.nb; c0 += cb {
				nb := min(cb, g.nb-c0)
				xp := j.xqptr(t, g.P*c0)
				for k := range ri {
					j.tiled(g, unsafe.Pointer(&idx[(rg+k)*g.n+16*c0]), nb, rg+k, xp, acc[k*d:])
				}
			}
			if g.tail > 0 {
				xp := j.xqptr(t, g.xt/16)
				for k := range ri {
					var tb [16]byte
					copy(tb[:g.tail], idx[(rg+k)*g.n+16*g.nb:][:g.tail])
					j.tiled(g, unsafe.Pointer(&tb), 1, rg+k, xp, acc[k*d:])
				}
			}
			for k := range no {
				o := rg*d + k
				sc := m.scale[o]
				for i := range tileX {
					var s float32
					for _, v := range acc[k][i] {
						s += v
					}
					j.dst.Data[(t+i)*out+o] = sc * s
				}
			}
		}
	}
}

// tiled runs the family's register kernel on nb blocks of index row r at
// w for eight x rows at xp, adding to acc (acc[c] for component c).
func (j *mulJob) tiled(g geom, w unsafe.Pointer, nb, r int, xq unsafe.Pointer, acc [][8][16]float32) {
	switch j.m.fam {
	case famInt8:
		i8x8(w, nb, xq, &acc[0], 1)
	case famVec2:
		lut1x8(j.tab16(r, 0), w, nb, xq, &acc[0], 1)
		lut1x8(j.tab16(r, 1), w, nb, xq, &acc[1], 1)
	default:
		lut1x8(j.tab16(r, 0), w, nb, xq, &acc[0], 1)
	}
}
