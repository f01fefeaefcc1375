package lut

import (
	"fmt"
	"math"

	"forge/tensor"
)

// Int8 activations (decode's fast path, as llama.cpp multiplies its
// 4-bit weights by activations quantized to 8 bits):
//
//	x'   = x·M, cut into scale groups G of 32 columns (below)
//	d_G  = max_{j∈G} |x'_j| / 127,  q_j = round-half-even(x'_j · 127/max(max, 2⁻¹⁰⁰))   (q ∈ [−127, 127]; d = 0, q = 0 for a zero group)
//	c_g  ≈ max |L_g| / B,            ℓ_g[e][t] = round-half-even(L_g[e][t]/c_g)   (the codebook of row group g in int8;
//	                                  B = 64 for 2-vector LUTs, and for scalar ones where the AVX2 kernels run,
//	                                  127 elsewhere: codebookBound; with B = 64, c_g is the step near max/B
//	                                  that rounds the entries best: int8CodebookStep)
//	y[o] = s[o] · c_g · Σ_G d_G · Σ_{j∈G} ℓ_g[I[o/d, j]][o mod d] · q_j            (+ A·(B·x'), in float32 as in Mul)
//
// The kernels take x in steps of 128 columns (64 bytes of 4-bit codes) and
// add each product into one of 16 int32 lanes: lane l of step s gathers
// columns 128s + 8l … 128s + 8l + 7. A block is int8Steps steps (512
// columns), and scale group (b, l) is lane l's columns in block b: 8
// consecutive columns from each of its steps, 32 in all (llama.cpp's
// Q8_0 groups 32 columns too), so that an outlier costs only its own
// group precision. The integer sums are exact (VPDPBUSD multiplies
// unsigned by signed bytes, so the kernels look up ℓ + 128 and subtract
// 128·Σ_G d_G·Σ_{j∈G} q_j once per row: the k of an Int8Input); the
// float32 steps happen in a fixed order — per lane F_l += float32(S_l)·d_(b,l)
// block by block, then the lanes summed as the other T = 1 kernels sum
// them (sum16) — so the portable twin (int8RowGo) gives the assembly
// kernels' bits, and a row of x gets the same bits whatever T, range or
// build computed it.
//
// The cost against Mul's float32 product is two roundings: q carries an
// error of at most d_G/2 per element (0.4% of its group's largest value)
// and ℓ at most c_g/2 per codebook entry (c_g/2 is 0.4% of the largest
// entry with B = 127, 0.8% with B = 64; a 2-vector LUT's 2-bit-per-weight
// rounding is ~25× larger); both are bounded in the tests
// (int8act_test.go) and their effect on a model is measured by forge eval
// --act int8 (BENCHMARKS.md).

// int8Step is the columns one kernel step takes: 64 bytes of 4-bit codes,
// whose low nibbles meet the first 64 int8 values of the step in x's
// phase layout and whose high nibbles the next 64. int8Steps steps make a
// block, whose 16 lanes each have their own scale (4·255·127·8 < 2^24, so
// a lane's block sum converts to float32 exactly).
const (
	int8Step  = 128
	int8Steps = 4
	int8Block = int8Step * int8Steps
)

// int8Tiny floors the maximum that 127/max divides by, so that a zero
// group gets a finite 1/d (its codes are 0 and d is 0 anyway).
const int8Tiny = 0x1p-100

// int8Lane returns the position of column j in a row's phase layout and
// its scale group (block·16 + lane).
func int8Lane(j int) (pos, group int) {
	c := j % int8Step
	return j/int8Step*int8Step + c%2*64 + c/2, j/int8Block*16 + c/8
}

