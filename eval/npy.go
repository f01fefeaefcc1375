package eval

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"forge/internal/durable"
)

// EncodeNPY returns v as an NPY (format version 1.0) file holding a 1-D
// little-endian float32 array ("<f4", shape (N,)), each value rounded to
// float32. The header is the magic "\x93NUMPY", the version bytes 1 0, a
// little-endian uint16 header length, then the Python dict literal padded
// with spaces and ended by '\n' so that the data starts at a multiple of
// 64 bytes, as numpy writes it.
func EncodeNPY(v []float64) []byte {
	dict := fmt.Sprintf("{'descr': '<f4', 'fortran_order': False, 'shape': (%d,), }", len(v))
	pad := 64 - (10+len(dict)+1)%64
	if pad == 64 {
		pad = 0
	}
	hdr := dict + strings.Repeat(" ", pad) + "\n"
	out := make([]byte, 0, 10+len(hdr)+4*len(v))
	out = append(out, "\x93NUMPY\x01\x00"...)
	out = binary.LittleEndian.AppendUint16(out, uint16(len(hdr)))
	out = append(out, hdr...)
	for _, x := range v {
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(float32(x)))
	}
	return out
}

// WriteNPY writes v to path as EncodeNPY does, atomically.
func WriteNPY(path string, v []float64) error {
	if err := durable.WriteFile(path, EncodeNPY(v)); err != nil {
		return fmt.Errorf("npy %s: %w", path, err)
	}
	return nil
}
