package lut

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrFormat is wrapped by every error about a format name or a format that
// does not fit a shape (errors.Is(err, lut.ErrFormat)).
var ErrFormat = errors.New("invalid format")

// Kind is the family of a Format.
type Kind uint8

const (
	// Scalar is `LUT<b> per-tensor + pcs` or `LUT<b> g<G> + pcs`:
	// Ŵ[o,j] = s[o]·L(o)[I[o,j]], one 2^b-entry codebook per tensor or per
	// group of G consecutive output rows.
	Scalar Kind = iota + 1
	// Vector is `vector <d>x<K> + pcs`: one index per d consecutive output
	// rows at one input column, Ŵ[d·r+t, j] = s[d·r+t]·L[I[r,j]][t].
	Vector
	// Int8 is `INT8 per-channel`: Ŵ[o,j] = s[o]·c[o,j], c ∈ [−127, 127],
	// s[o] = max_j |W[o,j]| / 127 (a fixed integer codebook).
	Int8
	// BF16 and FP16 are the unquantized weights in bfloat16 / binary16.
	BF16
	FP16
)

// Index widths the packed layout and the ANE support (docs/quantization.md §1:
// 1/2/3/4/6/8 bits, no 5- or 7-bit).
var validBits = [9]bool{1: true, 2: true, 3: true, 4: true, 6: true, 8: true}

// Limits that keep a hostile format from asking for absurd allocations;
// well past anything the ANE can run (vector length ≤ 16, ≤ 256 values).
const (
	maxVecLen = 256
	maxGroup  = 1 << 30
)

// Format is one storage format of docs/quantization.md §1. The zero Format is
// invalid; ParseFormat returns only valid ones, and Check validates a
// Format built by hand.
type Format struct {
	Kind Kind
	// Bits is the index width: b for Scalar, log2(K) for Vector, 8 for
	// Int8, 16 for BF16 and FP16.
	Bits int
	// Dim is the vector length d along Cout: 1 for Scalar and Int8, 0 for
	// BF16 and FP16.
	Dim int
	// Group is the number of consecutive output rows that share one
	// codebook; 0 means one codebook for the whole tensor. Scalar and
	// Vector only; for Vector a multiple of Dim.
	Group int
}

// Handy formats (the seed's deployed set).
var (
	LUT4     = Format{Kind: Scalar, Bits: 4, Dim: 1}
	Vec2x16  = Format{Kind: Vector, Bits: 4, Dim: 2}
	INT8     = Format{Kind: Int8, Bits: 8, Dim: 1}
	BFloat16 = Format{Kind: BF16, Bits: 16}
	Float16  = Format{Kind: FP16, Bits: 16}
)

// LUTFormat returns `LUT<bits> per-tensor + pcs` (group 0) or
// `LUT<bits> g<group> + pcs`. Check it before use.
func LUTFormat(bits, group int) Format {
	return Format{Kind: Scalar, Bits: bits, Dim: 1, Group: group}
}

// VectorFormat returns `vector <d>x<k> + pcs` (k a power of two). Check it
// before use.
func VectorFormat(d, k int) Format {
	b := 0
	for 1<<b < k {
		b++
	}
	if 1<<b != k {
		b = -1
	}
	return Format{Kind: Vector, Bits: b, Dim: d}
}

// Entries is the number of codebook entries K = 2^Bits (0 for formats
// without a codebook: Int8, BF16, FP16).
func (f Format) Entries() int {
	if f.Kind == Scalar || f.Kind == Vector {
		return 1 << f.Bits
	}
	return 0
}

// Quantized reports whether f stores indices (every kind but BF16, FP16).
func (f Format) Quantized() bool { return f.Kind == Scalar || f.Kind == Vector || f.Kind == Int8 }

// String returns the canonical spelling: "LUT4 per-tensor + pcs",
// "LUT4 g128 + pcs", "vector 2x16 + pcs", "vector 2x16 g128 + pcs",
// "INT8 per-channel", "bf16", "fp16" ("invalid(…)" for an invalid Format).
func (f Format) String() string {
	if f.Check() != nil {
		return fmt.Sprintf("invalid(kind=%d bits=%d dim=%d group=%d)", f.Kind, f.Bits, f.Dim, f.Group)
	}
	g := " per-tensor"
	if f.Group > 0 {
		g = " g" + strconv.Itoa(f.Group)
	}
	switch f.Kind {
	case Scalar:
		return fmt.Sprintf("LUT%d%s + pcs", f.Bits, g)
	case Vector:
		if f.Group == 0 {
			g = ""
		}
		return fmt.Sprintf("vector %dx%d%s + pcs", f.Dim, 1<<f.Bits, g)
	case Int8:
		return "INT8 per-channel"
	case BF16:
		return "bf16"
	default:
		return "fp16"
	}
}

