package lut

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"

	"forge/tensor"
)

// HadamardMaxBlock is the preferred block width of the online rotation
// (docs/quantization.md §3): 1024 columns.
const HadamardMaxBlock = 1024

// hadamardStream is the second PCG seed word of the sign generator (the
// first is the user's seed): ASCII "HADAMARD".
const hadamardStream = 0x48414441_4d415244

// hadamardGrain is how many elements (rows × width) one parallel chunk of
// Rotate gets at least. A row of width 5120 takes ~10 µs here, and handing
// a chunk to a worker a few µs, so smaller batches run on the caller.
const hadamardGrain = 1 << 15

// HadamardBlock returns the block width n the rotation uses for a width:
// 1024 if 1024 divides the width, else the largest power of two that
// divides it (docs/quantization.md §3); that is min(1024, width & −width).
// An odd width gives n = 1: each "block" is a single column, H₁ = [1], and
// the rotation reduces to the random signs D, which is still orthogonal
// but mixes nothing. It panics if width ≤ 0.
func HadamardBlock(width int) int {
	if width <= 0 {
		panic(fmt.Sprintf("lut.HadamardBlock: width %d", width))
	}
	return min(HadamardMaxBlock, width&-width)
}

// Hadamard is the online block Hadamard rotation of docs/quantization.md §3, an
// orthogonal width×width matrix
//
//	M = diag(M₀, M₁, …),   M_b = D_b·H_n/√n,   n = HadamardBlock(width)
//
// with H_n the Sylvester Hadamard matrix (H₁ = [1], H₂ₙ = [[Hₙ, Hₙ], [Hₙ, −Hₙ]],
// symmetric, H_n·H_n = n·I) and D = diag(d₀ … d_{width−1}) random signs.
// Since M·Mᵀ = I, rotating the input rows x' = x·M and the weights
// W' = W·M (W [out, in], a layer y = x·Wᵀ) leaves a float layer unchanged:
// x'·W'ᵀ = x·M·Mᵀ·Wᵀ = x·Wᵀ. The quantizer works on W' and the runtime
// rotates x online (Hadamard implements Rotation; Matrix applies it
// before the product).
//
// The signs derive from the seed alone, by one of two generators
// (SignSource). forge's own (SignsForge, NewHadamard): with
// g = rand.New(rand.NewPCG(seed, 0x484144414D415244)) (math/rand/v2), the
// k-th value g.Uint64() (k = 0, 1, …) holds the signs of columns
// 64k … 64k+63, least significant bit first, a set bit meaning d_j = −1.
// The reference pipeline's (SignsNumpy): d = numpy's
// default_rng(seed).choice([-1, 1], width) (NumpySigns), one draw over the
// whole width. The reference builds M as this type does (D on the
// columns, H_n in Sylvester's natural order; docs/ane.md §3.3), so a layer
// it stored as Q = W·M runs here with the same seed and SignsNumpy. Both
// pipelines use seed 1000+ℓ for the gate/up input and 2000+ℓ for the down
// input of layer ℓ.
//
// A Hadamard is immutable after NewHadamard (or NewHadamardSigns) and safe
// for concurrent use.
type Hadamard struct {
	width, block int
	seed         uint64
	signs        SignSource
	scale        []float32 // [width] d_j/√n, rounded to float32
	jobs         sync.Pool // *hadamardJob, for parallel Rotate
}

// SignSource names the generator of a Hadamard's random signs D. The zero
// value is forge's.
type SignSource uint8

const (
	// SignsForge draws the signs from PCG(seed, "HADAMARD") (Hadamard):
	// every rotation forge's quantizer makes.
	SignsForge SignSource = iota
	// SignsNumpy draws them as numpy's default_rng(seed).choice([-1, 1],
	// width) does (NumpySigns): the reference pipeline's rotations.
	SignsNumpy
)

