//go:build goexperiment.simd && amd64

package lut

import (
	"simd/archsimd"
	"unsafe"
)

// AVX-512 kernels: 16 float32 lanes, fused multiply-add, float32 sums.
//
// Codes are decoded in registers. A 16-byte block of a byte-aligned index
// row holds P = 8/bits codes per byte; loaded and zero-extended to 16
// uint32 lanes (VPMOVZXBD), lane i holds byte i, whose phase-p code (bits
// b·p …) belongs to column P·i + p of the block. VPERMPS uses only the low
// 4 bits of each lane, and the tables repeat with period K up to 16
// entries (Matrix.buildTables), so permuting the table by the lanes
// shifted right by b·p yields the 16 weights of phase p without masking.
// One FMA multiplies them with the 16 x values of phase p: x is first
// rearranged into that "phase layout" (permuteX), once per call. INT8 is
// simpler: 16 int8 codes are sign-extended (VPMOVSXBD) and converted
// (VCVTDQ2PS) in natural order (P = 1).
//
// T = 1 (decode) runs fused kernels over eight weight rows at once: eight
// concurrent memory streams per core, which DRAM serves much faster than
// four. The 4-bit ones (LUT4, 2-vector 2x16), the formats that matter
// most, are in assembly (rows_amd64.s) and prefetch the next rows as they
// go; the 2-vector one reads 64-byte "wide" blocks in its own x layout
// (mulJob.xw). For T > 1, 4-bit LUTs and INT8 run assembly register
// kernels (tile_amd64.s: lut4Tile8, i8Tile8) on pairs of output rows and
// eight x rows at a time, decoding in registers, with x in tile layout
// (mulJob.xq); other LUTs decode eight rows a chunk at a time (dec*) into
// a buffer for the dense 4×2 kernels (dot4x2, dot4x1). Either way decoding
// is paid once per weight (per eight x rows), not once per x row.
//
// Measured on Zen 4 (2 cores): a 512-bit VPERMPS issues about once per
// two cycles, which bounds the T = 1 LUT kernels in cache (one permute
// per 16 weights: 2-vector formats, with 4 weights per byte, reach half
// the bytes per second of LUT4 in cache); in Go, VFMADD213PS writes its
// first operand, so each accumulator costs a register move per loop
// iteration (the allocator cannot accumulate in place), and unrolling to
// save the moves spills — the reason the 4-bit kernels are assembly.
//
// Loads go through unsafe pointers so that each is one instruction with no
// bounds check. They stay in bounds because the drivers (kernel_simd.go)
// pass only whole 16-byte blocks of rows that exist (checked against the
// slice length first) and copy a row's last partial block into a zeroed
// stack buffer; xp, xw and the decode buffer are sized for whole blocks.
// Each Go kernel keeps at most 13 vectors live (Go allocates Z0–Z14 only).

// prefetchLines asks for the n cache lines from p (prefetch_amd64.s:
// PREFETCHT0, which never faults, so p may run past the data).
//
//go:noescape
func prefetchLines(p unsafe.Pointer, n int)

// prefetchRows asks for the n cache lines from p + k·ld for k < rows to
// be brought into L2 (prefetch_amd64.s: PREFETCHT1). p is a uintptr: the
// lines may lie past the data.
func prefetchRows(p uintptr, ld, rows, n int)

// ldIdx loads the 16 code bytes at p, zero-extended to uint32 lanes.
func ldIdx(p unsafe.Pointer) archsimd.Uint32x16 {
	return archsimd.LoadUint8x16((*[16]uint8)(p)).ExtendToUint32()
}

// ldI8 loads 16 int8 codes at p as float32 lanes.
func ldI8(p unsafe.Pointer) archsimd.Float32x16 {
	return archsimd.LoadInt8x16((*[16]int8)(p)).ExtendToInt32().ConvertToFloat32()
}

// ldX loads the 16 float32 at p[i…i+15].
func ldX(p unsafe.Pointer, i int) archsimd.Float32x16 {
	return archsimd.LoadFloat32x16((*[16]float32)(unsafe.Add(p, 4*i)))
}

// stX stores v at p[i…i+15].
func stX(p unsafe.Pointer, i int, v archsimd.Float32x16) {
	v.Store((*[16]float32)(unsafe.Add(p, 4*i)))
}