// Check reports whether f is a valid format, independent of any shape.
func (f Format) Check() error {
	switch f.Kind {
	case Scalar, Vector:
		if f.Bits < 0 || f.Bits >= len(validBits) || !validBits[f.Bits] {
			return fmt.Errorf("%w: %d-bit indices are not supported (index widths 1, 2, 3, 4, 6, 8)", ErrFormat, f.Bits)
		}
		if f.Kind == Scalar && f.Dim != 1 {
			return fmt.Errorf("%w: a scalar LUT has vector length 1, not %d", ErrFormat, f.Dim)
		}
		if f.Dim < 1 || f.Dim > maxVecLen {
			return fmt.Errorf("%w: vector length %d outside [1, %d]", ErrFormat, f.Dim, maxVecLen)
		}
		if f.Group < 0 || f.Group > maxGroup {
			return fmt.Errorf("%w: group of %d rows outside [1, %d]", ErrFormat, f.Group, maxGroup)
		}
		if f.Group%f.Dim != 0 {
			return fmt.Errorf("%w: group of %d rows is not a multiple of the vector length %d", ErrFormat, f.Group, f.Dim)
		}
	case Int8:
		if f.Bits != 8 || f.Dim != 1 || f.Group != 0 {
			return fmt.Errorf("%w: INT8 per-channel is bits 8, dim 1, no groups", ErrFormat)
		}
	case BF16, FP16:
		if f.Bits != 16 || f.Dim != 0 || f.Group != 0 {
			return fmt.Errorf("%w: bf16/fp16 are bits 16, dim 0, no groups", ErrFormat)
		}
	default:
		return fmt.Errorf("%w: unknown kind %d", ErrFormat, f.Kind)
	}
	return nil
}

// CheckShape reports whether f can store an out×in matrix: both at least
// 1, and Cout divisible by the vector length.
func (f Format) CheckShape(out, in int) error {
	if err := f.Check(); err != nil {
		return err
	}
	if out < 1 || in < 1 {
		return fmt.Errorf("%w: %s: empty shape %dx%d", ErrFormat, f, out, in)
	}
	if uint64(out)*uint64(in) > 1<<46 {
		return fmt.Errorf("%w: %s: shape %dx%d too large", ErrFormat, f, out, in)
	}
	if f.Kind == Vector && out%f.Dim != 0 {
		return fmt.Errorf("%w: %s: Cout %d is not divisible by the vector length %d", ErrFormat, f, out, f.Dim)
	}
	return nil
}

// ParseFormat parses a format name, case-insensitively, in the seed's
// spellings:
//
//	LUT<b> per-tensor + pcs     b ∈ {1,2,3,4,6,8}  ("per-tensor" may be omitted)
//	LUT<b> g<G> + pcs           G output rows per codebook ("per-group-<G>" also accepted)
//	vector <d>x<K> + pcs        K a power of two, log2 K ∈ {1,2,3,4,6,8}; optional g<G>
//	INT8 per-channel            ("INT8" alone also accepted)
//	bf16, fp16
//
// Whitespace around "+" is optional. LUT and vector formats always carry
// per-output-channel scales, so "+ pcs" is required for them. Errors wrap
// ErrFormat and quote the input.
func ParseFormat(s string) (Format, error) {
	f, err := parseFormat(s)
	if err != nil {
		return Format{}, fmt.Errorf("lut: format %q: %w", s, err)
	}
	return f, nil
}