// Int8Input holds rows of x' = x·M quantized for MulRowsInt8 (the formula
// above), made by Matrix.QuantizeInput. One Int8Input can serve every
// matrix with the same input width and Rotation (Fits), so the products of
// one input quantize it once. The zero value is ready to use; buffers
// grow as needed and are reused.
type Int8Input struct {
	rows, in int
	rot      Rotation
	q        []int8    // [rows][in] phase layout: per step of 128 columns, the 64 even then the 64 odd ones
	d        []float32 // [rows][blocks][16] group scales d_(b,l)
	k        []float32 // [rows] 128·Σ_G d_G·Σ_{j∈G} q_j, summed in group order in float32
	x        *tensor.Matrix
	xr       tensor.Matrix  // x' when the matrix rotates its input
	xp       tensor.Matrix  // x' zero-padded to whole steps, when in is not a multiple of 128
	qs       []int32        // [rows][blocks][16] 128·Σ q over each scale group (the AVX2 multi-row kernels' correction), or empty
	qh       []int32        // qs halved, 64·Σ q: where the AVX2 one-row kernels' block sums start, or empty
	qi       []int8         // q's rows by chunks of eight, interleaved by step (int8rows.go), or empty
	di       []float32      // d's likewise
	xq       *tensor.Matrix // the rows QuantizeRows reads (x, rotated and padded)
	steps    int            // steps of int8Step columns a row
	nb       int            // scales a row (16 a block)
}

// Rows returns the number of rows of x it holds.
func (q *Int8Input) Rows() int { return q.rows }

// Fits reports whether q can stand for the input of m: it was made from a
// row of the same width through the same Rotation (none, or the same
// *Hadamard).
func (q *Int8Input) Fits(m *Matrix) bool {
	return q.in == m.in && q.rows > 0 && sameRotation(q.rot, m.p.Rotation)
}

func sameRotation(a, b Rotation) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	ha, ok1 := a.(*Hadamard)
	hb, ok2 := b.(*Hadamard)
	return ok1 && ok2 && ha == hb
}

// Int8Kernels reports whether this build and CPU multiply by int8
// activations with fast kernels (AVX-512 VNNI/VBMI or AVX2). Without them
// MulRowsInt8 runs the portable twin, which is slower than the portable
// float32 kernels: callers choosing a default precision check this.
func Int8Kernels() bool { return int8Ready || int8A2 }

// Int8Prefill reports whether int8 products of many rows of x (a
// prefill) run faster than float32 ones on this build and CPU: where the
// fast int8 kernels run. A 512-token prefill of the synth-1.4b ran
// 2.2–2.9× faster with the AVX-512 multi-row kernels than with the
// float32 ones, LUT4 and 2x16 alike, and 1.36–1.47× faster with the AVX2
// ones (measured on an AVX-512 host with AVX-512 switched off,
// BENCHMARKS.md); the portable twin is slower than the portable float32
// kernels.
func Int8Prefill() bool { return Int8Kernels() && useFast }

// Int8Activations reports whether m has int8-activation kernels: 4-bit
// scalar LUTs and 4-bit 2-vector LUTs (2x16). Other matrices'
// MulRowsInt8 is MulRows. A width that is not a multiple of 128 (forge-tiny's
// 192-column out-projections) is zero-padded to one: x' gets zero columns,
// whose codes are 0 and scale groups unchanged (a zero never raises a
// maximum), and the index rows get codes whose products with them are 0;
// the kernels read a padded copy of the index rows (codes8).
func (m *Matrix) Int8Activations() bool { return m.tab8 != nil }

// int8Width returns in rounded up to whole int8 steps.
func int8Width(in int) int { return (in + int8Step - 1) / int8Step * int8Step }

// codes8 returns the index rows the int8 kernels read and the bytes of
// one: the packed ones, or their zero-padded copy.
func (m *Matrix) codes8() ([]byte, int) {
	if m.idx8 != nil {
		return m.idx8, int8Width(m.in) / 2
	}
	return m.p.Index, m.in / 2
}

