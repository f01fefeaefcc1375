//go:build goexperiment.simd && amd64

package lut

import (
	"simd/archsimd"
	"sync"
	"unsafe"
)

// fastReady: the fast kernels (kernel_avx512.go) need AVX-512 F/BW/DQ/VL.
// On other CPUs every matrix runs on the portable kernel.
// fastX is x in the fast kernels' layouts, part of a mulJob.
type fastX struct {
	xp []float32 // [T][xs] x in the fast kernels' layout (kernel_avx512.go)
	xs int       // floats per row of xp
	xq []float32 // [T/4][xs/16][4][16] whole tiles of 4 rows of xp interleaved (kernel_simd.go)
	xw []float32 // T = 1, 4-bit codes: x in the wide layout (rows_amd64.s), else empty
}

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
	j.xw = j.xw[:0]
	if j.x.Rows == 1 && g.bits == 4 && j.m.fam == famVec2 {
		// Whole wide blocks plus one spare (fusedVec4's last pair).
		need := (g.n/64 + 2) * 128
		if cap(j.xw) < need {
			j.xw = make([]float32, need)
		}
		j.xw = j.xw[:need]
		permuteX(j.xw, j.x.Row(0), 8)
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
				copy16(dst[v*tileX*16:], src[16*v:])
			}
		}
	}
}

// tiledOK reports whether the T > 1 register kernels (lut4Tile8,
// i8Tile8 and their four-row twins) run the matrix: INT8 and 4-bit
// scalar and 2-vector LUTs (each row of a pair has its own table, so
// groups of any size).
func (j *mulJob) tiledOK(g geom) bool {
	return j.m.fam == famInt8 || g.bits == 4 && (j.m.fam == famLUT || j.m.fam == famVec2)
}

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
		archsimd.ClearAVXUpperBits() // the scalar tail below would run in the slow dirty-upper state
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
	if m.fam == famLUT && g.bits == 4 && g.tail == 0 {
		return j.lut4Runs(g, r0, r1, t)
	}
	R := 8 / m.f.Dim // index rows per kernel call
	idx := m.p.Index[:r1*g.n]
	r := r0
	for ; r+R <= r1; r += R {
		if m.rowsG > 0 && r/m.rowsG != (r+R-1)/m.rowsG {
			j.decodedRows(g, r, r+R, t, t+1)
			continue
		}
		if len(j.xw) > 0 {
			j.store(r, t, j.fusedVec4(g, unsafe.Pointer(&idx[r*g.n]), r))
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
		j.store(r, t, s)
	}
	return r
}

// lut4Runs is fusedRows for 4-bit scalar LUTs whose rows are whole
// blocks: each run of eight-row groups that share a codebook is one
// lut4Groups call, which stores the scaled sums itself.
func (j *mulJob) lut4Runs(g geom, r0, r1, t int) int {
	m := j.m
	idx := m.p.Index[:r1*g.n]
	dst := j.dst.Data[t*m.out : (t+1)*m.out]
	r := r0
	for r+8 <= r1 {
		end := r1
		if m.rowsG > 0 {
			end = min(r1, (r/m.rowsG+1)*m.rowsG)
		}
		n := (end - r) / 8
		if n == 0 { // eight rows across two codebook groups
			j.decodedRows(g, r, r+8, t, t+1)
			r += 8
			continue
		}
		lut4Groups(j.tab16(r, 0), unsafe.Pointer(&idx[r*g.n]), g.n, g.nb, j.xptr(t, 0), n, &m.scale[r], &dst[r])
		r += 8 * n
	}
	return r
}

// store writes the scaled sums s of the eight output rows from index row
// r to row t of dst.
func (j *mulJob) store(r, t int, s [8]float32) {
	m := j.m
	o0, dst := r*m.f.Dim, j.dst.Data[t*m.out:]
	for i, v := range s {
		dst[o0+i] = m.scale[o0+i] * v
	}
}

// fusedVec4 runs the wide 2-vector kernel (4-bit codes, x in j.xw) on
// the four index rows from r, whose bytes start at w, each read as two
// streams of h = n/128 wide blocks. The bytes the streams leave (up to
// 127 per row) are copied to a zeroed buffer and run as one more pair;
// j.xw has zeros past x and one spare block for that pair.
func (j *mulJob) fusedVec4(g geom, w unsafe.Pointer, r int) (s [8]float32) {
	n, xw := g.n, unsafe.Pointer(&j.xw[0])
	u0, u1 := j.tab16(r, 0), j.tab16(r, 1)
	h := n / 128
	if h > 0 {
		wideVec4(u0, u1, w, n, h, xw, uintptr(w)+uintptr(4*n), &s)
	}
	rest := n - 128*h
	if rest == 0 {
		return s
	}
	var buf [4 * 128]byte
	for k := range 4 {
		copy(buf[128*k:128*k+rest], unsafe.Slice((*byte)(unsafe.Add(w, k*n+128*h)), rest))
	}
	var a [8]float32
	b := unsafe.Pointer(&buf)
	wideVec4(u0, u1, b, 128, 1, unsafe.Add(xw, 4*256*h), uintptr(b), &a)
	for i := range s {
		s[i] += a[i]
	}
	return s
}