func parseFormat(s string) (Format, error) {
	words := strings.Fields(strings.ReplaceAll(strings.ToLower(s), "+", " + "))
	pcs := len(words) >= 2 && words[len(words)-2] == "+" && words[len(words)-1] == "pcs"
	if pcs {
		words = words[:len(words)-2]
	}
	if len(words) == 0 {
		return Format{}, fmt.Errorf("%w: empty", ErrFormat)
	}
	var f Format
	switch head := words[0]; {
	case head == "bf16" || head == "fp16":
		if len(words) > 1 || pcs {
			return Format{}, fmt.Errorf("%w: %s takes no options", ErrFormat, head)
		}
		if head == "bf16" {
			return BFloat16, nil
		}
		return Float16, nil
	case head == "int8":
		if pcs || len(words) > 2 || (len(words) == 2 && words[1] != "per-channel") {
			return Format{}, fmt.Errorf("%w: the INT8 format is spelled \"INT8 per-channel\"", ErrFormat)
		}
		return INT8, nil
	case strings.HasPrefix(head, "lut"):
		b, err := atoi(head[3:], "index width")
		if err != nil {
			return Format{}, err
		}
		f = LUTFormat(b, 0)
		words = words[1:]
	case head == "vector":
		if len(words) < 2 {
			return Format{}, fmt.Errorf("%w: vector format needs <d>x<K>, e.g. \"vector 2x16 + pcs\"", ErrFormat)
		}
		ds, ks, ok := strings.Cut(words[1], "x")
		if !ok {
			return Format{}, fmt.Errorf("%w: %q is not <d>x<K>", ErrFormat, words[1])
		}
		d, err := atoi(ds, "vector length")
		if err != nil {
			return Format{}, err
		}
		k, err := atoi(ks, "entry count")
		if err != nil {
			return Format{}, err
		}
		f = VectorFormat(d, k)
		if f.Bits < 0 {
			return Format{}, fmt.Errorf("%w: %d entries is not a power of two", ErrFormat, k)
		}
		words = words[2:]
	default:
		return Format{}, fmt.Errorf("%w: unknown format (want LUT<b> per-tensor + pcs, LUT<b> g<G> + pcs, vector <d>x<K> + pcs, INT8 per-channel, bf16 or fp16)", ErrFormat)
	}
	if len(words) > 1 {
		return Format{}, fmt.Errorf("%w: unexpected %q", ErrFormat, strings.Join(words[1:], " "))
	}
	if len(words) == 1 {
		g, err := parseGroup(words[0])
		if err != nil {
			return Format{}, err
		}
		f.Group = g
	}
	if !pcs {
		return Format{}, fmt.Errorf("%w: LUT and vector formats need \"+ pcs\" (forge always stores per-output-channel scales)", ErrFormat)
	}
	return f, f.Check()
}

// parseGroup parses "per-tensor" (0), "g<G>" or "per-group-<G>".
func parseGroup(w string) (int, error) {
	var num string
	switch {
	case w == "per-tensor":
		return 0, nil
	case strings.HasPrefix(w, "per-group-"):
		num = w[len("per-group-"):]
	case strings.HasPrefix(w, "g"):
		num = w[1:]
	default:
		return 0, fmt.Errorf("%w: unexpected %q (want per-tensor or g<G>)", ErrFormat, w)
	}
	g, err := atoi(num, "group size")
	if err != nil {
		return 0, err
	}
	if g < 1 {
		return 0, fmt.Errorf("%w: group size %d < 1", ErrFormat, g)
	}
	return g, nil
}

// atoi parses a small non-negative decimal (digits only, ≤ 9 of them).
func atoi(s, what string) (int, error) {
	if s == "" || len(s) > 9 || strings.Trim(s, "0123456789") != "" {
		return 0, fmt.Errorf("%w: %s %q is not a number", ErrFormat, what, s)
	}
	n, _ := strconv.Atoi(s)
	return n, nil
}

// Size is the exact byte accounting of one matrix in a format: what its
// stored arrays hold (and what one Mul reads).
type Size struct {
	Index   int64 // packed indices (INT8: one byte per code; bf16/fp16: the weights)
	LUT     int64 // fp16 codebooks
	Scale   int64 // fp16 per-output-channel scales
	LowRank int64 // fp16 factors A [out, r] and B [r, in]
}

// Total is the sum of all parts.
func (s Size) Total() int64 { return s.Index + s.LUT + s.Scale + s.LowRank }

// Groups returns the number of codebooks of an out-row matrix: ⌈out/G⌉, or
// 1 per tensor (0 for formats without a codebook).
func (f Format) Groups(out int) int {
	switch {
	case f.Kind != Scalar && f.Kind != Vector:
		return 0
	case f.Group == 0:
		return 1
	}
	return (out + f.Group - 1) / f.Group
}

// IndexRows is the number of rows of the index matrix: out/Dim (out for
// Int8, 0 for BF16 and FP16).
func (f Format) IndexRows(out int) int {
	if !f.Quantized() {
		return 0
	}
	return out / f.Dim
}

// Size returns the byte accounting of an out×in matrix with rank-r
// low-rank factors. Indices are a packed bit stream (doc.go), so
// Index = ⌈(out/d)·in·Bits/8⌉: for `vector 2x16 + pcs` that is out·in/4 and
// the total is out·in/4 + 64 + 2·out. f must fit the shape (CheckShape).
func (f Format) Size(out, in, r int) Size {
	s := Size{LowRank: 2 * int64(r) * int64(out+in)}
	if !f.Quantized() {
		s.Index = 2 * int64(out) * int64(in)
		return s
	}
	s.Index = (int64(f.IndexRows(out))*int64(in)*int64(f.Bits) + 7) / 8
	s.LUT = 2 * int64(f.Groups(out)) * int64(f.Entries()) * int64(f.Dim)
	s.Scale = 2 * int64(out)
	return s
}

// BitsPerWeight is 8·Size(out, in, r).Total() / (out·in).
func (f Format) BitsPerWeight(out, in, r int) float64 {
	return 8 * float64(f.Size(out, in, r).Total()) / (float64(out) * float64(in))
}