// hsum returns the sum of v's 16 lanes.
func hsum(v archsimd.Float32x16) float32 {
	h := v.GetLo().Add(v.GetHi())
	q := h.GetLo().Add(h.GetHi())
	q = q.AddPairs(q)
	q = q.AddPairs(q)
	return q.GetElem(0)
}

// lutRows8 returns Σ_j tab[code(j)]·x[j] for the eight index rows at
// w + k·ld (nb whole 16-byte blocks each, 1- or 2-bit codes, one shared
// table) and one x row in phase layout at xp. The phases of one row's
// block run as a loop (lutPhases): the loop boundary keeps Go's scheduler
// from hoisting every row's loads and permutes to the top of the block,
// which spills vectors to the stack.
func lutRows8(tab *[16]float32, bits int, w unsafe.Pointer, ld, nb int, xp unsafe.Pointer) (s [8]float32) {
	t := archsimd.LoadFloat32x16(tab)
	P, sh := 8/bits, archsimd.BroadcastUint32x16(uint32(bits))
	var a0, a1, a2, a3, a4, a5, a6, a7 archsimd.Float32x16
	for b := range nb {
		q, xb := unsafe.Add(w, 16*b), unsafe.Add(xp, 64*P*b)
		a0 = lutPhases(t, ldIdx(q), xb, P, sh, a0)
		a1 = lutPhases(t, ldIdx(unsafe.Add(q, ld)), xb, P, sh, a1)
		a2 = lutPhases(t, ldIdx(unsafe.Add(q, 2*ld)), xb, P, sh, a2)
		a3 = lutPhases(t, ldIdx(unsafe.Add(q, 3*ld)), xb, P, sh, a3)
		a4 = lutPhases(t, ldIdx(unsafe.Add(q, 4*ld)), xb, P, sh, a4)
		a5 = lutPhases(t, ldIdx(unsafe.Add(q, 5*ld)), xb, P, sh, a5)
		a6 = lutPhases(t, ldIdx(unsafe.Add(q, 6*ld)), xb, P, sh, a6)
		a7 = lutPhases(t, ldIdx(unsafe.Add(q, 7*ld)), xb, P, sh, a7)
	}
	return [8]float32{hsum(a0), hsum(a1), hsum(a2), hsum(a3), hsum(a4), hsum(a5), hsum(a6), hsum(a7)}
}

// lutPhases adds the P phases of one block of codes c times the block's
// x (phase layout at xb) to a. Shifts use per-lane counts (VPSRLVD, one
// instruction) rather than ShiftAllRight, whose count goes through a
// general register every time.
func lutPhases(t archsimd.Float32x16, c archsimd.Uint32x16, xb unsafe.Pointer, P int, sh archsimd.Uint32x16, a archsimd.Float32x16) archsimd.Float32x16 {
	for p := range P {
		a = t.Permute(c).MulAdd(ldX(xb, 16*p), a)
		c = c.ShiftRight(sh)
	}
	return a
}

// lut4Rows8 is lutRows8 for 4-bit codes, in assembly (rows_amd64.s): s
// gets the eight sums; pf, advanced 128 bytes per block (the next eight
// rows' share), is prefetched as the rows stream.
//
//go:noescape
func lut4Rows8(tab *[16]float32, w unsafe.Pointer, ld, nb int, xp unsafe.Pointer, pf uintptr, s *[8]float32)

// lut4Groups runs lut4Rows8 on groups consecutive groups of eight
// index rows from w (stride ld, one table) and stores the scaled sums:
// dst[k] = scale[k]·(sum of row k), k < 8·groups, in assembly
// (rows_amd64.s), bit for bit what lut4Rows8 and mulJob.store give, with
// no Go code between groups.
//
//go:noescape
func lut4Groups(tab *[16]float32, w unsafe.Pointer, ld, nb int, xp unsafe.Pointer, groups int, scale, dst *float32)

