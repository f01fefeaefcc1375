package lut

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
)

// Vertical tiles (int8vert_amd64.s): the int8 products of a 4-bit scalar
// or 2x16 LUT matrix on AVX-512 VNNI hosts, one kernel for one row of x
// (decode) and for up to int8Chunk rows (a verify block). The row-major kernels
// (int8_amd64.s, int8rows_amd64.s) keep one int32 lane per scale group
// of an output row and sum the lanes at the end; several rows of x then
// need an accumulator per (output row, x row) and each looked-up step of
// codes is reused from registers only four rows of x at a time. Here the
// codes are transposed once, at the first int8 product, into tiles of 16
// index rows (a strip: 16 output rows, 32 for 2x16) by 8 columns, the 64
// bytes of one scale group's lane in one step:
//
//	tile (b, k, s) of strip i, lane r = bytes 4k…4k+3 of step 4b+s of index row 16i+r
//	                                    (columns 128(4b+s) + 8k … + 7, low nibbles the even ones)
//	strip i: for each block b, for each lane k < 16, the tiles s < S_b (S_b = steps in block b, 4 but in the last)
//
// One lookup of a tile (two VPERMB; four for 2x16, a table a component)
// gives 16 output rows × 8 weights (twice for 2x16), and each row t of x
// meets it with two VPDPBUSD (four) whose x operand is one
// broadcast dword (x's phase layout puts q of columns 8k, 8k+2, 8k+4,
// 8k+6 of a step in one dword, the odd ones 64 bytes on): the int32 lanes
// are already the 16 outputs, so T rows of x need T accumulators and the
// looked-up tile serves all of them. The integer sums are exact and the
// same as the row-major kernels'; only the float32 order differs:
//
//	F = Σ_b Σ_k (in that order) float32(S_(b,k)) · d_(b,k)      (each product and sum rounded to float32)
//
// against the row-major kernels' per-lane F_l = Σ_b …, then sum16. A
// matrix takes one order for every product (int8Vert, decided at New),
// so a row of x gets the same bits from the one-row kernel, the
// multi-row kernel and the twin (int8VertRowGo), whatever the range.
//
// The tiles are a second copy of the codes, made at the first int8
// product (not for matrices only quantized or scored in float32), in
// memory advised to take 2 MiB pages (hugeBytes); the packed rows stay in
// the Matrix for every other path, and a bundle's mapped rows leave the
// resident set once copied (Parts.Evict), so that a model's resident
// memory holds its codes once.

// vertRows is the rows of a strip, the lanes of a 512-bit register of
// int32 sums.
const vertRows = 16

// int8Vert reports whether New gives 4-bit scalar and 2x16 LUT matrices the tile
// order: where the tile kernels run (tests set it to run the twin alone).
var int8Vert = int8Ready

// vertTiles holds a matrix's tiles. They are made a unit of vertUnit
// strips at a time, by the first product that reads the unit: the
// products' own split spreads the transposition (and the first touch of
// its memory, which on the Firecracker VM of BENCHMARKS.md costs more
// than the copy) over the cores, and a unit's codes are in cache for the
// kernel that follows.
type vertTiles struct {
	alloc sync.Once
	b     []byte      // [strips][bytes of 16 index rows] in the order above
	units []sync.Once // one per unit
	done  atomic.Int64
}

// vertUnit is the strips made at once (stageUnit's 32 rows).
const vertUnit = 2

// useVert reports whether m's int8 products take the tile order: 4-bit
// scalar and 2x16 LUTs (the int8 kernels' formats) whose codebook groups
// are whole strips.
func (m *Matrix) useVert() bool {
	return int8Vert && m.f.Dim <= 2 && (m.rowsG == 0 || m.rowsG%vertRows == 0)
}

// tiles returns m's tiles with those of index rows [r0, r1) made
// (the rows past the last whole strip have none). Once every unit is
// made, the packed rows are offered to Parts.Evict.
func (m *Matrix) tiles(r0, r1 int) []byte {
	v := m.vert
	idx, n := m.codes8()
	strips := m.f.IndexRows(m.out) / vertRows
	v.alloc.Do(func() {
		v.b = hugeBytes(v, strips*vertRows*n)
		v.units = make([]sync.Once, (strips+vertUnit-1)/vertUnit)
	})
	for u := r0 / (vertUnit * vertRows); u < len(v.units) && u*vertUnit*vertRows < r1; u++ {
		v.units[u].Do(func() {
			for i := u * vertUnit; i < min(strips, (u+1)*vertUnit); i++ {
				dst, rows := v.b[i*vertRows*n:][:vertRows*n], idx[i*vertRows*n:][:vertRows*n]
				if !vertStripFast(dst, rows, n) {
					vertStrip(dst, rows, n)
				}
			}
			if v.done.Add(1) == int64(len(v.units)) && m.p.Evict != nil && m.idx8 == nil {
				m.p.Evict(m.p.Index)
			}
		})
	}
	return v.b
}

// vertStrip transposes one strip: rows holds 16 index rows of n bytes,
// dst gets their tiles in the order above.
func vertStrip(dst, rows []byte, n int) {
	le := binary.LittleEndian
	steps := n / 64
	for s0 := 0; s0 < steps; s0 += int8Steps {
		S := min(int8Steps, steps-s0)
		// The block's tiles, 16 rows × S steps of 64 bytes, start at the
		// block's offset in a row, times 16.
		d := dst[vertRows*s0*64:][:vertRows*S*64]
		p := 0
		for k := range 16 {
			for s := s0; s < s0+S; s++ {
				src := rows[s*64+4*k:]
				for r := range vertRows { // tile (k, s), lane r
					le.PutUint32(d[p:], le.Uint32(src[r*n:]))
					p += 4
				}
			}
		}
	}
}

// int8VertRowGo is the twin of the tile kernels for one index row (codes,
// 64 bytes a step) and one table: F above, in its order, from the packed
// row. q and d are one row of x in phase layout and its group scales.
func int8VertRowGo(tab *[64]byte, codes []byte, q []int8, d []float32) float32 {
	steps := len(codes) / 64
	f := float32(0)
	for b := 0; 16*b < len(d); b++ {
		for k := range 16 {
			s := int32(0)
			for st := int8Steps * b; st < min(int8Steps*(b+1), steps); st++ {
				w, x := codes[st*64+4*k:][:4], q[st*int8Step+4*k:]
				for j, c := range w {
					s += int32(tab[c&15])*int32(x[j]) + int32(tab[c>>4])*int32(x[64+j])
				}
			}
			f = f + float32(float32(s)*d[16*b+k])
		}
	}
	return f
}

// int8RowRef is the twin of m's int8 kernels for index row r (component
// c) and one row of x: the tile order or the row-major one.
func (m *Matrix) int8RowRef(r, c int, q []int8, d []float32) float32 {
	idx, n := m.codes8()
	if m.vert != nil {
		return int8VertRowGo(m.table8(r, c), idx[r*n:(r+1)*n], q, d)
	}
	return int8RowGo(m.table8(r, c), idx[r*n:(r+1)*n], q, d)
}
