//go:build goexperiment.simd && amd64

package lut

import (
	"simd/archsimd"
	"unsafe"
)

// fastReady: the fast kernels (kernel_avx512.go) need AVX-512 F/BW/DQ/VL.
// On other CPUs every matrix runs on the portable kernels.
var fastReady = archsimd.X86.AVX512()

// geom is the block geometry of a byte-aligned index row.
type geom struct {
	bits, P  int // code width, codes per byte
	n        int // bytes per index row
	nb, tail int // whole 16-byte blocks, bytes in the last partial block
	xt       int // offset in floats of the partial block's x in a row of xp
}

func (j *mulJob) geom() geom {
	b := j.m.f.Bits
	n := j.m.in * b / 8
	return geom{bits: b, P: 8 / b, n: n, nb: n / 16, tail: n % 16, xt: n / 16 * 16 * (8 / b)}
}

// prepare lays out every row of x in phase layout (permuteX) in j.xp,
// each row padded with zeros to whole 16-byte blocks of codes.
func (j *mulJob) prepare() {
	g := j.geom()
	j.xs = (g.n + 15) / 16 * 16 * g.P
	need := j.x.Rows * j.xs
	if cap(j.xp) < need {
		j.xp = make([]float32, need)
	}
	j.xp = j.xp[:need]
	for t := range j.x.Rows {
		permuteX(j.xp[t*j.xs:(t+1)*j.xs], j.x.Row(t), g.P)
	}
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
	for b0 := 0; b0 < len(dst); b0 += bs {
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

// fastRows computes index rows [r0, r1) for x rows [t0, t1) with the
// AVX-512 kernels of the matrix's family.
func (j *mulJob) fastRows(r0, r1, t0, t1 int) {
	switch j.m.fam {
	case famLUT:
		j.lutRows(r0, r1, t0, t1)
	case famVec2:
		j.vecRows(r0, r1, t0, t1)
	case famInt8:
		j.i8Rows(r0, r1, t0, t1)
	}
}

// xptr returns the phase-layout row t of x, offset by off floats.
func (j *mulJob) xptr(t, off int) unsafe.Pointer { return unsafe.Pointer(&j.xp[t*j.xs+off]) }

// tab16 returns the first 16 floats of index row r's component-c table.
func (j *mulJob) tab16(r, c int) *[16]float32 { return (*[16]float32)(j.m.table(r, c)) }

// put stores scale[o]·s into dst[t][o].
func (j *mulJob) put(t, o int, s float32) { j.dst.Data[t*j.m.out+o] = j.m.scale[o] * s }

// tailRows copies the partial last block of k index rows starting at r
// into buf (16 bytes per row, zero-padded).
func (j *mulJob) tailRows(buf *[64]byte, g geom, r, k int) {
	for i := range k {
		copy(buf[16*i:16*i+g.tail], j.m.p.Index[(r+i)*g.n+16*g.nb:][:g.tail])
	}
}

// lutRows drives the scalar-LUT kernels: four index rows of one codebook
// group at a time for one x row, otherwise one index row for four x rows.
func (j *mulJob) lutRows(r0, r1, t0, t1 int) {
	m, g := j.m, j.geom()
	idx := m.p.Index[:r1*g.n]
	r := r0
	if t1-t0 == 1 {
		for ; r+4 <= r1 && (m.rowsG == 0 || r/m.rowsG == (r+3)/m.rowsG); r += 4 {
			tab, w := j.tab16(r, 0), unsafe.Pointer(&idx[r*g.n])
			var s0, s1, s2, s3 float32
			if g.nb > 0 {
				if g.bits == 4 {
					s0, s1, s2, s3 = lut4Rows4(tab, w, g.n, g.nb, j.xptr(t0, 0))
				} else {
					s0, s1, s2, s3 = lutRows4(tab, g.bits, w, g.n, g.nb, j.xptr(t0, 0))
				}
			}
			if g.tail > 0 {
				var buf [64]byte
				j.tailRows(&buf, g, r, 4)
				a0, a1, a2, a3 := lutRows4(tab, g.bits, unsafe.Pointer(&buf), 16, 1, j.xptr(t0, g.xt))
				s0, s1, s2, s3 = s0+a0, s1+a1, s2+a2, s3+a3
			}
			j.put(t0, r, s0)
			j.put(t0, r+1, s1)
			j.put(t0, r+2, s2)
			j.put(t0, r+3, s3)
		}
	}
	for ; r < r1; r++ {
		tab, w := j.tab16(r, 0), unsafe.Pointer(&idx[r*g.n])
		var buf [64]byte
		if g.tail > 0 {
			j.tailRows(&buf, g, r, 1)
		}
		for t := t0; t < t1; t += 4 {
			ta, tb, tc := min(t+1, t1-1), min(t+2, t1-1), min(t+3, t1-1)
			var s0, s1, s2, s3 float32
			if g.nb > 0 {
				s0, s1, s2, s3 = lutTile4(tab, g.bits, w, g.nb, j.xptr(t, 0), j.xptr(ta, 0), j.xptr(tb, 0), j.xptr(tc, 0))
			}
			if g.tail > 0 {
				a0, a1, a2, a3 := lutTile4(tab, g.bits, unsafe.Pointer(&buf), 1,
					j.xptr(t, g.xt), j.xptr(ta, g.xt), j.xptr(tb, g.xt), j.xptr(tc, g.xt))
				s0, s1, s2, s3 = s0+a0, s1+a1, s2+a2, s3+a3
			}
			j.put(t, r, s0)
			j.put(ta, r, s1)
			j.put(tb, r, s2)
			j.put(tc, r, s3)
		}
	}
}

// vecRows drives the 2-vector kernels: index row r holds the codes of
// output rows 2r and 2r+1. Two index rows of one group at a time for one
// x row, otherwise one index row for two x rows.
func (j *mulJob) vecRows(r0, r1, t0, t1 int) {
	m, g := j.m, j.geom()
	idx := m.p.Index[:r1*g.n]
	r := r0
	if t1-t0 == 1 {
		for ; r+2 <= r1 && (m.rowsG == 0 || r/m.rowsG == (r+1)/m.rowsG); r += 2 {
			u0, u1, w := j.tab16(r, 0), j.tab16(r, 1), unsafe.Pointer(&idx[r*g.n])
			var s00, s01, s10, s11 float32
			if g.nb > 0 {
				s00, s01, s10, s11 = vec2Rows2(u0, u1, g.bits, w, g.n, g.nb, j.xptr(t0, 0))
			}
			if g.tail > 0 {
				var buf [64]byte
				j.tailRows(&buf, g, r, 2)
				a00, a01, a10, a11 := vec2Rows2(u0, u1, g.bits, unsafe.Pointer(&buf), 16, 1, j.xptr(t0, g.xt))
				s00, s01, s10, s11 = s00+a00, s01+a01, s10+a10, s11+a11
			}
			j.put(t0, 2*r, s00)
			j.put(t0, 2*r+1, s01)
			j.put(t0, 2*r+2, s10)
			j.put(t0, 2*r+3, s11)
		}
	}
	for ; r < r1; r++ {
		u0, u1, w := j.tab16(r, 0), j.tab16(r, 1), unsafe.Pointer(&idx[r*g.n])
		var buf [64]byte
		if g.tail > 0 {
			j.tailRows(&buf, g, r, 1)
		}
		for t := t0; t < t1; t += 2 {
			ta := min(t+1, t1-1)
			var s00, s10, s01, s11 float32
			if g.nb > 0 {
				s00, s10, s01, s11 = vec2Tile2(u0, u1, g.bits, w, g.nb, j.xptr(t, 0), j.xptr(ta, 0))
			}
			if g.tail > 0 {
				a00, a10, a01, a11 := vec2Tile2(u0, u1, g.bits, unsafe.Pointer(&buf), 1, j.xptr(t, g.xt), j.xptr(ta, g.xt))
				s00, s10, s01, s11 = s00+a00, s10+a10, s01+a01, s11+a11
			}
			j.put(t, 2*r, s00)
			j.put(t, 2*r+1, s10)
			j.put(ta, 2*r, s01)
			j.put(ta, 2*r+1, s11)
		}
	}
}

// i8Rows drives the INT8 kernels: four rows at a time for one x row,
// otherwise one row for four x rows.
func (j *mulJob) i8Rows(r0, r1, t0, t1 int) {
	g := j.geom()
	idx := j.m.p.Index[:r1*g.n]
	r := r0
	if t1-t0 == 1 {
		for ; r+4 <= r1; r += 4 {
			w := unsafe.Pointer(&idx[r*g.n])
			var s0, s1, s2, s3 float32
			if g.nb > 0 {
				s0, s1, s2, s3 = i8Rows4(w, g.n, g.nb, j.xptr(t0, 0))
			}
			if g.tail > 0 {
				var buf [64]byte
				j.tailRows(&buf, g, r, 4)
				a0, a1, a2, a3 := i8Rows4(unsafe.Pointer(&buf), 16, 1, j.xptr(t0, g.xt))
				s0, s1, s2, s3 = s0+a0, s1+a1, s2+a2, s3+a3
			}
			j.put(t0, r, s0)
			j.put(t0, r+1, s1)
			j.put(t0, r+2, s2)
			j.put(t0, r+3, s3)
		}
	}
	for ; r < r1; r++ {
		w := unsafe.Pointer(&idx[r*g.n])
		var buf [64]byte
		if g.tail > 0 {
			j.tailRows(&buf, g, r, 1)
		}
		for t := t0; t < t1; t += 4 {
			ta, tb, tc := min(t+1, t1-1), min(t+2, t1-1), min(t+3, t1-1)
			var s0, s1, s2, s3 float32
			if g.nb > 0 {
				s0, s1, s2, s3 = i8Tile4(w, g.nb, j.xptr(t, 0), j.xptr(ta, 0), j.xptr(tb, 0), j.xptr(tc, 0))
			}
			if g.tail > 0 {
				a0, a1, a2, a3 := i8Tile4(unsafe.Pointer(&buf), 1, j.xptr(t, g.xt), j.xptr(ta, g.xt), j.xptr(tb, g.xt), j.xptr(tc, g.xt))
				s0, s1, s2, s3 = s0+a0, s1+a1, s2+a2, s3+a3
			}
			j.put(t, r, s0)
			j.put(ta, r, s1)
			j.put(tb, r, s2)
			j.put(tc, r, s3)
		}
	}
}
