package lut

import (
	"errors"
	"fmt"

	"forge/tensor"
)

// ErrParts is wrapped by every error New returns about arrays that do not
// match their format and shape (errors.Is(err, lut.ErrParts)).
var ErrParts = errors.New("arrays do not match the format")

// Rotation is an orthogonal transform applied to every input row before
// the product, x' = x·M (docs/quantization.md §3: the online block Hadamard
// rotation, Hadamard in this package). A Matrix with a Rotation computes
// y = Ŵ·x' (+ A·(B·x')): its stored weights and low-rank factors live in
// the rotated input basis.
type Rotation interface {
	// Rotate sets dst = x·M for x and dst [T, in]; dst does not alias x
	// and is already shaped. It must be safe for concurrent use and, to
	// keep decode allocation-free, should not allocate.
	Rotate(dst, x *tensor.Matrix)
}

// Parts are the stored arrays of a Matrix, exactly as a bundle holds them
// (layouts in doc.go). All fp16 arrays hold IEEE binary16 bit patterns.
type Parts struct {
	LUT   []uint16 // [groups][K][d] fp16 codebooks (Scalar, Vector; nil otherwise)
	Index []byte   // packed codes of the [out/d][in] index matrix; INT8: int8 codes [out][in]
	Scale []uint16 // [out] fp16 per-output-channel scales (every quantized kind)
	// Weight holds the unquantized [out][in] bf16 or fp16 weights (BF16,
	// FP16 only).
	Weight []uint16
	// LowRankA [out][r] and LowRankB [r][in], fp16, both nil or both set:
	// the product adds A·(B·x') (docs/quantization.md §5).
	LowRankA, LowRankB []uint16
	// Rotation, if not nil, is applied to x before the product.
	Rotation Rotation
	// Evict, if not nil, is called with Index once the Matrix has copied
	// it into the layout its int8 products read (int8vert.go), so that
	// an Index mapped from a file can leave the resident set (a bundle:
	// safetensors.File.Evict). Index must stay readable after it.
	Evict func(index []byte)
}

// Matrix is a quantized (or bf16/fp16) weight matrix W [out, in] in one
// Format (docs/architecture.md §3):
//
//	Ŵ[o,j] = scale[o] · book(o)[code(o,j)][o mod d]
//
// with d the vector length along Cout (1 for scalars), book(o) the
// codebook of o's row group, and INT8 a fixed integer codebook
// (book[c] = c for c ∈ [−127, 127]). It implements model.Linear:
//
//	dst[t] = Ŵ·x'[t] + A·(B·x'[t]),   x' = x·M (M the Rotation, if any)
//
// computed straight from the packed indices. A Matrix never copies or
// modifies its arrays (they may alias a read-only mmap'd file) and is safe
// for concurrent use.
type Matrix struct {
	f       Format
	out, in int
	p       Parts
	rank    int // r of the low-rank factors (0: none)

	// Derived at construction, not stored.
	tab     []float32     // [groups][d][stride] widened codebooks, transposed, repeated to stride
	stride  int           // max(K, 16): floats per table
	rowsG   int           // index rows per codebook group (0: one group)
	scale   []float32     // [out] widened scales
	dense   *tensor.Dense // BF16, FP16 weights
	lrA     *tensor.Dense // [out][r] fp16
	lrB     *tensor.Dense // [r][in] fp16
	fam     family        // which fast kernel family applies (kernel_*.go)
	tab8    []byte        // [groups][d][64] int8 codebooks + 128, repeated (int8act.go); nil: no int8 kernels
	idx8    []byte        // index rows zero-padded to whole int8 steps when in is not a multiple of 128 (codes8)
	cbd     []float32     // [groups] their scales c_g
	narrow8 bool          // |ℓ| ≤ 64 in tab8 (codebookBound): the AVX2 kernels' condition
	vert    *vertTiles    // not nil: the int8 products take the tile order (int8vert.go)
}

// int8Table is the fixed INT8 codebook: entry c is int8(c) as a float.
var int8Table = func() []float32 {
	t := make([]float32, 256)
	for c := range t {
		t[c] = float32(int8(c))
	}
	return t
}()

// New builds a Matrix of format f and shape out×in from its stored arrays,
// which are not copied and must not be modified afterwards. Every array
// must have exactly the length the format and shape call for (Format.Size),
// packing padding bits must be zero, INT8 codes must lie in [−127, 127]
// and fp16 codebook, scale and factor values must be finite. New never
// panics on bad arrays (they come from disk): it returns an error wrapping
// ErrFormat or ErrParts.
func New(f Format, out, in int, p Parts) (*Matrix, error) {
	m, err := newMatrix(f, out, in, p)
	if err != nil {
		return nil, fmt.Errorf("lut: %s %dx%d: %w", f, out, in, err)
	}
	return m, nil
}

