package corpus

import (
	"errors"
	"fmt"

	"forge/internal/npy"
)

// npyRows reads an NPY file (package internal/npy parses it) holding a 2-D C-order array of
// little-endian integers, int8/16/32/64 or uint8/16/32/64 ("<i4", "<i8", "<u2", ..., "|u1"),
// and returns its rows. Anything else is refused: what npy refuses (a bad magic or header, a
// big-endian or unknown dtype, data shorter or longer than the shape needs: ErrFormat, or
// ErrUnsupported for a file npy does not read), Fortran order, another rank and non-integer
// dtypes (ErrUnsupported), rows of zero columns (ErrFormat), or a value that does not fit in
// an int (ErrTokenRange). The rows share one backing array.
func npyRows(data []byte) ([][]int, error) {
	a, err := npy.Parse(data)
	if err != nil {
		return nil, npyError(err)
	}
	if a.Fortran {
		return nil, fmt.Errorf("npy: Fortran-order array (save np.ascontiguousarray(a)): %w", ErrUnsupported)
	}
	if len(a.Shape) != 2 {
		return nil, fmt.Errorf("npy: shape %s has %d dimensions, want 2 (rows, tokens): %w", npy.FormatShape(a.Shape), len(a.Shape), ErrUnsupported)
	}
	rows, cols := a.Shape[0], a.Shape[1]
	if cols == 0 && rows > 0 {
		return nil, fmt.Errorf("npy: shape %s: rows of zero tokens: %w", npy.FormatShape(a.Shape), ErrFormat)
	}
	flat, err := a.Ints()
	if err != nil {
		var re *npy.RangeError
		if errors.As(err, &re) {
			return nil, fmt.Errorf("npy: row %d, position %d: value does not fit an int: %w", re.Index/cols, re.Index%cols, ErrTokenRange)
		}
		return nil, npyError(err)
	}
	out := make([][]int, rows)
	for r := range out {
		lo, hi := int64(r)*cols, int64(r+1)*cols
		out[r] = flat[lo:hi:hi]
	}
	return out, nil
}

// npyError wraps an error of package npy with corpus's sentinel: ErrUnsupported for a file npy
// does not read, ErrFormat for a malformed one. The message is npy's.
func npyError(err error) error {
	if errors.Is(err, npy.ErrUnsupported) {
		return fmt.Errorf("%w: %w", err, ErrUnsupported)
	}
	return fmt.Errorf("%w: %w", err, ErrFormat)
}