// codebookBound is B of the formula above, the largest |ℓ| of a format's
// int8 codebook. With 7 bits (|ℓ| ≤ 64) the AVX2 kernels multiply the
// looked-up ℓ + 64 (≤ 128, an unsigned byte) by q (|q| ≤ 127) in
// VPMADDUBSW without saturating its int16 pair sums (2·128·127 = 32,512):
// two instructions fewer a product than making the signs agree first
// (VPSIGNB, and VPABSB or a buffer of |q|), which is what bounded those
// kernels (BENCHMARKS.md). 2-vector codebooks get 7 bits on every CPU
// (their 2-bit rounding dwarfs it), so their bits do not depend on the
// kernel. Scalar LUTs get 7 bits only where the AVX2 kernels run
// (int8A2): on forge-tiny's LUT4 bundle they raised the KL against the
// bf16 reference from 0.0091569 (8 bits; float32 activations 0.0091587)
// to 0.0092259, +0.7%, a cost that buys nothing where VPDPBUSD
// multiplies 8-bit ℓ + 128 in one instruction, or on the portable twin.
func codebookBound(f Format) float32 {
	if f.Kind == Vector || int8A2 {
		return 64
	}
	return 127
}

// buildInt8Tables fills tab8 and cbd when the format has int8 kernels:
// per group, component t's table is the 16 bytes ℓ + 128 repeated four
// times (VPERMB reads six index bits, so the repeats make the code's
// upper bits harmless).
func (m *Matrix) buildInt8Tables() {
	f := m.f
	if f.Bits != 4 || m.in%2 != 0 || !(f.Kind == Scalar || f.Kind == Vector && f.Dim == 2) {
		return
	}
	if m.in%int8Step != 0 {
		n, n8 := m.in/2, int8Width(m.in)/2
		rows := len(m.p.Index) / n
		m.idx8 = make([]byte, rows*n8)
		for r := range rows {
			copy(m.idx8[r*n8:], m.p.Index[r*n:(r+1)*n])
		}
	}
	d, groups := f.Dim, f.Groups(m.out)
	m.tab8 = make([]byte, groups*d*64)
	m.cbd = make([]float32, groups)
	B := codebookBound(f)
	m.narrow8 = B <= 64
	if m.useVert() {
		m.vert = &vertTiles{}
	}
	for g := range groups {
		amax := float32(0)
		for i := range 16 * d {
			amax = max(amax, abs32(m.tab[g*d*m.stride+i/16*m.stride+i%16]))
		}
		if amax == 0 {
			for i := range m.tab8[g*d*64 : (g+1)*d*64] {
				m.tab8[g*d*64+i] = 128
			}
			continue
		}
		c := amax / 127
		if B != 127 {
			c = int8CodebookStep(m.tab, g, d, m.stride, amax, B)
		}
		m.cbd[g] = c
		inv := 1 / c
		for t := range d {
			tab := m.tab[(g*d+t)*m.stride:][:16]
			dst := m.tab8[(g*d+t)*64:][:64]
			for e, v := range tab {
				b := byte(int32(math.RoundToEven(float64(v*inv))) + 128)
				dst[e], dst[e+16], dst[e+32], dst[e+48] = b, b, b, b
			}
		}
	}
}

// int8CodebookStep returns c_g, the step of group g's int8 codebook: of
// the steps amax/b for b = B·(0.85 + 0.15·i/48), i = 0 … 48, and b = B +
// 0.25, B + 0.49 (every |round(L/c)| ≤ B still), the one whose rounding
// of the group's 16·d entries has the least squared error (amax/B, the
// plain choice, is among them). 2-vector codebooks take it: their 7 bits
// with the plain step more than doubled the int8 activations' KL against
// float32 ones on forge-tiny, the search took back a quarter of that
// (BENCHMARKS.md). 8-bit codebooks keep amax/127, where it made no
// difference above the noise.
func int8CodebookStep(tab []float32, g, d, stride int, amax, bound float32) float32 {
	best, bestErr := amax/bound, math.Inf(1)
	try := func(b float64) {
		c := amax / float32(b)
		inv := 1 / c
		e := 0.0
		for t := range d {
			for _, v := range tab[(g*d+t)*stride:][:16] {
				r := float64(v) - float64(c)*math.RoundToEven(float64(v*inv))
				e += r * r
			}
		}
		if e < bestErr {
			best, bestErr = c, e
		}
	}
	for i := range 49 {
		try(float64(bound) * (0.85 + 0.15*float64(i)/48))
	}
	try(float64(bound) + 0.25)
	try(float64(bound) + 0.49)
	return best
}

