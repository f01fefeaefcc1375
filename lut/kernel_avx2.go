//go:build goexperiment.simd && amd64

package lut

import (
	"simd/archsimd"
	"unsafe"
)

// AVX2 kernels for float32 x: 4-bit scalar LUTs and 2x16 vector LUTs with
// T ≤ a2MaxT rows of x, on CPUs with AVX2 and FMA but without the
// AVX-512 kernels (fastReady). They serve --act f32 and the few-row
// float32 products of verify blocks and batched decode steps. Larger T takes the panels
// (panel.go).
//
// x is laid out once per call in the phase layout of two codes per byte
// (permuteX's, P = 2): per block of 16 code bytes (32 columns), the 16
// even columns, then the 16 odd ones, zero past in. A block's low nibbles
// are the even columns' codes and its high nibbles the odd ones'; each
// half of eight codes is zero-extended to 32-bit indices, looked up in
// the 16-entry table as two VPERMPS over its halves and a blend on
// index ≥ 8, and multiplied into one of four accumulators of eight lanes
// with FMA:
//
//	y[o] = s[o] · Σ_j ℓ(o)[code(o, j)] · x[j]
//
// Only the summation order (and FMA's single rounding) differs from the
// portable twin mulGoBytes; the Mul tests bound the difference against
// the reference twin as for the other kernels.

// a2MaxT is the most rows of x the AVX2 kernels take, one pass over the
// weights per row: the panels' widening costs about as much as ten such
// passes (BenchmarkLUTMulCache on an AMD EPYC, 256×4096 LUT4 with -cpu 1:
// T = 1 0.27 ms, panels at T = 4 2.1 ms and T = 16 3.2 ms).
const a2MaxT = 8

// floatA2 reports whether the AVX2 float kernels run (tests force it on
// AVX-512 CPUs, with fastReady off).
var floatA2 = !fastReady && archsimd.X86.AVX2() && archsimd.X86.FMA()

// a2Prepare reports whether the AVX2 float kernels take the job's matrix
// and x, and if so lays x out for them in j.xp.
func (j *mulJob) a2Prepare() bool {
	m := j.m
	if !floatA2 || !useFast || j.x.Rows > a2MaxT || m.f.Bits != 4 || (m.fam != famLUT && m.fam != famVec2) {
		return false
	}
	nb := (m.in/2 + 15) / 16 // blocks of 16 code bytes, the last one zero-padded
	j.xs = 32 * nb
	need := j.x.Rows * j.xs
	if cap(j.xp) < need {
		j.xp = make([]float32, need)
	}
	j.xp = j.xp[:need]
	for t := range j.x.Rows {
		x, dst := j.x.Row(t), j.xp[t*j.xs:(t+1)*j.xs]
		clear(dst[m.in/32*32:])
		for c, v := range x {
			b, i := c/32, c%32
			dst[32*b+16*(i%2)+i/2] = v
		}
	}
	return true
}

// a2Rows computes index rows [r0, r1) for every row of x with the AVX2
// float kernels, four outputs at a time (four scalar rows, or two 2-vector
// rows), their lane sums reduced and scaled together in vector registers.
func (j *mulJob) a2Rows(r0, r1 int) {
	m := j.m
	n, d, out := m.in/2, m.f.Dim, m.out // bytes per index row, outputs per index row
	g := a2Geom{nb: n / 16, partial: n%16 != 0}
	g.k.init()
	o1 := r1 * d
	for t := range j.x.Rows {
		xp := j.xp[t*j.xs : (t+1)*j.xs]
		y := j.dst.Data[t*out : (t+1)*out]
		o := r0 * d
		for ; o < o1; o += 4 {
			var a, b, c, e f32x8
			if d == 1 {
				a = g.lut4(m, o, xp)
				if o+1 < o1 {
					b = g.lut4(m, o+1, xp)
				}
				if o+2 < o1 {
					c = g.lut4(m, o+2, xp)
				}
				if o+3 < o1 {
					e = g.lut4(m, o+3, xp)
				}
			} else {
				a, b = g.vec2(m, o/2, xp)
				if o+2 < o1 {
					c, e = g.vec2(m, o/2+1, xp)
				}
			}
			if o+4 <= o1 {
				sum4(a, b, c, e).Mul(archsimd.LoadFloat32x4((*[4]float32)(m.scale[o : o+4]))).Store((*[4]float32)(y[o : o+4]))
				continue
			}
			var s [4]float32 // the last one to three outputs
			sum4(a, b, c, e).Store(&s)
			archsimd.ClearAVXUpperBits()
			for i := range o1 - o {
				y[o+i] = m.scale[o+i] * s[i]
			}
		}
	}
	archsimd.ClearAVXUpperBits()
}