// wideVec4 is the T = 1 kernel of 4-bit 2-vector LUTs, in assembly
// (rows_amd64.s, which describes the wide layout it reads): the four index rows at w + k·ld each read as two streams of h wide blocks
// (x at xw and xw + 512·h bytes); s[2k+c] is row k, component c.
//
//go:noescape
func wideVec4(u0, u1 *[16]float32, w unsafe.Pointer, ld, h int, xw unsafe.Pointer, pf uintptr, s *[8]float32)

// vec2Rows4 is the T = 1 kernel of 2-vector formats: four index rows at
// w + k·ld (one shared codebook with components u0, u1), each code
// selecting the weights of two output rows; s[2k+c] is index row k,
// component c. Each row is read as two streams, blocks [0, h) and
// [h, 2h), so that the four rows make eight concurrent memory streams.
// Rows sit in `if ld > 0` blocks as in lut4Rows8.
func vec2Rows4(u0, u1 *[16]float32, bits int, w unsafe.Pointer, ld, h int, xp unsafe.Pointer) (s [8]float32) {
	t0, t1 := archsimd.LoadFloat32x16(u0), archsimd.LoadFloat32x16(u1)
	P, sh := 8/bits, archsimd.BroadcastUint32x16(uint32(bits))
	wh, xh := 16*h, 64*P*h // offsets of the second stream
	var a0, a1, a2, a3, a4, a5, a6, a7 archsimd.Float32x16
	for b := range h {
		q, xa := unsafe.Add(w, 16*b), unsafe.Add(xp, 64*P*b)
		qb, xb := unsafe.Add(q, wh), unsafe.Add(xa, xh)
		if ld > 0 {
			a0, a1 = vecPhases(t0, t1, ldIdx(q), xa, P, sh, a0, a1)
		}
		if ld > 0 {
			a0, a1 = vecPhases(t0, t1, ldIdx(qb), xb, P, sh, a0, a1)
		}
		if ld > 0 {
			a2, a3 = vecPhases(t0, t1, ldIdx(unsafe.Add(q, ld)), xa, P, sh, a2, a3)
		}
		if ld > 0 {
			a2, a3 = vecPhases(t0, t1, ldIdx(unsafe.Add(qb, ld)), xb, P, sh, a2, a3)
		}
		if ld > 0 {
			a4, a5 = vecPhases(t0, t1, ldIdx(unsafe.Add(q, 2*ld)), xa, P, sh, a4, a5)
		}
		if ld > 0 {
			a4, a5 = vecPhases(t0, t1, ldIdx(unsafe.Add(qb, 2*ld)), xb, P, sh, a4, a5)
		}
		if ld > 0 {
			a6, a7 = vecPhases(t0, t1, ldIdx(unsafe.Add(q, 3*ld)), xa, P, sh, a6, a7)
		}
		if ld > 0 {
			a6, a7 = vecPhases(t0, t1, ldIdx(unsafe.Add(qb, 3*ld)), xb, P, sh, a6, a7)
		}
	}
	return [8]float32{hsum(a0), hsum(a1), hsum(a2), hsum(a3), hsum(a4), hsum(a5), hsum(a6), hsum(a7)}
}

// vecPhases is lutPhases for two components.
func vecPhases(t0, t1 archsimd.Float32x16, c archsimd.Uint32x16, xb unsafe.Pointer, P int, sh archsimd.Uint32x16, a0, a1 archsimd.Float32x16) (archsimd.Float32x16, archsimd.Float32x16) {
	for p := range P {
		x := ldX(xb, 16*p)
		a0, a1 = t0.Permute(c).MulAdd(x, a0), t1.Permute(c).MulAdd(x, a1)
		c = c.ShiftRight(sh)
	}
	return a0, a1
}