func abs32(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }

// group8 returns the codebook group of index row r (0 when per tensor).
func (m *Matrix) group8(r int) int {
	if m.rowsG > 0 {
		return r / m.rowsG
	}
	return 0
}

// QuantizeInput sets q to the rows of x' = x·M (M m's Rotation) quantized
// to int8 as the formula above. It allocates only when q's buffers grow,
// and panics if x does not have m's input width.
func (m *Matrix) QuantizeInput(q *Int8Input, x *tensor.Matrix) {
	m.PrepareInput(q, x)
	q.QuantizeRows(0, x.Rows)
}

// PrepareInput is QuantizeInput but for the rows' quantizing: it sizes q
// for x, rotates and pads x, and leaves q to QuantizeRows, which callers
// may run on several goroutines for disjoint ranges of rows (a verify
// block's, on the cores its products then run on). q keeps x until the
// rows are done.
func (m *Matrix) PrepareInput(q *Int8Input, x *tensor.Matrix) {
	if x.Cols != m.in {
		panic(fmt.Sprintf("lut.Matrix.QuantizeInput: W %dx%d, x %dx%d", m.out, m.in, x.Rows, x.Cols))
	}
	q.rows, q.in, q.rot = x.Rows, m.in, m.p.Rotation
	if m.p.Rotation != nil {
		q.xr.Resize(x.Rows, m.in)
		m.p.Rotation.Rotate(&q.xr, x)
		x = &q.xr
	}
	q.x = x
	if w := int8Width(m.in); w != m.in { // zero columns up to whole steps (Int8Activations)
		q.xp.Resize(x.Rows, w)
		for t := range x.Rows {
			clear(q.xp.Row(t)[copy(q.xp.Row(t), x.Row(t)):])
		}
		x = &q.xp
	}
	q.xq = x
	q.steps = (m.in + int8Step - 1) / int8Step
	q.nb = 16 * ((m.in + int8Block - 1) / int8Block)
	q.q = grow(q.q, x.Rows*q.steps*int8Step)
	q.d = grow(q.d, x.Rows*q.nb)
	q.k = grow(q.k, x.Rows)
	q.qs = q.qs[:0]
	if int8A2 && useFast {
		q.qs = grow(q.qs, x.Rows*q.nb)
	}
	q.qh = grow(q.qh, len(q.qs))
	q.qi, q.di = q.qi[:0], q.di[:0]
	if q.rows >= 2 && int8Ready { // the multi-row kernels' interleaved copy (int8rows.go)
		q.qi = grow(q.qi, q.rows*q.steps*int8Step)
		q.di = grow(q.di, q.rows*q.nb)
	}
}

// QuantizeRows quantizes rows [lo, hi) of the input PrepareInput gave q:
// their int8 values, scales, sums and interleaved copies.
func (q *Int8Input) QuantizeRows(lo, hi int) {
	x, steps, nb := q.xq, q.steps, q.nb
	for t := lo; t < hi; t++ {
		var qs []int32
		if len(q.qs) > 0 {
			qs = q.qs[t*nb:][:nb]
		}
		q.k[t] = quantizeRow(q.q[t*steps*int8Step:][:steps*int8Step], q.d[t*nb:][:nb], qs, x.Row(t))
		for i := t * nb; i < (t+1)*nb && i < len(q.qs); i++ {
			q.qh[i] = q.qs[i] >> 1 // exact: 128·Σq is even
		}
		if len(q.qi) > 0 {
			q.interleaveRow(t, steps, nb)
		}
	}
}

func grow[E any](s []E, n int) []E {
	if cap(s) < n {
		return make([]E, n)
	}
	return s[:n]
}

// quantizeRow writes x quantized per scale group into q (phase layout,
// zeros past x) and d ([blocks][16]), and returns k = 128·Σ_G d_G·Σ_{j∈G} q_j;
// qs, when not nil, gets laneSums(qs, q).
func quantizeRow(q []int8, d []float32, qs []int32, x []float32) float32 {
	if useFast {
		if k, ok := quantizeFast(q, d, qs, x); ok {
			return k
		}
	}
	k := quantizeRowGo(q, d, x)
	if qs != nil {
		laneSums(qs, q)
	}
	return k
}