type f32x8 = archsimd.Float32x8

// a2Geom is an index row's blocks and the kernels' constants.
type a2Geom struct {
	nb      int  // whole blocks of 16 code bytes
	partial bool // a partial last block follows
	k       a2K
}

// lut4 returns the lane sums of scalar index row r against xp.
func (g *a2Geom) lut4(m *Matrix, r int, xp []float32) f32x8 {
	n := m.in / 2
	codes := m.p.Index[r*n : (r+1)*n]
	var last [16]byte // the partial last block, zero-padded
	if g.partial {
		archsimd.ClearAVXUpperBits() // copy's SSE moves follow vector code
		copy(last[:], codes[16*g.nb:])
	}
	return lut4A2((*[16]float32)(m.table(r, 0)), codes, g.nb, xp, &last, g.partial, &g.k)
}

// vec2 returns the lane sums of 2-vector index row r's two outputs.
func (g *a2Geom) vec2(m *Matrix, r int, xp []float32) (f32x8, f32x8) {
	n := m.in / 2
	codes := m.p.Index[r*n : (r+1)*n]
	var last [16]byte
	if g.partial {
		archsimd.ClearAVXUpperBits()
		copy(last[:], codes[16*g.nb:])
	}
	return vec2A2((*[16]float32)(m.table(r, 0)), (*[16]float32)(m.table(r, 1)), codes, g.nb, xp, &last, g.partial, &g.k)
}

// sum4 returns the sums of the lanes of a, b, c and e.
func sum4(a, b, c, e f32x8) archsimd.Float32x4 {
	s := a.AddPairsGrouped(b).AddPairsGrouped(c.AddPairsGrouped(e)) // [Σa, Σb, Σc, Σe] in each half
	return s.GetLo().Add(s.GetHi())
}

// nibbles returns the indices of a block's 32 codes: the low nibbles of
// bytes 0–7 and 8–15 (x columns 0–7 and 8–15 of the phase layout), then
// the high ones (columns 16–23, 24–31). k.m0f is 0x0f and k.four 4 in
// every lane. The split runs on 32-bit lanes with a per-lane shift
// (VPSRLVD): a shift by a constant compiles to a shift by a register
// loaded with a legacy-SSE MOVQ, which, in a loop of 256-bit code, made
// the kernel 30× slower on an AMD EPYC (Zen 3).
func nibbles(p *[16]byte, k *a2K) (i0, i1, i2, i3 archsimd.Int32x8) {
	v := archsimd.LoadUint8x16(p)
	q := v.AsUint64x2()
	a := v.ExtendLo8ToUint32()                              // bytes 0–7
	b := q.InterleaveHi(q).AsUint8x16().ExtendLo8ToUint32() // bytes 8–15
	i0, i1 = a.And(k.m0f).AsInt32x8(), b.And(k.m0f).AsInt32x8()
	i2, i3 = a.ShiftRight(k.four).AsInt32x8(), b.ShiftRight(k.four).AsInt32x8()
	return
}

// a2K holds the kernels' constants, made once per call (a broadcast is
// emulated on AVX2).
type a2K struct {
	m0f, four archsimd.Uint32x8
	seven     archsimd.Int32x8
}

// init fills k in place: returning it would copy it with legacy-SSE
// moves after 256-bit broadcasts, a transition that costs ~130 ns on some
// x86 hosts (BENCHMARKS.md).
func (k *a2K) init() {
	k.m0f, k.four, k.seven = archsimd.BroadcastUint32x8(0x0f), archsimd.BroadcastUint32x8(4), archsimd.BroadcastInt32x8(7)
}

