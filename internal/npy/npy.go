package npy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Magic starts every NPY file.
const Magic = "\x93NUMPY"

var (
	// ErrFormat is matched by errors about a malformed file.
	ErrFormat = errors.New("malformed NPY file")
	// ErrUnsupported is matched by errors about a file in a form npy does
	// not read: a format version, or a dtype, it does not support.
	ErrUnsupported = errors.New("unsupported NPY file")
)

// Error is a problem with an NPY file's bytes. Error() is "npy: " and
// the problem; errors.Is(err, ErrUnsupported) holds when Unsupported is
// set and errors.Is(err, ErrFormat) otherwise. Its message does not
// repeat those sentinels, so callers can wrap it with their own.
type Error struct {
	Msg         string
	Unsupported bool
}

// Error implements error.
func (e *Error) Error() string { return "npy: " + e.Msg }

// Is matches ErrUnsupported or ErrFormat as Unsupported says.
func (e *Error) Is(target error) bool {
	return target == ErrUnsupported && e.Unsupported || target == ErrFormat && !e.Unsupported
}

func malformed(format string, args ...any) error {
	return &Error{Msg: fmt.Sprintf(format, args...)}
}

func unsupported(format string, args ...any) error {
	return &Error{Msg: fmt.Sprintf(format, args...), Unsupported: true}
}

// RangeError is Ints' error for an element that does not fit an int.
type RangeError struct {
	Index int64 // the element's index in file order
}

// Error implements error.
func (e *RangeError) Error() string {
	return fmt.Sprintf("npy: element %d: value does not fit an int", e.Index)
}

// Array is a parsed NPY file: its header and its elements' bytes.
type Array struct {
	Descr   string  // the dtype as the header writes it: "<f4", "<i8", "|u1", …
	Kind    byte    // 'i' signed integer, 'u' unsigned integer, 'f' IEEE float
	Size    int     // bytes per element: 1, 2, 4 or 8
	Fortran bool    // the elements are in column-major order (row-major when false)
	Shape   []int64 // the dimensions; () for a scalar
	Data    []byte  // the elements, little-endian, Len()·Size bytes (part of Parse's input)
}

// Len returns the number of elements, the product of Shape.
func (a *Array) Len() int64 { return int64(len(a.Data) / a.Size) }

// Parse parses an NPY file (see the package doc). The Array's Data is a
// slice of data.
func Parse(data []byte) (*Array, error) {
	if len(data) < 8 || string(data[:6]) != Magic {
		return nil, malformed("bad magic, not an NPY file")
	}
	var hlen, start int64
	switch major := data[6]; major {
	case 1:
		if len(data) < 10 {
			return nil, malformed("truncated header")
		}
		hlen, start = int64(binary.LittleEndian.Uint16(data[8:])), 10
	case 2, 3:
		if len(data) < 12 {
			return nil, malformed("truncated header")
		}
		hlen, start = int64(binary.LittleEndian.Uint32(data[8:])), 12
	default:
		return nil, unsupported("format version %d.%d (want 1, 2 or 3)", major, data[7])
	}
	if hlen > int64(len(data))-start {
		return nil, malformed("header of %d bytes but only %d follow", hlen, int64(len(data))-start)
	}
	a, err := parseHeader(string(data[start : start+hlen]))
	if err != nil {
		return nil, err
	}
	body := data[start+hlen:]
	need, ok := dataBytes(a.Shape, a.Size)
	switch have := int64(len(body)); {
	case !ok:
		return nil, malformed("shape %s is absurdly large for a %d-byte file", FormatShape(a.Shape), have)
	case need > have:
		return nil, malformed("shape %s needs %d data bytes, file has %d (truncated)", FormatShape(a.Shape), need, have)
	case need < have:
		return nil, malformed("shape %s needs %d data bytes, file has %d (trailing data)", FormatShape(a.Shape), need, have)
	}
	a.Data = body
	return a, nil
}

