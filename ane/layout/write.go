package layout

import (
	"context"
	"encoding/binary"
	"fmt"
	"path/filepath"

	"forge/lut"
	"forge/safetensors"
)

// fileTensors lists a file's tensors in the order Write puts them.
func fileTensors(f File) []safetensors.TensorInfo {
	var ts []safetensors.TensorInfo
	for _, e := range f.Entries {
		ts = append(ts, Tensors(e.Key, e.Format, e.Shape[0], e.Shape[1], e.Rank)...)
	}
	return ts
}

// Bytes is the total tensor data of files.
func Bytes(files []File) int64 {
	var n int64
	for _, f := range files {
		for _, t := range fileTensors(f) {
			n += int64(t.NumElements()) * int64(t.DType.Size())
		}
	}
	return n
}

// Write writes files (Plan's) into the directory dir, each through
// safetensors' atomic writer with its metadata, taking the arrays from
// src: fp16 codebooks, scales and factors as stored, the packed indices
// unpacked to one byte each (lut.Unpack, a chunk of rows at a time),
// INT8 codes and unquantized weights as stored. progress, if set, gets the
// bytes written and the total after each matrix. It stops at the next
// matrix when ctx is done. A failure leaves the files written so far;
// the caller writes into a directory it publishes only when complete.
func Write(ctx context.Context, dir string, files []File, src Source, progress func(done, total int64)) error {
	total, done := Bytes(files), int64(0)
	for _, f := range files {
		w, err := safetensors.Create(filepath.Join(dir, f.Name), fileTensors(f), f.Meta)
		if err != nil {
			return err
		}
		for _, e := range f.Entries {
			if err = ctx.Err(); err != nil {
				break
			}
			var n int64
			if n, err = writeEntry(w, e, src); err != nil {
				err = fmt.Errorf("%s: matrix %q: %w", f.Name, e.Name, err)
				break
			}
			if done += n; progress != nil {
				progress(done, total)
			}
		}
		if err == nil {
			err = w.Close()
		}
		if err != nil {
			w.Abort()
			return err
		}
	}
	return nil
}

// writeEntry streams one matrix's arrays in Tensors order and returns the
// bytes written.
func writeEntry(w *safetensors.Writer, e Entry, src Source) (int64, error) {
	m, err := src.Matrix(e.Name)
	if err != nil {
		return 0, err
	}
	cw := &countWriter{w: w}
	if m == nil {
		_, data, err := src.Raw(e.Name)
		if err == nil {
			err = cw.write(data)
		}
		return cw.n, err
	}
	if m.Rank() != e.Rank || m.Format().Kind != e.Format.Kind || m.Format().Bits != e.Format.Bits {
		return 0, fmt.Errorf("the source holds %s rank %d, planned %s rank %d", m.Format(), m.Rank(), e.Format, e.Rank)
	}
	p := m.Parts()
	switch e.Format.Kind {
	case lut.Scalar, lut.Vector:
		err = cw.write16(p.LUT)
		if err == nil {
			err = writeCodes(cw, m)
		}
		if err == nil {
			err = cw.write16(p.Scale)
		}
	case lut.Int8:
		if err = cw.write(p.Index); err == nil {
			err = cw.write16(p.Scale)
		}
	default:
		err = cw.write16(p.Weight)
	}
	if err == nil && e.Rank > 0 {
		if err = cw.write16(p.LowRankA); err == nil {
			err = cw.write16(p.LowRankB)
		}
	}
	return cw.n, err
}

// writeCodes writes m's index matrix [out/d][in] one code per byte,
// unpacking about 1 MiB of codes at a time.
func writeCodes(cw *countWriter, m *lut.Matrix) error {
	out, in := m.Dims()
	f := m.Format()
	rows := f.IndexRows(out)
	step := max(1, (1<<20)/in)
	buf := make([]byte, min(step, rows)*in)
	for r := 0; r < rows; r += step {
		n := min(step, rows-r)
		lut.Unpack(buf[:n*in], m.Parts().Index, f.Bits, r*in)
		if err := cw.write(buf[:n*in]); err != nil {
			return err
		}
	}
	return nil
}

// countWriter writes to a safetensors.Writer and counts the bytes.
type countWriter struct {
	w   *safetensors.Writer
	n   int64
	buf []byte
}

func (c *countWriter) write(p []byte) error {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return err
}

// write16 writes fp16/bf16 values little-endian, 64 Ki values at a time.
func (c *countWriter) write16(v []uint16) error {
	for len(v) > 0 {
		n := min(len(v), 1<<16)
		c.buf = c.buf[:0]
		for _, x := range v[:n] {
			c.buf = binary.LittleEndian.AppendUint16(c.buf, x)
		}
		if err := c.write(c.buf); err != nil {
			return err
		}
		v = v[n:]
	}
	return nil
}