// quantizeRowGo is quantizeRow in plain Go (any width).
func quantizeRowGo(q []int8, d []float32, x []float32) float32 {
	clear(q)
	var amax [16]float32
	var sum [16]int32
	k := float32(0)
	for b := 0; 16*b < len(d); b++ {
		blk := x[b*int8Block : min(len(x), (b+1)*int8Block)]
		clear(amax[:])
		for i, v := range blk {
			l := i % int8Step / 8
			amax[l] = max(amax[l], abs32(v))
		}
		var inv [16]float32
		for l, a := range amax {
			d[16*b+l], inv[l] = a/127, 127/max(a, int8Tiny)
		}
		clear(sum[:])
		for i, v := range blk {
			pos, g := int8Lane(b*int8Block + i)
			c := int32(math.RoundToEven(float64(v * inv[g%16])))
			sum[g%16] += c
			q[pos] = int8(c)
		}
		for l, s := range sum {
			k += float32(float32(128*s) * d[16*b+l])
		}
	}
	return k
}

// laneSums sets qs[16b + l] to 128·Σ q over scale group (b, l) of a row
// of codes in phase layout: bytes 4l … 4l+3 of each step's low-nibble
// half and of its high-nibble half.
func laneSums(qs []int32, q []int8) {
	clear(qs)
	for s := range len(q) / int8Step {
		b := s / int8Steps
		for p, v := range q[s*int8Step:][:64] {
			qs[16*b+p/4] += int32(v) + int32(q[s*int8Step+64+p])
		}
	}
	for i := range qs {
		qs[i] *= 128
	}
}

// MulRowsInt8 sets the columns of dst [T, out] of outputs [lo, hi) to the
// product of m with q's rows by the int8 formula above, on the calling
// goroutine (lo, hi rounded down to multiples of d as in MulRows). A
// matrix without int8 kernels (Int8Activations false) computes MulRows on
// x' instead. It allocates nothing after warm-up and panics if the shapes
// or the range do not fit or q does not Fit m.
func (m *Matrix) MulRowsInt8(dst *tensor.Matrix, q *Int8Input, lo, hi int) {
	if !q.Fits(m) || dst.Rows != q.rows || dst.Cols != m.out || lo < 0 || lo > hi || hi > m.out {
		panic(fmt.Sprintf("lut.Matrix.MulRowsInt8: W %dx%d, input %dx%d, dst %dx%d, rows [%d, %d)",
			m.out, m.in, q.rows, q.in, dst.Rows, dst.Cols, lo, hi))
	}
	lo, hi = m.vecRange(lo, hi)
	if lo == hi {
		return
	}
	if m.tab8 != nil {
		d := m.f.Dim
		if !m.int8RowsT(dst, q, lo/d, hi/d) {
			for t := range q.rows {
				m.int8Rows(dst.Row(t), q, t, lo/d, hi/d)
			}
		}
		if m.rank == 0 {
			return // the decode path: no scratch needed
		}
	}
	j := mulJobs.Get().(*mulJob)
	defer mulJobs.Put(j)
	if m.tab8 == nil {
		m.mulRowsRotated(j, dst, q.x, lo, hi)
	} else {
		m.addLowRankRows(j, dst, q.x, lo, hi)
	}
}

// MulInt8 is MulRowsInt8 over all outputs, split over the worker pool.
func (m *Matrix) MulInt8(dst *tensor.Matrix, q *Int8Input) {
	if !q.Fits(m) || dst.Rows != q.rows || dst.Cols != m.out {
		panic(fmt.Sprintf("lut.Matrix.MulInt8: W %dx%d, input %dx%d, dst %dx%d",
			m.out, m.in, q.rows, q.in, dst.Rows, dst.Cols))
	}
	if m.tab8 == nil {
		j := mulJobs.Get().(*mulJob)
		defer mulJobs.Put(j)
		m.mulRotated(j, dst, q.x)
		return
	}
	units := (m.out + 31) / 32 // MulRowsInt8's bits do not depend on the split
	grain := max(1, (1<<16)/(32*m.in))
	tensor.ParallelGrain(units, grain, func(a, b int) {
		m.MulRowsInt8(dst, q, a*32, min(b*32, m.out))
	})
}