// fused calls the family's T = 1 kernel on nb blocks of the rows at w
// (stride ld) whose first index row is r.
func (j *mulJob) fused(g geom, w unsafe.Pointer, ld, nb, r int, xp unsafe.Pointer) [8]float32 {
	switch {
	case j.m.fam == famVec2:
		return j.fusedVec2(g, w, ld, nb, r, xp)
	case j.m.fam == famLUT && g.bits != 4 && ld == g.n && (r+16)*g.n <= len(j.m.p.Index):
		return j.fusedPF(g, w, nb, r, xp) // (INT8 runs slower with it)
	}
	return j.rows8(g, w, ld, nb, r, xp)
}

// rows8 calls the family's eight-row T = 1 kernel (scalar LUT or INT8).
func (j *mulJob) rows8(g geom, w unsafe.Pointer, ld, nb, r int, xp unsafe.Pointer) [8]float32 {
	switch {
	case j.m.fam == famInt8:
		return i8Rows8(w, ld, nb, xp)
	case g.bits == 4:
		var s [8]float32
		lut4Rows8(j.tab16(r, 0), w, ld, nb, xp, uintptr(w)+uintptr(8*ld), &s)
		return s
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

// T > 1 register-kernel geometry (tiledRows): tileX x rows per tile of
// the layout xq, tileG x rows (two tiles) per pass over the weights and
// per kernel call, tileO output rows per pass (their vector partial sums,
// 8 KiB, stay in L1) and tileC phase-layout floats per row of a column
// chunk (tileG x rows' chunks, 16 KiB, stay in L1 too).
const (
	tileX = 4
	tileG = 8
	tileO = 16
	tileC = 512
)

// tileAcc holds the vector partial sums of one tiledRows pass: [pair][row
// of the pair][x row][16 lanes].
type tileAcc = [tileO / 2][2][tileG][16]float32

// tiledRows computes index rows [r0, r1) for x rows [t0, t1), t1−t0 a
// multiple of tileX, with the register kernels (tile_amd64.s): tileO
// output rows at a time as pairs (tilePairs), for up to tileG x rows, a
// column chunk at a time, every pair of the chunk in one kernel call.
// Codes are decoded in registers, so that each decoded weight serves up
// to tileG x rows. Vector partial sums are kept in a buffer, summed and
// scaled at the end. The rows' partial last blocks are copied to a zeroed
// buffer and run as one more chunk.
func (j *mulJob) tiledRows(g geom, r0, r1, t0, t1 int) {
	m := j.m
	d, out := m.f.Dim, m.out
	buf := decBufs.Get().(*[decRows * decChunk]float32)
	defer decBufs.Put(buf)
	// buf: partial sums (tileAcc, 2048 floats), then the pairs' partial
	// last blocks ([tileO/2][32]byte).
	acc := (*tileAcc)(unsafe.Pointer(buf))
	last := unsafe.Add(unsafe.Pointer(buf), unsafe.Sizeof(tileAcc{}))
	var pairs, tails [tileO / 2]tilePair
	var s [2 * tileG]float32
	cb := tileC / (16 * g.P) // blocks per chunk
	for rg := r0; rg < r1; rg += tileO / d {
		ri := min(tileO/d, r1-rg) // index rows of this group
		no := ri * d
		np := j.tilePairs(g, rg, ri, &pairs, &tails, last)
		for tg := t0; tg < t1; tg += tileG {
			nt := min(tileG, t1-tg) // x rows of this pass: tileX or tileG
			clear(acc[:np])
			for c0 := 0; c0 < g.nb; c0 += cb {
				j.prefetchNext(g, rg, ri, c0, cb)
				j.tiled(&pairs, np, 16*c0, min(cb, g.nb-c0), g.P*c0, tg, nt, acc)
			}
			if g.tail > 0 {
				j.prefetchNext(g, rg, ri, g.nb, cb)
				j.tiled(&tails, np, 0, 1, g.P*g.nb, tg, nt, acc)
			}
			for p := range np {
				sumTile(&acc[p], &s)
				for k := range min(2, no-2*p) {
					o := rg*d + 2*p + k
					sc, dst := m.scale[o], j.dst.Data[tg*out+o:]
					for i := range nt {
						dst[i*out] = sc * s[tileG*k+i]
					}
				}
			}
		}
	}
}

// prefetchNext asks for the codes tiledRows runs after blocks [c0,
// c0+cb) of the ri index rows from rg: the same rows' next chunk, or
// after their last block the first chunk of the next ri rows (if the
// matrix has them), into L2. One chunk ahead is about a microsecond at
// T = 8: the hardware prefetcher alone, with the rows read a chunk at a
// time in turn, leaves the kernels waiting on memory (measured on one
// core at T = 8: LUT4, 2x16 and INT8 ran 16–25% slower from DRAM than
// from L2; with this, 8–16%; into L1 instead, INT8 gained nothing).
func (j *mulJob) prefetchNext(g geom, rg, ri, c0, cb int) {
	idx := j.m.p.Index
	r, b := rg, c0+cb
	if 16*b >= g.n {
		r, b = rg+ri, 0
		ri = min(ri, len(idx)/g.n-r)
	}
	if ri <= 0 {
		return
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(idx))) + uintptr(r*g.n+16*b)
	lines := (min(16*cb, g.n-16*b) + 2*63) / 64 // whatever each row's alignment
	prefetchRows(start, g.n, ri, lines)
}

// tilePairs sets pairs to the pairs of output rows of the ri index rows
// from rg and returns their number: two scalar or INT8 rows (an odd last
// row paired with itself, its second sums unused) or one 2-vector row.
// tails gets the same pairs with the rows' partial last blocks (if any)
// copied to 32 zeroed bytes each at last.
func (j *mulJob) tilePairs(g geom, rg, ri int, pairs, tails *[tileO / 2]tilePair, last unsafe.Pointer) int {
	m := j.m
	idx := m.p.Index[:(rg+ri)*g.n]
	np := 0
	for k := 0; k < ri; k += 2 / m.f.Dim {
		ra, rb := rg+k, rg+min(k+1, ri-1)
		if m.fam == famVec2 {
			rb = ra
		}
		p := tilePair{wa: unsafe.Pointer(&idx[ra*g.n]), wb: unsafe.Pointer(&idx[rb*g.n])}
		switch m.fam {
		case famVec2:
			p.ta, p.tb = j.tab16(ra, 0), j.tab16(ra, 1)
		case famLUT:
			p.ta, p.tb = j.tab16(ra, 0), j.tab16(rb, 0)
		}
		pairs[np] = p
		if g.tail > 0 {
			lb := unsafe.Slice((*byte)(unsafe.Add(last, 32*np)), 32)
			clear(lb)
			copy(lb[:g.tail], idx[ra*g.n+16*g.nb:][:g.tail])
			copy(lb[16:16+g.tail], idx[rb*g.n+16*g.nb:][:g.tail])
			p.wa, p.wb = unsafe.Pointer(&lb[0]), unsafe.Pointer(&lb[16])
			tails[np] = p
		}
		np++
	}
	return np
}

// tiled runs the family's register kernel on nb blocks from byte off of
// the np pairs at pp, for the nt x rows from tg (x from vector xv of the
// tile layout), adding to acc.
func (j *mulJob) tiled(pp *[tileO / 2]tilePair, np, off, nb, xv, tg, nt int, acc *tileAcc) {
	x0 := j.xqptr(tg, xv)
	switch {
	case j.m.fam == famInt8 && nt == tileG:
		i8Tile8(pp, np, off, nb, x0, j.xqptr(tg+tileX, xv), acc)
	case j.m.fam == famInt8:
		i8Tile4(pp, np, off, nb, x0, acc)
	case nt == tileG:
		lut4Tile8(pp, np, off, nb, x0, j.xqptr(tg+tileX, xv), acc)
	default:
		lut4Tile4(pp, np, off, nb, x0, acc)
	}
}

// pfChunk is the number of blocks per row fusedPF runs between
// prefetches.
const pfChunk = 16

// fusedPF runs rows8 on the eight whole rows at w (nb blocks, index rows
// r…r+7 of a matrix that has eight more) pfChunk blocks at a time, and
// before each chunk prefetches the same share of the next eight rows
// (contiguous, 128 bytes per block): the hardware prefetcher alone leaves
// the decode step waiting on memory much of the time.
func (j *mulJob) fusedPF(g geom, w unsafe.Pointer, nb, r int, xp unsafe.Pointer) [8]float32 {
	next := unsafe.Pointer(&j.m.p.Index[(r+8)*g.n])
	var s [8]float32
	for b0 := 0; b0 < nb; b0 += pfChunk {
		n := min(pfChunk, nb-b0)
		prefetchLines(unsafe.Add(next, 128*b0), 2*n)
		a := j.rows8(g, unsafe.Add(w, 16*b0), g.n, n, r, unsafe.Add(xp, 64*g.P*b0))
		for i := range s {
			s[i] += a[i]
		}
	}
	return s
}