// look returns the table entries at indices i (0–15) of the table whose
// halves are lo and hi; seven is 7 in every lane.
func look(lo, hi archsimd.Float32x8, i, seven archsimd.Int32x8) archsimd.Float32x8 {
	u := i.AsUint32x8()
	return hi.Permute(u).Merge(lo.Permute(u), i.Greater(seven))
}

// ldx8 loads the eight floats of xp at float offset k.
func ldx8(xp []float32, k int) archsimd.Float32x8 {
	return archsimd.LoadFloat32x8((*[8]float32)(xp[k : k+8]))
}

// lut4A2 returns Σ_j tab[code(j)]·x[j] for one index row as eight lane
// sums: nb whole blocks from codes, then last when partial, against xp
// (phase layout).
func lut4A2(tab *[16]float32, codes []byte, nb int, xp []float32, last *[16]byte, partial bool, k *a2K) f32x8 {
	lo := archsimd.LoadFloat32x8((*[8]float32)(tab[0:8]))
	hi := archsimd.LoadFloat32x8((*[8]float32)(tab[8:16]))
	seven := k.seven
	var a0, a1, a2, a3 archsimd.Float32x8
	for b := range blocks(nb, partial) {
		i0, i1, i2, i3 := nibbles(blockAt(codes, b, nb, last), k)
		o := 32 * b
		a0 = look(lo, hi, i0, seven).MulAdd(ldx8(xp, o), a0)
		a1 = look(lo, hi, i1, seven).MulAdd(ldx8(xp, o+8), a1)
		a2 = look(lo, hi, i2, seven).MulAdd(ldx8(xp, o+16), a2)
		a3 = look(lo, hi, i3, seven).MulAdd(ldx8(xp, o+24), a3)
	}
	return a0.Add(a1).Add(a2.Add(a3))
}

// vec2A2 is lut4A2 for a 2-vector index row: the same codes looked up in
// both components' tables t0 and t1.
func vec2A2(t0, t1 *[16]float32, codes []byte, nb int, xp []float32, last *[16]byte, partial bool, k *a2K) (f32x8, f32x8) {
	lo0 := archsimd.LoadFloat32x8((*[8]float32)(t0[0:8]))
	hi0 := archsimd.LoadFloat32x8((*[8]float32)(t0[8:16]))
	lo1 := archsimd.LoadFloat32x8((*[8]float32)(t1[0:8]))
	hi1 := archsimd.LoadFloat32x8((*[8]float32)(t1[8:16]))
	seven := k.seven
	var a0, a1, b0, b1 archsimd.Float32x8
	for b := range blocks(nb, partial) {
		i0, i1, i2, i3 := nibbles(blockAt(codes, b, nb, last), k)
		o := 32 * b
		x0, x1, x2, x3 := ldx8(xp, o), ldx8(xp, o+8), ldx8(xp, o+16), ldx8(xp, o+24)
		a0 = look(lo0, hi0, i0, seven).MulAdd(x0, a0)
		b0 = look(lo1, hi1, i0, seven).MulAdd(x0, b0)
		a1 = look(lo0, hi0, i1, seven).MulAdd(x1, a1)
		b1 = look(lo1, hi1, i1, seven).MulAdd(x1, b1)
		a0 = look(lo0, hi0, i2, seven).MulAdd(x2, a0)
		b0 = look(lo1, hi1, i2, seven).MulAdd(x2, b0)
		a1 = look(lo0, hi0, i3, seven).MulAdd(x3, a1)
		b1 = look(lo1, hi1, i3, seven).MulAdd(x3, b1)
	}
	return a0.Add(a1), b0.Add(b1)
}

// blocks returns the number of blocks of an index row: nb whole ones and
// the partial last one.
func blocks(nb int, partial bool) int {
	if partial {
		return nb + 1
	}
	return nb
}

// blockAt returns block b of an index row: the 16 bytes at 16·b of codes
// for a whole block (b < nb), else the zero-padded partial block last.
func blockAt(codes []byte, b, nb int, last *[16]byte) *[16]byte {
	if b < nb {
		return (*[16]byte)(unsafe.Pointer(&codes[16*b]))
	}
	return last
}
