package lut

import (
	"math"
	"math/rand/v2"
	"testing"

	"forge/tensor"
)

// Matrix meets model.Linear structurally (lut cannot import model).
var _ interface {
	Mul(dst, x *tensor.Matrix)
	Dims() (out, in int)
	Bytes() int64
} = (*Matrix)(nil)

// testFormats covers every kind, every index width, grouping, every fast
// kernel family and the portable-only formats.
var testFormats = []string{
	"LUT1 per-tensor + pcs", "LUT2 per-tensor + pcs", "LUT3 per-tensor + pcs",
	"LUT4 per-tensor + pcs", "LUT6 per-tensor + pcs", "LUT8 per-tensor + pcs",
	"LUT4 g8 + pcs", "LUT2 g3 + pcs", "LUT4 g5 + pcs",
	"vector 2x16 + pcs", "vector 2x4 + pcs", "vector 2x2 + pcs", "vector 2x64 + pcs",
	"vector 4x16 + pcs", "vector 3x8 + pcs", "vector 2x16 g4 + pcs", "vector 1x16 + pcs",
	"INT8 per-channel", "bf16", "fp16",
}

func mustFormat(t testing.TB, s string) Format {
	t.Helper()
	f, err := ParseFormat(s)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// signPerm is a test Rotation: x'[j] = sign[j]·x[perm[j]], orthogonal and
// exact in float32.
type signPerm struct {
	perm []int
	neg  []bool
}

func (s signPerm) Rotate(dst, x *tensor.Matrix) {
	for t := range x.Rows {
		xr, dr := x.Row(t), dst.Row(t)
		for j, p := range s.perm {
			v := xr[p]
			if s.neg[j] {
				v = -v
			}
			dr[j] = v
		}
	}
}

// randomParts returns random stored arrays of format f at out×in with
// rank-r factors (r > 0) and a random rotation (rot): uniform codes,
// N(0,1) codebook values, scales in [0.05, 2), all rounded to fp16.
func randomParts(f Format, out, in, r int, rot bool, seed uint64) Parts {
	g := rand.New(rand.NewPCG(seed, 0x1a7))
	h := func(v float64) uint16 { return tensor.F32ToF16(float32(v)) }
	var p Parts
	if !f.Quantized() {
		p.Weight = make([]uint16, out*in)
		for i := range p.Weight {
			if f.Kind == BF16 {
				p.Weight[i] = tensor.F32ToBF16(float32(g.NormFloat64()))
			} else {
				p.Weight[i] = h(g.NormFloat64())
			}
		}
	} else {
		n := f.IndexRows(out) * in
		codes := make([]uint8, n)
		for i := range codes {
			if f.Kind == Int8 {
				codes[i] = uint8(int8(g.IntN(255) - 127))
			} else {
				codes[i] = uint8(g.IntN(f.Entries()))
			}
		}
		p.Index = make([]byte, PackedLen(n, f.Bits))
		Pack(p.Index, codes, f.Bits)
		if f.Kind != Int8 {
			p.LUT = make([]uint16, f.Groups(out)*f.Entries()*f.Dim)
			for i := range p.LUT {
				p.LUT[i] = h(g.NormFloat64())
			}
		}
		p.Scale = make([]uint16, out)
		for i := range p.Scale {
			p.Scale[i] = h(0.05 + 1.95*g.Float64())
		}
	}
	if r > 0 {
		p.LowRankA, p.LowRankB = make([]uint16, out*r), make([]uint16, r*in)
		for i := range p.LowRankA {
			p.LowRankA[i] = h(0.1 * g.NormFloat64())
		}
		for i := range p.LowRankB {
			p.LowRankB[i] = h(0.1 * g.NormFloat64())
		}
	}
	if rot {
		s := signPerm{perm: g.Perm(in), neg: make([]bool, in)}
		for j := range s.neg {
			s.neg[j] = g.IntN(2) == 1
		}
		p.Rotation = s
	}
	return p
}

func randomMatrix(t testing.TB, f Format, out, in, r int, rot bool, seed uint64) *Matrix {
	t.Helper()
	m, err := New(f, out, in, randomParts(f, out, in, r, rot, seed))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func randomX(T, in int, seed uint64) *tensor.Matrix {
	g := rand.New(rand.NewPCG(seed, 0xa11))
	x := tensor.New(T, in)
	for i := range x.Data {
		x.Data[i] = float32(g.NormFloat64())
	}
	return x
}

// refCode reads code k of a bits-bit stream one bit at a time: the bit
// layout of doc.go written out plainly, independent of Unpack.
func refCode(idx []byte, bits, k int) int {
	c := 0
	for i := range bits {
		p := k*bits + i
		c |= int(idx[p/8]>>(p%8)&1) << i
	}
	return c
}

// refWeights dequantizes m's stored arrays in float64, straight from the
// format definitions of docs/quantization.md §1 (the reference twin of every
// decoder): Ŵ + A·B as [out][in].
func refWeights(m *Matrix) []float64 {
	f, p := m.Format(), m.Parts()
	out, in := m.Dims()
	w := make([]float64, out*in)
	f16 := func(h uint16) float64 { return float64(tensor.F16ToF32(h)) }
	for o := range out {
		for j := range in {
			var v float64
			switch f.Kind {
			case BF16:
				v = float64(tensor.BF16ToF32(p.Weight[o*in+j]))
			case FP16:
				v = f16(p.Weight[o*in+j])
			case Int8:
				v = f16(p.Scale[o]) * float64(int8(p.Index[o*in+j]))
			default:
				d, k := f.Dim, f.Entries()
				g := 0
				if f.Group > 0 {
					g = o / f.Group
				}
				c := refCode(p.Index, f.Bits, (o/d)*in+j)
				v = f16(p.Scale[o]) * f16(p.LUT[(g*k+c)*d+o%d])
			}
			w[o*in+j] = v
		}
	}
	if r := m.Rank(); r > 0 {
		for o := range out {
			for k := range r {
				a := f16(p.LowRankA[o*r+k])
				for j := range in {
					w[o*in+j] += a * f16(p.LowRankB[k*in+j])
				}
			}
		}
	}
	return w
}

// mulRef is Mul's reference twin: rotate x, dequantize in float64
// (refWeights) and multiply in float64. bound[t][o] = Σ_j |Ŵ[o,j]·x'[t,j]|
// plus, with low-rank factors, Σ_k |A[o,k]|·Σ_j |B[k,j]·x'[t,j]|: the
// scale float32 rounding errors are measured against.
func mulRef(m *Matrix, x *tensor.Matrix) (dst, bound []float64) {
	out, in := m.Dims()
	p := m.Parts()
	if p.Rotation != nil {
		xr := tensor.New(x.Rows, in)
		p.Rotation.Rotate(xr, x)
		x = xr
	}
	w := refWeights(m)
	var base []float64
	if r := m.Rank(); r > 0 {
		// The bound uses |Ŵ| without A·B; add the factor term separately.
		mm := *m
		mm.rank = 0
		base = refWeights(&mm)
	} else {
		base = w
	}
	dst, bound = make([]float64, x.Rows*out), make([]float64, x.Rows*out)
	for t := range x.Rows {
		xr := x.Row(t)
		for o := range out {
			var s, b float64
			for j, xj := range xr {
				s += w[o*in+j] * float64(xj)
				b += math.Abs(base[o*in+j] * float64(xj))
			}
			if r := m.Rank(); r > 0 {
				for k := range r {
					var bk float64
					for j, xj := range xr {
						bk += math.Abs(float64(tensor.F16ToF32(p.LowRankB[k*in+j])) * float64(xj))
					}
					b += math.Abs(float64(tensor.F16ToF32(p.LowRankA[o*r+k]))) * bk
				}
			}
			dst[t*out+o], bound[t*out+o] = s, b
		}
	}
	return dst, bound
}

// checkMul compares m.Mul with mulRef. Tolerance: a float32 dot product of
// n terms has a rounding error that behaves like √n·ε·Σ|w·x| for these
// random, independent roundings (ε = 2⁻²⁴; the worst case is n·ε·Σ|w·x|);
// blocked FMA summation only lowers it, and the final multiplication by
// the scale and the low-rank path add a few ε·Σ more. We allow
// 4·√(n+r+1)·ε·bound + 8ε·bound, plus a tiny absolute term for bound = 0.
// The decoded weights themselves must be exact, so a wrong code, table
// entry or scale shows as an error far above this.
func checkMul(t testing.TB, m *Matrix, x *tensor.Matrix) {
	t.Helper()
	out, in := m.Dims()
	dst := tensor.New(x.Rows, out)
	for i := range dst.Data {
		dst.Data[i] = float32(math.NaN()) // Mul must overwrite every element
	}
	m.Mul(dst, x)
	want, bound := mulRef(m, x)
	const eps = 1.0 / (1 << 24)
	for i, w := range want {
		tol := (4*math.Sqrt(float64(in+m.Rank()+1))+8)*eps*bound[i] + 1e-30
		if got := float64(dst.Data[i]); !(math.Abs(got-w) <= tol) {
			t.Fatalf("%s fast=%v T=%d: dst[%d][%d] = %g, want %g ± %g",
				m, useFast, x.Rows, i/out, i%out, got, w, tol)
		}
	}
}

// forEachPath runs fn with the portable kernels alone ("go") and with
// whatever else this build and CPU run ("fast": the AVX-512 kernels, else
// the AVX2 ones for T < 4 and the widened panels for T ≥ 4).
func forEachPath(t *testing.T, fn func(t *testing.T)) {
	saved := useFast
	defer func() { useFast = saved }()
	useFast = false
	t.Run("go", fn)
	useFast = true
	t.Run("fast", fn)
}
