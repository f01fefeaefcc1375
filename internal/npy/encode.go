package npy

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"forge/internal/durable"
)

// AppendHeader appends the preamble of an NPY file holding an array of
// dtype descr ("<f4", "<i4", …) and shape, as numpy writes it: Magic, the
// version, the header length and the header dict
//
//	{'descr': '<f4', 'fortran_order': False, 'shape': (N,), }
//
// padded with spaces and ended by '\n' so that the data, which the caller
// appends, starts at a multiple of 64 bytes. The version is 1.0, or 2.0
// when the header would need more than 65535 bytes.
func AppendHeader(dst []byte, descr string, fortran bool, shape ...int64) []byte {
	order := "False"
	if fortran {
		order = "True"
	}
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': %s, 'shape': %s, }", descr, order, FormatShape(shape))
	prefix, major := 10, byte(1)
	if padded(prefix, dict) > math.MaxUint16 {
		prefix, major = 12, 2
	}
	hdr := dict + strings.Repeat(" ", padded(prefix, dict)-len(dict)-1) + "\n"
	dst = append(dst, Magic...)
	dst = append(dst, major, 0)
	if major == 1 {
		dst = binary.LittleEndian.AppendUint16(dst, uint16(len(hdr)))
	} else {
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(hdr)))
	}
	return append(dst, hdr...)
}

// padded returns the length of dict's header once padded: dict, spaces
// and '\n', with prefix + length a multiple of 64.
func padded(prefix int, dict string) int {
	n := len(dict) + 1
	if r := (prefix + n) % 64; r != 0 {
		n += 64 - r
	}
	return n
}

// EncodeFloat32 returns v as an NPY file holding a 1-D little-endian
// float32 array ('<f4', shape (N,), AppendHeader's preamble), each value
// rounded to float32.
func EncodeFloat32(v []float64) []byte {
	out := AppendHeader(make([]byte, 0, 128+4*len(v)), "<f4", false, int64(len(v)))
	for _, x := range v {
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(float32(x)))
	}
	return out
}

// EncodeInt64Rows returns rows as an NPY file holding a 2-D C-order
// little-endian int64 array ('<i8', shape (len(rows), len(rows[0]))): token
// rows as numpy's int64 default and corpus read them. It panics unless
// every row has the same length.
func EncodeInt64Rows(rows [][]int) []byte {
	cols := 0
	if len(rows) > 0 {
		cols = len(rows[0])
	}
	out := AppendHeader(make([]byte, 0, 128+8*cols*len(rows)), "<i8", false, int64(len(rows)), int64(cols))
	for i, r := range rows {
		if len(r) != cols {
			panic(fmt.Sprintf("npy.EncodeInt64Rows: row %d has %d values, row 0 has %d", i, len(r), cols))
		}
		for _, v := range r {
			out = binary.LittleEndian.AppendUint64(out, uint64(int64(v)))
		}
	}
	return out
}

// WriteFloat32 writes EncodeFloat32(v) to path atomically
// (durable.WriteFile); errors name the file.
func WriteFloat32(path string, v []float64) error {
	if err := durable.WriteFile(path, EncodeFloat32(v)); err != nil {
		return fmt.Errorf("npy %s: %w", path, err)
	}
	return nil
}