// i8Rows8 returns Σ_j c[j]·x[j] for the eight INT8 code rows at w + k·ld
// (nb blocks of 16 codes) and one x row at xp.
func i8Rows8(w unsafe.Pointer, ld, nb int, xp unsafe.Pointer) (s [8]float32) {
	var a0, a1, a2, a3, a4, a5, a6, a7 archsimd.Float32x16
	for b := range nb {
		q := unsafe.Add(w, 16*b)
		x := ldX(xp, 16*b)
		a0 = ldI8(q).MulAdd(x, a0)
		a1 = ldI8(unsafe.Add(q, ld)).MulAdd(x, a1)
		a2 = ldI8(unsafe.Add(q, 2*ld)).MulAdd(x, a2)
		a3 = ldI8(unsafe.Add(q, 3*ld)).MulAdd(x, a3)
		a4 = ldI8(unsafe.Add(q, 4*ld)).MulAdd(x, a4)
		a5 = ldI8(unsafe.Add(q, 5*ld)).MulAdd(x, a5)
		a6 = ldI8(unsafe.Add(q, 6*ld)).MulAdd(x, a6)
		a7 = ldI8(unsafe.Add(q, 7*ld)).MulAdd(x, a7)
	}
	return [8]float32{hsum(a0), hsum(a1), hsum(a2), hsum(a3), hsum(a4), hsum(a5), hsum(a6), hsum(a7)}
}

// decLUT writes the weights (unscaled table values) of blocks [0, nb) of
// the rows index rows at w + k·ld, in phase layout, to dst + k·ds floats:
// block by block across the rows, so that they stream from memory
// together.
func decLUT(tab *[16]float32, bits int, w unsafe.Pointer, ld, rows, nb int, dst unsafe.Pointer, ds int) {
	t := archsimd.LoadFloat32x16(tab)
	P, sh := 8/bits, archsimd.BroadcastUint32x16(uint32(bits))
	for b := range nb {
		for k := range rows {
			c, d := ldIdx(unsafe.Add(w, k*ld+16*b)), unsafe.Add(dst, 4*(k*ds+16*P*b))
			for p := range P {
				stX(d, 16*p, t.Permute(c))
				c = c.ShiftRight(sh)
			}
		}
	}
}

// decVec2 is decLUT for 2-vector index rows: row k's component c goes
// to dst + (2k+c)·ds floats.
func decVec2(u0, u1 *[16]float32, bits int, w unsafe.Pointer, ld, rows, nb int, dst unsafe.Pointer, ds int) {
	t0, t1 := archsimd.LoadFloat32x16(u0), archsimd.LoadFloat32x16(u1)
	P, sh := 8/bits, archsimd.BroadcastUint32x16(uint32(bits))
	for b := range nb {
		for k := range rows {
			c := ldIdx(unsafe.Add(w, k*ld+16*b))
			d0 := unsafe.Add(dst, 4*(2*k*ds+16*P*b))
			d1 := unsafe.Add(d0, 4*ds)
			for p := range P {
				stX(d0, 16*p, t0.Permute(c))
				stX(d1, 16*p, t1.Permute(c))
				c = c.ShiftRight(sh)
			}
		}
	}
}

// decI8 is decLUT for INT8 code rows: 16 codes per block as float32.
func decI8(w unsafe.Pointer, ld, rows, nb int, dst unsafe.Pointer, ds int) {
	for b := range nb {
		for k := range rows {
			stX(dst, k*ds+16*b, ldI8(unsafe.Add(w, k*ld+16*b)))
		}
	}
}

// dot4x2 returns the dot products of the four rows at w + k·ldw (float32
// stride ldw, n floats each, n a multiple of 16) with the two x rows at x0
// and x1: s[2k+i] is row k with x_i. Twelve live vectors.
func dot4x2(w unsafe.Pointer, ldw, n int, x0, x1 unsafe.Pointer) (s [8]float32) {
	var a0, a1, b0, b1, c0, c1, d0, d1 archsimd.Float32x16
	l := 4 * ldw
	for j := 0; j < n; j += 16 {
		y0, y1 := ldX(x0, j), ldX(x1, j)
		u := ldX(w, j)
		a0, a1 = u.MulAdd(y0, a0), u.MulAdd(y1, a1)
		u = ldX(unsafe.Add(w, l), j)
		b0, b1 = u.MulAdd(y0, b0), u.MulAdd(y1, b1)
		u = ldX(unsafe.Add(w, 2*l), j)
		c0, c1 = u.MulAdd(y0, c0), u.MulAdd(y1, c1)
		u = ldX(unsafe.Add(w, 3*l), j)
		d0, d1 = u.MulAdd(y0, d0), u.MulAdd(y1, d1)
	}
	return [8]float32{hsum(a0), hsum(a1), hsum(b0), hsum(b1), hsum(c0), hsum(c1), hsum(d0), hsum(d1)}
}

