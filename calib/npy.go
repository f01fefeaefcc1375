package calib

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// npyMagic starts every NPY file.
const npyMagic = "\x93NUMPY"

// npyDtype is an accepted integer element type.
type npyDtype struct {
	signed bool
	size   int // bytes: 1, 2, 4 or 8
}

// npyHeader is the dictionary of an NPY header.
type npyHeader struct {
	dtype   npyDtype
	fortran bool
	shape   []int64
}

// parseNPY reads an NPY file (format versions 1.0, 2.0 and 3.0) holding a 2-D C-order array of
// little-endian integers, int8/16/32/64 or uint8/16/32/64 ("<i4", "<i8", "<u2", ..., "|u1"),
// and returns its rows. Anything else is refused: a bad magic, another rank, Fortran order,
// big-endian or non-integer dtypes, rows of zero columns, data shorter or longer than the shape
// needs, or a value that does not fit in an int. The rows share one backing array.
func parseNPY(data []byte) ([][]int, error) {
	if len(data) < 8 || string(data[:6]) != npyMagic {
		return nil, fmt.Errorf("npy: bad magic, not an NPY file: %w", ErrFormat)
	}
	var hlen, start int
	switch major := data[6]; major {
	case 1:
		if len(data) < 10 {
			return nil, fmt.Errorf("npy: truncated header: %w", ErrFormat)
		}
		hlen, start = int(binary.LittleEndian.Uint16(data[8:])), 10
	case 2, 3:
		if len(data) < 12 {
			return nil, fmt.Errorf("npy: truncated header: %w", ErrFormat)
		}
		hlen, start = int(binary.LittleEndian.Uint32(data[8:])), 12
	default:
		return nil, fmt.Errorf("npy: format version %d.%d (want 1, 2 or 3): %w", major, data[7], ErrUnsupported)
	}
	if hlen > len(data)-start {
		return nil, fmt.Errorf("npy: header of %d bytes but only %d follow: %w", hlen, len(data)-start, ErrFormat)
	}
	h, err := parseNPYHeader(string(data[start : start+hlen]))
	if err != nil {
		return nil, err
	}
	if h.fortran {
		return nil, fmt.Errorf("npy: Fortran-order array (save np.ascontiguousarray(a)): %w", ErrUnsupported)
	}
	if len(h.shape) != 2 {
		return nil, fmt.Errorf("npy: shape %v has %d dimensions, want 2 (rows, tokens): %w", h.shape, len(h.shape), ErrUnsupported)
	}
	return decodeNPY(data[start+hlen:], h)
}

// decodeNPY checks body against the header's shape and decodes the rows.
func decodeNPY(body []byte, h npyHeader) ([][]int, error) {
	rows, cols, size := h.shape[0], h.shape[1], int64(h.dtype.size)
	if cols == 0 && rows > 0 {
		return nil, fmt.Errorf("npy: shape %v: rows of zero tokens: %w", h.shape, ErrFormat)
	}
	have := int64(len(body))
	if rows > 0 && rows > math.MaxInt64/size/cols {
		return nil, fmt.Errorf("npy: shape %v is absurdly large for a %d-byte file: %w", h.shape, have, ErrFormat)
	}
	if need := rows * cols * size; need > have {
		return nil, fmt.Errorf("npy: shape %v needs %d data bytes, file has %d (truncated): %w", h.shape, need, have, ErrFormat)
	} else if need < have {
		return nil, fmt.Errorf("npy: shape %v needs %d data bytes, file has %d (trailing data): %w", h.shape, need, have, ErrFormat)
	}
	flat := make([]int, rows*cols)
	for i := range flat {
		b := body[int64(i)*size:]
		var v int64
		var big bool
		switch {
		case size == 1 && h.dtype.signed:
			v = int64(int8(b[0]))
		case size == 1:
			v = int64(b[0])
		case size == 2 && h.dtype.signed:
			v = int64(int16(binary.LittleEndian.Uint16(b)))
		case size == 2:
			v = int64(binary.LittleEndian.Uint16(b))
		case size == 4 && h.dtype.signed:
			v = int64(int32(binary.LittleEndian.Uint32(b)))
		case size == 4:
			v = int64(binary.LittleEndian.Uint32(b))
		case h.dtype.signed:
			v = int64(binary.LittleEndian.Uint64(b))
		default:
			u := binary.LittleEndian.Uint64(b)
			v, big = int64(u), u > math.MaxInt64
		}
		if big || v > math.MaxInt || v < math.MinInt {
			return nil, fmt.Errorf("npy: row %d, position %d: value does not fit an int: %w", int64(i)/cols, int64(i)%cols, ErrTokenRange)
		}
		flat[i] = int(v)
	}
	out := make([][]int, rows)
	for r := range out {
		lo, hi := int64(r)*cols, int64(r+1)*cols
		out[r] = flat[lo:hi:hi]
	}
	return out, nil
}