// dataBytes returns ∏ shape · size, and false when it overflows int64.
func dataBytes(shape []int64, size int) (int64, bool) {
	if slices.Contains(shape, 0) {
		return 0, true
	}
	n := int64(size)
	for _, d := range shape {
		if n > math.MaxInt64/d {
			return 0, false
		}
		n *= d
	}
	return n, true
}

// FormatShape writes a shape as Python writes the tuple: "()", "(6,)",
// "(2, 3)".
func FormatShape(shape []int64) string {
	parts := make([]string, len(shape))
	for i, d := range shape {
		parts[i] = strconv.FormatInt(d, 10)
	}
	if len(parts) == 1 {
		return "(" + parts[0] + ",)"
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// parseDescr reads a dtype string: a byte-order mark ('<', or any of
// '|', '<', '>', '=' for one-byte types), a kind (i, u or f) and a size.
func parseDescr(d string) (kind byte, size int, err error) {
	if len(d) == 3 && strings.IndexByte("iuf", d[1]) >= 0 {
		kind, size = d[1], int(d[2]-'0')
		single := size == 1 && kind != 'f' && strings.IndexByte("|<>=", d[0]) >= 0
		multi := (size == 2 && kind != 'f' || size == 4 || size == 8) && d[0] == '<'
		if single || multi {
			return kind, size, nil
		}
		if d[0] == '>' {
			return 0, 0, unsupported("dtype %q is big-endian, want little-endian ('<')", d)
		}
	}
	return 0, 0, unsupported("dtype %q, want a little-endian integer or float type such as '<i4', '<i8', '<u2', '|u1', '<f4' or '<f8'", d)
}

// Ints decodes an integer array to ints, in file order. A float array is
// an *Error matching ErrUnsupported, and an element that does not fit an
// int (a uint64 above math.MaxInt64; 8-byte values on a 32-bit machine)
// a *RangeError.
func (a *Array) Ints() ([]int, error) {
	if a.Kind != 'i' && a.Kind != 'u' {
		return nil, unsupported("dtype %q, want a little-endian integer type such as '<i4', '<i8', '<u2' or '<u4'", a.Descr)
	}
	out := make([]int, a.Len())
	signed := a.Kind == 'i'
	for i := range out {
		b := a.Data[i*a.Size:]
		var v int64
		var big bool
		switch {
		case a.Size == 1 && signed:
			v = int64(int8(b[0]))
		case a.Size == 1:
			v = int64(b[0])
		case a.Size == 2 && signed:
			v = int64(int16(binary.LittleEndian.Uint16(b)))
		case a.Size == 2:
			v = int64(binary.LittleEndian.Uint16(b))
		case a.Size == 4 && signed:
			v = int64(int32(binary.LittleEndian.Uint32(b)))
		case a.Size == 4:
			v = int64(binary.LittleEndian.Uint32(b))
		case signed:
			v = int64(binary.LittleEndian.Uint64(b))
		default:
			u := binary.LittleEndian.Uint64(b)
			v, big = int64(u), u > math.MaxInt64
		}
		if big || v > math.MaxInt || v < math.MinInt {
			return nil, &RangeError{Index: int64(i)}
		}
		out[i] = int(v)
	}
	return out, nil
}

// Float32s decodes a float array to float32, in file order; float64
// elements are rounded to float32. An integer array is an *Error matching
// ErrUnsupported.
func (a *Array) Float32s() ([]float32, error) {
	if a.Kind != 'f' {
		return nil, unsupported("dtype %q, want little-endian float32 '<f4' or float64 '<f8'", a.Descr)
	}
	out := make([]float32, a.Len())
	for i := range out {
		if a.Size == 4 {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(a.Data[4*i:]))
		} else {
			out[i] = float32(math.Float64frombits(binary.LittleEndian.Uint64(a.Data[8*i:])))
		}
	}
	return out, nil
}
