package safetensors

import (
	"fmt"
	"math"
)

// DType is the element type of a stored tensor. The zero value is not a
// valid dtype, so a forgotten DType field is caught by [Create].
type DType int

// The dtypes forge reads and writes, named as in the header's "dtype" field.
const (
	BF16 DType = iota + 1 // bfloat16: 1 sign, 8 exponent, 7 mantissa bits
	F16                   // IEEE 754 binary16
	F32                   // IEEE 754 binary32
	I8
	U8
	I16
	I32
	I64
	BOOL // one byte per element, 0 or 1
)

var dtypeNames = [...]string{BF16: "BF16", F16: "F16", F32: "F32", I8: "I8", U8: "U8",
	I16: "I16", I32: "I32", I64: "I64", BOOL: "BOOL"}

var dtypeSizes = [...]int{BF16: 2, F16: 2, F32: 4, I8: 1, U8: 1, I16: 2, I32: 4, I64: 8, BOOL: 1}

// valid reports whether d is one of the declared constants.
func (d DType) valid() bool { return d >= BF16 && d <= BOOL }

// Size returns the bytes per element, or 0 for an invalid DType.
func (d DType) Size() int {
	if !d.valid() {
		return 0
	}
	return dtypeSizes[d]
}

// String returns the header name ("BF16", "F32", …), or "DType(n)" for an
// invalid value.
func (d DType) String() string {
	if !d.valid() {
		return fmt.Sprintf("DType(%d)", int(d))
	}
	return dtypeNames[d]
}

// ParseDType returns the DType named s (case-sensitive, as in the header).
// The error wraps [ErrFormat].
func ParseDType(s string) (DType, error) {
	for d := BF16; d <= BOOL; d++ {
		if dtypeNames[d] == s {
			return d, nil
		}
	}
	return 0, fmt.Errorf("%w: unknown dtype %q", ErrFormat, s)
}

// TensorInfo describes one stored tensor.
type TensorInfo struct {
	Name  string
	DType DType
	Shape []int // row-major, last dimension fastest; [] is a scalar
	// Begin and End delimit the tensor's bytes, relative to the start of the
	// data area, End exclusive. Create ignores and recomputes them.
	Begin, End int64
}

// NumElements returns the product of Shape (1 for a scalar). It does not
// check for overflow: infos from a File were validated, and Create checks its
// input with checkedBytes.
func (t TensorInfo) NumElements() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// checkedBytes returns NumElements × dtype size, or an error describing a
// negative dimension or an overflow. Like the reference implementation it
// multiplies left to right and rejects any intermediate product that
// overflows, even when a later dimension is 0. d must be valid.
func checkedBytes(shape []int, d DType) (int64, error) {
	n := int64(1)
	for _, dim := range shape {
		if dim < 0 {
			return 0, fmt.Errorf("shape %v has a negative dimension", shape)
		}
		if dim != 0 && n > math.MaxInt64/int64(dim) {
			return 0, fmt.Errorf("shape %v: element count overflows", shape)
		}
		n *= int64(dim)
	}
	size := int64(d.Size())
	if n > math.MaxInt || n > math.MaxInt64/size {
		return 0, fmt.Errorf("shape %v × %v: byte size overflows", shape, d)
	}
	return n * size, nil
}