func newMatrix(f Format, out, in int, p Parts) (*Matrix, error) {
	if err := f.CheckShape(out, in); err != nil {
		return nil, err
	}
	m := &Matrix{f: f, out: out, in: in, p: p}
	if err := m.checkLowRank(); err != nil {
		return nil, err
	}
	if !f.Quantized() {
		if p.LUT != nil || p.Index != nil || p.Scale != nil {
			return nil, fmt.Errorf("%w: %s stores only Weight", ErrParts, f)
		}
		if len(p.Weight) != out*in {
			return nil, fmt.Errorf("%w: Weight has %d values, want %d", ErrParts, len(p.Weight), out*in)
		}
		if f.Kind == BF16 {
			m.dense = tensor.DenseBF16(out, in, p.Weight)
		} else {
			m.dense = tensor.DenseF16(out, in, p.Weight)
		}
		return m, nil
	}
	sz := f.Size(out, in, 0)
	if p.Weight != nil {
		return nil, fmt.Errorf("%w: a quantized format stores no Weight", ErrParts)
	}
	if int64(len(p.Index)) != sz.Index {
		return nil, fmt.Errorf("%w: Index has %d bytes, want %d", ErrParts, len(p.Index), sz.Index)
	}
	if int64(len(p.LUT))*2 != sz.LUT {
		return nil, fmt.Errorf("%w: LUT has %d values, want %d", ErrParts, len(p.LUT), sz.LUT/2)
	}
	if len(p.Scale) != out {
		return nil, fmt.Errorf("%w: Scale has %d values, want %d", ErrParts, len(p.Scale), out)
	}
	if err := checkFinite("LUT", p.LUT); err != nil {
		return nil, err
	}
	if err := checkFinite("Scale", p.Scale); err != nil {
		return nil, err
	}
	if err := m.checkIndex(); err != nil {
		return nil, err
	}
	m.scale = make([]float32, out)
	tensor.F16ToF32Slice(m.scale, p.Scale)
	m.buildTables()
	m.buildInt8Tables()
	m.fam = chooseFamily(f, in)
	return m, nil
}

// checkLowRank validates the factor lengths and finiteness.
func (m *Matrix) checkLowRank() error {
	a, b := m.p.LowRankA, m.p.LowRankB
	if a == nil && b == nil {
		return nil
	}
	if len(a) == 0 || len(a)%m.out != 0 {
		return fmt.Errorf("%w: LowRankA has %d values, not a positive multiple of out = %d", ErrParts, len(a), m.out)
	}
	r := len(a) / m.out
	if len(b) != r*m.in {
		return fmt.Errorf("%w: LowRankB has %d values, want r·in = %d·%d", ErrParts, len(b), r, m.in)
	}
	if err := checkFinite("LowRankA", a); err != nil {
		return err
	}
	if err := checkFinite("LowRankB", b); err != nil {
		return err
	}
	m.rank = r
	m.lrA = tensor.DenseF16(m.out, r, a)
	m.lrB = tensor.DenseF16(r, m.in, b)
	return nil
}

// checkIndex checks the padding bits after the last code (zero) and, for
// INT8, that no code is −128.
func (m *Matrix) checkIndex() error {
	idx := m.p.Index
	if m.f.Kind == Int8 {
		for i, c := range idx {
			if c == 0x80 {
				return fmt.Errorf("%w: INT8 code %d at [%d][%d] is outside [-127, 127]", ErrParts, int8(c), i/m.in, i%m.in)
			}
		}
		return nil
	}
	used := int64(m.f.IndexRows(m.out)) * int64(m.in) * int64(m.f.Bits) % 8
	if used != 0 && idx[len(idx)-1]>>used != 0 {
		return fmt.Errorf("%w: Index padding bits after the last code are not zero", ErrParts)
	}
	return nil
}

// checkFinite reports the first fp16 value of v that is Inf or NaN.
func checkFinite(name string, v []uint16) error {
	for i, h := range v {
		if h&0x7c00 == 0x7c00 {
			return fmt.Errorf("%w: %s[%d] = %v is not finite", ErrParts, name, i, tensor.F16ToF32(h))
		}
	}
	return nil
}

// buildTables widens the codebooks into m.tab, transposed so that
// component t of group g is the contiguous table tab[(g·d+t)·stride:][:K].
func (m *Matrix) buildTables() {
	if m.f.Kind == Int8 {
		m.tab, m.stride = int8Table, 256
		return
	}
	k, d, groups := m.f.Entries(), m.f.Dim, m.f.Groups(m.out)
	m.stride = max(k, 16)
	m.tab = make([]float32, groups*d*m.stride)
	for g := range groups {
		for e := range k {
			for t := range d {
				m.tab[(g*d+t)*m.stride+e] = tensor.F16ToF32(m.p.LUT[(g*k+e)*d+t])
			}
		}
	}
	// Entries past K repeat the table with period K, so that a 16-lane
	// permute indexed by the low 4 bits of a word holding further codes
	// above the current one still picks the right entry (kernel_avx512.go).
	for i := range groups * d {
		t := m.tab[i*m.stride:][:m.stride]
		for e := k; e < m.stride; e++ {
			t[e] = t[e%k]
		}
	}
	if m.f.Group > 0 {
		m.rowsG = m.f.Group / d
	}
}