// parseNPYHeader reads the Python dict literal of an NPY header, such as
// {'descr': '<i4', 'fortran_order': False, 'shape': (3, 4), }, padded with spaces and "\n".
// It needs exactly the keys descr, fortran_order and shape.
func parseNPYHeader(s string) (npyHeader, error) {
	var h npyHeader
	p := pyLexer{s: s}
	fail := func(what string) (npyHeader, error) {
		return npyHeader{}, fmt.Errorf("npy: header %q: %s: %w", strings.TrimSpace(s), what, ErrFormat)
	}
	if !p.eat('{') {
		return fail("not a dict")
	}
	seen := map[string]bool{}
	for !p.eat('}') {
		key, ok := p.str()
		if !ok || !p.eat(':') {
			return fail("want 'key': value")
		}
		if seen[key] {
			return fail("key " + strconv.Quote(key) + " repeated")
		}
		seen[key] = true
		switch key {
		case "descr":
			d, ok := p.str()
			if !ok {
				return npyHeader{}, fmt.Errorf("npy: header %q: descr is not a string (structured dtype?): %w", strings.TrimSpace(s), ErrUnsupported)
			}
			dt, err := parseDtype(d)
			if err != nil {
				return npyHeader{}, err
			}
			h.dtype = dt
		case "fortran_order":
			b, ok := p.boolean()
			if !ok {
				return fail("fortran_order is not True or False")
			}
			h.fortran = b
		case "shape":
			shape, ok := p.tuple()
			if !ok {
				return fail("shape is not a tuple of non-negative integers")
			}
			h.shape = shape
		default:
			return fail("unexpected key " + strconv.Quote(key))
		}
		if !p.eat(',') && !p.peek('}') {
			return fail("want ',' or '}'")
		}
	}
	if p.skip(); p.i != len(p.s) {
		return fail("text after the dict")
	}
	if !seen["descr"] || !seen["fortran_order"] || !seen["shape"] {
		return fail("want keys descr, fortran_order and shape")
	}
	return h, nil
}

// parseDtype accepts little-endian integer type strings: "<i2", "<u4", "|u1", "<i8", ...
func parseDtype(d string) (npyDtype, error) {
	if len(d) == 3 && (d[1] == 'i' || d[1] == 'u') {
		dt := npyDtype{signed: d[1] == 'i', size: int(d[2] - '0')}
		single := dt.size == 1 && (d[0] == '|' || d[0] == '<' || d[0] == '>' || d[0] == '=')
		multi := (dt.size == 2 || dt.size == 4 || dt.size == 8) && d[0] == '<'
		if single || multi {
			return dt, nil
		}
		if d[0] == '>' {
			return npyDtype{}, fmt.Errorf("npy: dtype %q is big-endian, want little-endian ('<'): %w", d, ErrUnsupported)
		}
	}
	return npyDtype{}, fmt.Errorf("npy: dtype %q, want a little-endian integer type such as '<i4', '<i8', '<u2' or '<u4': %w", d, ErrUnsupported)
}

// pyLexer reads the few Python literals NPY headers hold.
type pyLexer struct {
	s string
	i int
}

func (p *pyLexer) skip() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == '\n' || p.s[p.i] == '\r') {
		p.i++
	}
}

// peek reports whether c comes next, after spaces.
func (p *pyLexer) peek(c byte) bool {
	p.skip()
	return p.i < len(p.s) && p.s[p.i] == c
}

// eat consumes c if it comes next, after spaces.
func (p *pyLexer) eat(c byte) bool {
	if p.peek(c) {
		p.i++
		return true
	}
	return false
}

// str reads a quoted string without escapes.
func (p *pyLexer) str() (string, bool) {
	p.skip()
	if p.i >= len(p.s) || (p.s[p.i] != '\'' && p.s[p.i] != '"') {
		return "", false
	}
	q := p.s[p.i]
	end := strings.IndexByte(p.s[p.i+1:], q)
	if end < 0 {
		return "", false
	}
	v := p.s[p.i+1 : p.i+1+end]
	if strings.IndexByte(v, '\\') >= 0 {
		return "", false
	}
	p.i += end + 2
	return v, true
}

// boolean reads True or False.
func (p *pyLexer) boolean() (bool, bool) {
	p.skip()
	for _, w := range []string{"True", "False"} {
		if strings.HasPrefix(p.s[p.i:], w) {
			p.i += len(w)
			return w == "True", true
		}
	}
	return false, false
}

// tuple reads a tuple of non-negative integers: (), (3,), (3, 4), with Python 2's 3L allowed.
func (p *pyLexer) tuple() ([]int64, bool) {
	if !p.eat('(') {
		return nil, false
	}
	var out []int64
	for !p.eat(')') {
		p.skip()
		j := p.i
		for j < len(p.s) && p.s[j] >= '0' && p.s[j] <= '9' {
			j++
		}
		v, err := strconv.ParseInt(p.s[p.i:j], 10, 64)
		if err != nil {
			return nil, false
		}
		p.i = j
		if p.i < len(p.s) && p.s[p.i] == 'L' {
			p.i++
		}
		out = append(out, v)
		if !p.eat(',') && !p.peek(')') {
			return nil, false
		}
	}
	return out, true
}