// int8Rows computes index rows [r0, r1) of x row t into y (dst's row t):
// the fast kernels where they run, the twin (int8RowRef) elsewhere, then
// the scales.
func (m *Matrix) int8Rows(y []float32, q *Int8Input, t, r0, r1 int) {
	if m.vertRow(y, q, t, r0, r1) {
		return
	}
	steps := (m.in + int8Step - 1) / int8Step
	nb := 16 * ((m.in + int8Block - 1) / int8Block)
	qx, dx := q.q[t*steps*int8Step:][:steps*int8Step], q.d[t*nb:][:nb]
	var qh []int32
	if len(q.qh) > 0 {
		qh = q.qh[t*nb:][:nb]
	}
	d := m.f.Dim
	for r := r0; r < r1; {
		if Int8Kernels() && useFast {
			if r = m.int8Kernel(y, qx, dx, qh, r, r1); r == r1 {
				break
			}
		}
		for c := range d {
			y[r*d+c] = m.int8RowRef(r, c, qx, dx)
		}
		r++
	}
	m.int8Scale(y, q.k[t], r0, r1)
}

// int8Scale turns the sums h of index rows [r0, r1) in y into outputs:
// y = s[o]·(c_g·(h − k)), one codebook group's run of outputs at a time.
func (m *Matrix) int8Scale(y []float32, k float32, r0, r1 int) {
	d := m.f.Dim
	for o := r0 * d; o < r1*d; {
		g := m.group8(o / d)
		end := r1 * d
		if m.rowsG > 0 {
			end = min(end, (g+1)*m.rowsG*d)
		}
		c, ys, ss := m.cbd[g], y[o:end], m.scale[o:end]
		for i := scaleOut8(ys, ss, c, k); i < len(ys); i++ {
			ys[i] = ss[i] * (c * (ys[i] - k))
		}
		o = end
	}
}

// table8 returns the int8 table (ℓ + 128, repeated) of index row r,
// component c.
func (m *Matrix) table8(r, c int) *[64]byte {
	return (*[64]byte)(m.tab8[(m.group8(r)*m.f.Dim+c)*64:])
}

// int8RowGo is the portable twin of the int8 kernels: for one index row
// (codes, 64 bytes a step) and one table, Σ_(b,l) d_(b,l)·S_(b,l) in the
// kernels' float32 order, S_(b,l) = Σ (ℓ[code_j] + 128)·q_j over lane l's
// columns of block b (bytes 4l…4l+3 of each 64-byte step), as VPDPBUSD
// keeps it.
func int8RowGo(tab *[64]byte, codes []byte, q []int8, d []float32) float32 {
	var f [16]float32
	steps := len(codes) / 64
	for b := 0; 16*b < len(d); b++ {
		var s [16]int32
		for st := int8Steps * b; st < min(int8Steps*(b+1), steps); st++ {
			w, x := codes[st*64:][:64], q[st*int8Step:][:int8Step]
			for p, c := range w {
				s[p/4] += int32(tab[c&15])*int32(x[p]) + int32(tab[c>>4])*int32(x[64+p])
			}
		}
		for l := range f {
			f[l] = f[l] + float32(float32(s[l])*d[16*b+l])
		}
	}
	return sum16(&f)
}

// sum16 sums 16 lanes in the order of the assembly reductions (HSUM,
// TREE8): halves, quarters, then adjacent pairs.
func sum16(f *[16]float32) float32 {
	var b [8]float32
	for l := range b {
		b[l] = f[l] + f[l+8]
	}
	c0, c1, c2, c3 := b[0]+b[4], b[1]+b[5], b[2]+b[6], b[3]+b[7]
	return (c0 + c1) + (c2 + c3)
}