// String returns "forge" or "numpy".
func (s SignSource) String() string {
	switch s {
	case SignsForge:
		return "forge"
	case SignsNumpy:
		return "numpy"
	}
	return fmt.Sprintf("SignSource(%d)", uint8(s))
}

// hadamardJob carries one parallel Rotate call; run is its rows method
// value, built once so that handing it to tensor.ParallelGrain does not
// allocate.
type hadamardJob struct {
	h      *Hadamard
	dst, x *tensor.Matrix
	run    func(lo, hi int)
}

func (j *hadamardJob) rows(lo, hi int) { j.h.rotateRows(j.dst, j.x, lo, hi) }

// NewHadamard returns the rotation of the given width with signs drawn
// from seed by forge's generator (NewHadamardSigns with SignsForge). It
// panics if width ≤ 0.
func NewHadamard(width int, seed uint64) *Hadamard {
	return NewHadamardSigns(width, seed, SignsForge)
}

// NewHadamardSigns returns the rotation of the given width with signs
// drawn from seed by the generator src (see Hadamard). Only the signs
// differ between sources; the transform is the same. It panics if
// width ≤ 0 or src is not SignsForge or SignsNumpy.
func NewHadamardSigns(width int, seed uint64, src SignSource) *Hadamard {
	n := HadamardBlock(width)
	h := &Hadamard{width: width, block: n, seed: seed, signs: src, scale: make([]float32, width)}
	inv := float32(1 / math.Sqrt(float64(n)))
	switch src {
	case SignsForge:
		g := rand.New(rand.NewPCG(seed, hadamardStream))
		var bits uint64
		for j := range width {
			if j%64 == 0 {
				bits = g.Uint64()
			}
			h.scale[j] = inv
			if bits>>(j%64)&1 == 1 {
				h.scale[j] = -inv
			}
		}
	case SignsNumpy:
		d := make([]int8, width)
		NumpySigns(d, seed)
		for j, s := range d {
			h.scale[j] = float32(s) * inv
		}
	default:
		panic(fmt.Sprintf("lut.NewHadamardSigns: sign source %v", src))
	}
	h.jobs.New = func() any {
		j := &hadamardJob{h: h}
		j.run = j.rows
		return j
	}
	return h
}

// Width returns the number of columns the rotation acts on.
func (h *Hadamard) Width() int { return h.width }

// Sign returns d_j ∈ {−1, +1}, the random sign of column j (0 ≤ j <
// Width()): M's block b is D_b·H_n/√n. Exact float64 implementations of
// the rotation (block reconstruction) are built from it.
func (h *Hadamard) Sign(j int) float64 {
	if h.scale[j] < 0 {
		return -1
	}
	return 1
}

// Block returns the block width n = HadamardBlock(Width()).
func (h *Hadamard) Block() int { return h.block }

// Seed returns the seed the signs were drawn from.
func (h *Hadamard) Seed() uint64 { return h.seed }

// Signs returns the generator the signs were drawn by.
func (h *Hadamard) Signs() SignSource { return h.signs }

// Rotate sets dst = x·M for x and dst [T, width]: per row and block, the
// row is multiplied by d_j/√n and transformed in place by a float32 fast
// Walsh–Hadamard transform (log₂n butterfly stages; the rounding error is
// at most (log₂n + 2)·2⁻²⁴·‖x‖ per row). dst may be x itself (in place) but
// must not otherwise overlap it. Batches of about 2¹⁶ elements (T·width)
// or more are split over the cores; smaller ones, a decode step's single
// row among them, run on the caller and allocate nothing. It panics if the shapes do not match.
func (h *Hadamard) Rotate(dst, x *tensor.Matrix) {
	if x.Cols != h.width || dst.Cols != h.width || dst.Rows != x.Rows {
		panic(fmt.Sprintf("lut.Hadamard.Rotate: x %dx%d, dst %dx%d, width %d", x.Rows, x.Cols, dst.Rows, dst.Cols, h.width))
	}
	grain := (hadamardGrain + h.width - 1) / h.width
	if x.Rows < 2*grain {
		h.rotateRows(dst, x, 0, x.Rows)
		return
	}
	j := h.jobs.Get().(*hadamardJob)
	j.dst, j.x = dst, x
	tensor.ParallelGrain(x.Rows, grain, j.run)
	j.dst, j.x = nil, nil
	h.jobs.Put(j)
}