// dot4x1 is dot4x2 for one x row: s[k] is row k with x.
func dot4x1(w unsafe.Pointer, ldw, n int, x unsafe.Pointer) (s [4]float32) {
	var a0, a1, a2, a3 archsimd.Float32x16
	l := 4 * ldw
	for j := 0; j < n; j += 16 {
		y := ldX(x, j)
		a0 = ldX(w, j).MulAdd(y, a0)
		a1 = ldX(unsafe.Add(w, l), j).MulAdd(y, a1)
		a2 = ldX(unsafe.Add(w, 2*l), j).MulAdd(y, a2)
		a3 = ldX(unsafe.Add(w, 3*l), j).MulAdd(y, a3)
	}
	return [4]float32{hsum(a0), hsum(a1), hsum(a2), hsum(a3)}
}

// Lane indices into the concatenation of two vectors: the even and the odd
// elements.
var (
	evenIdx = [16]uint32{0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30}
	oddIdx  = [16]uint32{1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31}
)

// deinterleave is permuteX for P = 2 on whole 32-float blocks: each block
// of x becomes its 16 even elements followed by its 16 odd ones
// (VPERMI2PS). len(dst) = len(x), a multiple of 32.
func deinterleave(dst, x []float32) {
	x = x[:len(dst)]
	ev, od := archsimd.LoadUint32x16(&evenIdx), archsimd.LoadUint32x16(&oddIdx)
	for b := 0; b+32 <= len(x); b += 32 {
		lo := archsimd.LoadFloat32x16((*[16]float32)(x[b : b+16]))
		hi := archsimd.LoadFloat32x16((*[16]float32)(x[b+16 : b+32]))
		lo.ConcatPermute(hi, ev).Store((*[16]float32)(dst[b : b+16]))
		lo.ConcatPermute(hi, od).Store((*[16]float32)(dst[b+16 : b+32]))
	}
}

// tilePair is one pair of output rows for the T > 1 kernels
// (tile_amd64.s reads it at these offsets): two scalar 4-bit LUT index
// rows with their tables, one 2-vector row (wa = wb) with its two
// component tables, or two INT8 code rows (no tables). wa and wb point at
// the rows' first code bytes.
type tilePair struct {
	ta, tb *[16]float32
	wa, wb unsafe.Pointer
}

// lut4Tile8 is the T > 1 kernel of 4-bit LUTs, in assembly (tile_amd64.s,
// which describes it): for pairs p < np, acc[p][k][t] (16 lanes) += the
// products of pair p's row k (nb 16-byte blocks from byte off) with the
// eight x rows of tiles x0 (t < 4) and x1 (t ≥ 4), x0 and x1 pointing at
// the chunk's first vector. Weights are decoded in registers and never
// stored.
//
//go:noescape
func lut4Tile8(pp *[tileO / 2]tilePair, np, off, nb int, x0, x1 unsafe.Pointer, acc *tileAcc)

// lut4Tile4 is lut4Tile8 for the four x rows of tile x0 (t < 4).
//
//go:noescape
func lut4Tile4(pp *[tileO / 2]tilePair, np, off, nb int, x0 unsafe.Pointer, acc *tileAcc)

// i8Tile8 is lut4Tile8 for pairs of INT8 code rows (16 codes per block),
// converted in registers.
//
//go:noescape
func i8Tile8(pp *[tileO / 2]tilePair, np, off, nb int, x0, x1 unsafe.Pointer, acc *tileAcc)

// i8Tile4 is i8Tile8 for the four x rows of tile x0.
//
//go:noescape
func i8Tile4(pp *[tileO / 2]tilePair, np, off, nb int, x0 unsafe.Pointer, acc *tileAcc)

// sumTile sets s[8k+t] to the sum of the 16 lanes of acc[k][t], in
// assembly (tile_amd64.s: a transposing tree, 15 vector adds for the 16
// sums).
//
//go:noescape
func sumTile(acc *[2][tileG][16]float32, s *[2 * tileG]float32)

// copy16 copies the 16 floats at src to dst.
func copy16(dst, src []float32) {
	archsimd.LoadFloat32x16((*[16]float32)(src[:16])).Store((*[16]float32)(dst[:16]))
}
