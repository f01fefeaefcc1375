package eval

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// NPY header fields, as numpy writes them: {'descr': '<f4', 'fortran_order': False, 'shape': (N,), }
var (
	npyDescr   = regexp.MustCompile(`'descr'\s*:\s*'([^']*)'`)
	npyFortran = regexp.MustCompile(`'fortran_order'\s*:\s*(True|False)`)
	npyShape   = regexp.MustCompile(`'shape'\s*:\s*\(([^)]*)\)`)
)

// ReadKLNPY reads a per-position KL array: an NPY file (format 1.0, 2.0 or
// 3.0, https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html)
// holding a 1-D little-endian float32 ("<f4") array, or float64 ("<f8"),
// which is narrowed to float32. Errors name the file and the problem.
func ReadKLNPY(path string) ([]float32, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("KL file %s: %w", path, err)
	}
	kl, err := parseKLNPY(data)
	if err != nil {
		return nil, fmt.Errorf("KL file %s: %v: %w", path, err, ErrCompareInput)
	}
	return kl, nil
}

// parseKLNPY decodes the bytes of a 1-D float NPY file.
func parseKLNPY(data []byte) ([]float32, error) {
	if len(data) < 10 || string(data[:6]) != "\x93NUMPY" {
		return nil, fmt.Errorf("not an NPY file (bad magic)")
	}
	var hlen, start int
	switch data[6] {
	case 1:
		hlen, start = int(binary.LittleEndian.Uint16(data[8:])), 10
	case 2, 3:
		if len(data) < 12 {
			return nil, fmt.Errorf("truncated NPY header")
		}
		hlen, start = int(binary.LittleEndian.Uint32(data[8:])), 12
	default:
		return nil, fmt.Errorf("NPY format version %d.%d (want 1, 2 or 3)", data[6], data[7])
	}
	if hlen > len(data)-start {
		return nil, fmt.Errorf("NPY header of %d bytes but only %d follow", hlen, len(data)-start)
	}
	header := string(data[start : start+hlen])
	n, size, err := parseKLHeader(header)
	if err != nil {
		return nil, err
	}
	body := data[start+hlen:]
	if need := int64(n) * int64(size); need != int64(len(body)) {
		return nil, fmt.Errorf("shape (%d,) needs %d data bytes, file has %d", n, need, len(body))
	}
	kl := make([]float32, n)
	for i := range kl {
		if size == 4 {
			kl[i] = math.Float32frombits(binary.LittleEndian.Uint32(body[4*i:]))
		} else {
			kl[i] = float32(math.Float64frombits(binary.LittleEndian.Uint64(body[8*i:])))
		}
		if f := float64(kl[i]); math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("position %d holds %v", i, kl[i])
		}
	}
	return kl, nil
}

// parseKLHeader returns the length and element size of the 1-D float
// array that an NPY header describes, refusing anything else.
func parseKLHeader(h string) (n, size int, err error) {
	d, f, s := npyDescr.FindStringSubmatch(h), npyFortran.FindStringSubmatch(h), npyShape.FindStringSubmatch(h)
	if d == nil || f == nil || s == nil {
		return 0, 0, fmt.Errorf("NPY header %q lacks descr, fortran_order or shape", strings.TrimSpace(h))
	}
	switch d[1] {
	case "<f4":
		size = 4
	case "<f8":
		size = 8
	default:
		return 0, 0, fmt.Errorf("dtype %q (want little-endian float32 '<f4' or float64 '<f8')", d[1])
	}
	var dims []string
	for _, p := range strings.Split(s[1], ",") {
		if p = strings.TrimSpace(p); p != "" {
			dims = append(dims, p)
		}
	}
	if len(dims) != 1 {
		return 0, 0, fmt.Errorf("shape (%s) has %d dimensions, want 1 (positions)", s[1], len(dims))
	}
	n, err = strconv.Atoi(strings.TrimSuffix(dims[0], "L"))
	if err != nil || n < 0 {
		return 0, 0, fmt.Errorf("bad shape (%s)", s[1])
	}
	if n > math.MaxInt32 {
		return 0, 0, fmt.Errorf("shape (%d,) is absurdly large", n)
	}
	return n, size, nil
}