// RotateWeights sets w = w·M in place for w [out, width]: every row of W
// is transformed like an input row, so that the rotated weights W' = W·M
// and inputs x' = x·M give x'·W'ᵀ = x·Wᵀ. It panics if w.Cols ≠ Width().
func (h *Hadamard) RotateWeights(w *tensor.Matrix) { h.Rotate(w, w) }

// rotateRows rotates rows [lo, hi) of x into dst.
func (h *Hadamard) rotateRows(dst, x *tensor.Matrix, lo, hi int) {
	n := h.block
	for t := lo; t < hi; t++ {
		src, out := x.Row(t), dst.Row(t)
		if n < 4 {
			s := h.scale[:len(out)]
			src = src[:len(out)]
			for j := range out {
				out[j] = src[j] * s[j]
			}
			for b := 0; n == 2 && b+2 <= len(out); b += 2 {
				out[b], out[b+1] = out[b]+out[b+1], out[b]-out[b+1]
			}
			continue
		}
		for b := 0; b < len(out); b += n {
			fwhtScaled(out[b:b+n], src[b:b+n], h.scale[b:b+n])
		}
	}
}

// fwhtScaled sets v = (x ⊙ s)·H_n for n = len(v) a power of two ≥ 4 (v may
// be x itself): the signs and 1/√n are applied while loading, then the
// unnormalized Walsh–Hadamard transform runs in place by log₂n butterfly
// stages (a, b) → (a+b, a−b) at distances 1, 2, 4, …, n/2 (H_n = H_nᵀ, so
// v·H_n = H_n·v). Stages are taken in pairs (h, 2h) as one radix-4 pass
// over the data, with a final radix-2 stage when log₂n is odd. The
// reference twin, an explicit D·H_n/√n product in float64, is
// hadamardRef in hadamard_test.go.
func fwhtScaled(v, x, s []float32) {
	x, s = x[:len(v)], s[:len(v)]
	// Stages 1 and 2 on groups of 4 consecutive values.
	for i := 0; i+4 <= len(v); i += 4 {
		g, xg, sg := v[i:i+4:i+4], x[i:i+4:i+4], s[i:i+4:i+4]
		a, b, c, d := xg[0]*sg[0], xg[1]*sg[1], xg[2]*sg[2], xg[3]*sg[3]
		s0, d0 := a+b, a-b
		s1, d1 := c+d, c-d
		g[0], g[1], g[2], g[3] = s0+s1, d0+d1, s0-s1, d0-d1
	}
	fwhtFrom(v, 4)
}

// fwhtFrom applies the stages at distances h, 2h, …, n/2 (those below h
// done already).
func fwhtFrom(v []float32, h int) {
	n := len(v)
	for ; 4*h <= n; h *= 4 {
		for i := 0; i < n; i += 4 * h {
			radix4(v[i:i+h], v[i+h:i+2*h], v[i+2*h:i+3*h], v[i+3*h:i+4*h])
		}
	}
	if 2*h == n {
		a, b := v[:h], v[h:n]
		for j := range a {
			a[j], b[j] = a[j]+b[j], a[j]-b[j]
		}
	}
}

// radix4 applies the stages at distances h and 2h to the quarters a, b, c,
// d (each of length h) of a 4h-long group.
func radix4(a, b, c, d []float32) {
	b, c, d = b[:len(a)], c[:len(a)], d[:len(a)]
	for j := range a {
		s0, d0 := a[j]+b[j], a[j]-b[j]
		s1, d1 := c[j]+d[j], c[j]-d[j]
		a[j], b[j], c[j], d[j] = s0+s1, d0+d1, s0-s1, d0-d1
	}
}