// table returns the widened codebook component t of index row r.
func (m *Matrix) table(r, t int) []float32 {
	g := 0
	if m.rowsG > 0 {
		g = r / m.rowsG
	}
	return m.tab[(g*m.f.Dim+t)*m.stride:][:m.stride]
}

// Dims returns W's shape: out rows (outputs) of in columns (inputs).
func (m *Matrix) Dims() (out, in int) { return m.out, m.in }

// Format returns the matrix's format.
func (m *Matrix) Format() Format { return m.f }

// Rank returns the rank r of the low-rank factors (0 when there are none).
func (m *Matrix) Rank() int { return m.rank }

// Parts returns the stored arrays (aliases, not copies: do not modify).
func (m *Matrix) Parts() Parts { return m.p }

// Size returns the exact byte accounting of the stored arrays.
func (m *Matrix) Size() Size { return m.f.Size(m.out, m.in, m.rank) }

// Bytes returns the total stored bytes: what one Mul reads from memory.
func (m *Matrix) Bytes() int64 { return m.Size().Total() }

// BitsPerWeight is 8·Bytes()/(out·in), all arrays included.
func (m *Matrix) BitsPerWeight() float64 {
	return 8 * float64(m.Bytes()) / (float64(m.out) * float64(m.in))
}

// Codes unpacks the whole index matrix ([out/d][in], row-major) into dst
// (len ≥ out/d·in); INT8 codes come out as their two's-complement bytes.
// It panics for BF16 and FP16.
func (m *Matrix) Codes(dst []uint8) {
	if !m.f.Quantized() {
		panic("lut.Matrix.Codes: " + m.f.String() + " has no codes")
	}
	Unpack(dst[:m.f.IndexRows(m.out)*m.in], m.p.Index, m.f.Bits, 0)
}

// Dequantize sets dst [out, in] to the matrix Mul applies to the
// (rotated) input: Ŵ + A·B. Ŵ[o,j] = scale[o]·book(o)[code][o mod d] is
// computed as one float32 product of two fp16 values, which is exact
// (11 + 11 significant bits fit float32's 24), so Ŵ equals the stored
// quantized matrix exactly; A·B is summed in float64 and rounded once.
// BF16 and FP16 are widened exactly.
func (m *Matrix) Dequantize(dst *tensor.Matrix) {
	if dst.Rows != m.out || dst.Cols != m.in {
		panic(fmt.Sprintf("lut.Matrix.Dequantize: %dx%d into %dx%d", m.out, m.in, dst.Rows, dst.Cols))
	}
	switch {
	case m.f.Kind == BF16:
		tensor.BF16ToF32Slice(dst.Data, m.p.Weight)
	case m.f.Kind == FP16:
		tensor.F16ToF32Slice(dst.Data, m.p.Weight)
	default:
		codes := make([]uint8, m.in)
		d := m.f.Dim
		for r := range m.f.IndexRows(m.out) {
			Unpack(codes, m.p.Index, m.f.Bits, r*m.in)
			for t := range d {
				o := r*d + t
				tab, s, row := m.table(r, t), m.scale[o], dst.Row(o)
				for j, c := range codes {
					row[j] = s * tab[c]
				}
			}
		}
	}
	if m.rank > 0 {
		m.addLowRank(dst)
	}
}

// addLowRank adds A·B to dst, summed in float64.
func (m *Matrix) addLowRank(dst *tensor.Matrix) {
	r := m.rank
	a, b := make([]float32, r), make([]float32, r*m.in)
	tensor.F16ToF32Slice(b, m.p.LowRankB)
	acc := make([]float64, m.in)
	for o := range m.out {
		tensor.F16ToF32Slice(a, m.p.LowRankA[o*r:(o+1)*r])
		clear(acc)
		for k, ak := range a {
			for j, bkj := range b[k*m.in : (k+1)*m.in] {
				acc[j] += float64(ak) * float64(bkj)
			}
		}
		row := dst.Row(o)
		for j := range row {
			row[j] = float32(float64(row[j]) + acc[j])
		}
	}
}

// String describes the matrix: format, shape, bytes and bits per weight.
func (m *Matrix) String() string {
	s := fmt.Sprintf("%s %dx%d, %d bytes (%.3f bpw)", m.f, m.out, m.in, m.Bytes(), m.BitsPerWeight())
	if m.rank > 0 {
		s += fmt.Sprintf(", low-rank r=%d", m.rank)
	}
	if m.p.Rotation != nil {
		s += ", rotated input"
	}
	return s
}
