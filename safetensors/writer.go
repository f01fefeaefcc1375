package safetensors

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"forge/tensor"

	"forge/internal/durable"
)

// Tensor is one tensor with its data, for WriteFile.
type Tensor struct {
	Name  string
	DType DType
	Shape []int
	Data  []byte // little-endian, row-major; len = NumElements × DType.Size()
}

// tempFile is what a Writer needs of its temporary file; *os.File has it.
type tempFile interface {
	io.Writer
	Sync() error
	Close() error
	Name() string
}

// createTemp makes the temporary file. Tests replace it to inject failures.
var createTemp = func(path string) (tempFile, error) { return durable.CreateTemp(path) }

const (
	// bufSize is the bufio.Writer's over the temporary file. Every write
	// to the file but the last is a whole buffer at a multiple of bufSize
	// (Writer.write never lets bufio bypass its buffer), so that Linux can
	// cache the file in 2 MiB folios and a reader's mapping of it gets 2 MiB
	// pages: the synth-1.4b's decode read its weights at 84% of the read
	// bandwidth from 4 KiB pages, 89% from 2 MiB ones (BENCHMARKS.md).
	bufSize   = 2 << 20
	chunkSize = 1 << 15 // values converted per step by WriteFloat32
)

// DataAlign is the alignment of the data area's start in the files Create
// writes (a cache line): a tensor whose offset in the data area is a
// multiple of it starts on a cache line, so that kernels loading 64 bytes
// at a time never load across two lines (package bundle aligns its index
// arrays so: the LUT4 kernel read rows 24 bytes off a line 20–35% slower,
// BENCHMARKS.md).
const DataAlign = 64

// Writer streams a safetensors file to disk: the header at Create, then the
// tensors' bytes in declared order, then an atomic rename at Close. Any
// failure is sticky: later calls return it and Close removes the temporary
// file. A Writer is not safe for concurrent use. Use it as
//
//	w, err := safetensors.Create(path, infos, meta)
//	if err != nil { … }
//	defer w.Abort()
//	for … { if err := w.WriteFloat32(name, data); err != nil { return err } }
//	return w.Close()
type Writer struct {
	path    string
	tensors []TensorInfo // with computed offsets, in data order
	index   map[string]int
	f       tempFile // nil once closed
	tmpName string   // "" once removed
	buf     *bufio.Writer
	pos     int64 // data bytes written so far
	total   int64 // data bytes declared
	scratch []uint16
	err     error // the first failure
	done    bool  // Close or Abort was called
	renamed bool  // the temporary file has become path
}

// Create validates tensors (names unique, valid UTF-8 and not
// "__metadata__"; dtypes valid; shapes non-negative without overflow),
// computes their offsets in the given order (Begin and End in the input are
// ignored), and writes the header to a temporary file beside path
// (durable.CreateTemp: path + ".forge-tmp-<pid>-<random>"). Errors wrap
// ErrFormat for invalid input.
func Create(path string, tensors []TensorInfo, metadata map[string]string) (*Writer, error) {
	infos, total, err := layout(path, tensors)
	if err != nil {
		return nil, err
	}
	hdr, err := encodeHeader(path, infos, metadata)
	if err != nil {
		return nil, err
	}
	f, err := createTemp(path)
	if err != nil {
		return nil, ioErr(path, "create temporary file", err)
	}
	w := &Writer{path: path, tensors: infos, index: make(map[string]int, len(infos)),
		f: f, tmpName: f.Name(), buf: bufio.NewWriterSize(f, bufSize), total: total}
	for i, t := range infos {
		w.index[t.Name] = i
	}
	if _, err := w.put(hdr); err != nil {
		w.fail(ioErr(path, "write header", err))
		w.Abort()
		return nil, w.err
	}
	return w, nil
}

// layout checks tensors and returns copies with packed offsets, and the
// data area's total size.
func layout(path string, tensors []TensorInfo) ([]TensorInfo, int64, error) {
	infos := make([]TensorInfo, len(tensors))
	seen := make(map[string]bool, len(tensors))
	var off int64
	for i, t := range tensors {
		switch {
		case !utf8.ValidString(t.Name):
			return nil, 0, tensorErr(ErrFormat, path, t.Name, "name is not valid UTF-8")
		case t.Name == metadataKey:
			return nil, 0, tensorErr(ErrFormat, path, t.Name, "name is reserved for metadata")
		case seen[t.Name]:
			return nil, 0, tensorErr(ErrFormat, path, t.Name, "duplicate tensor name")
		case !t.DType.valid():
			return nil, 0, tensorErr(ErrFormat, path, t.Name, "invalid dtype %v", t.DType)
		}
		seen[t.Name] = true
		size, err := checkedBytes(t.Shape, t.DType)
		if err != nil {
			return nil, 0, tensorErr(ErrFormat, path, t.Name, "%v", err)
		}
		if size > math.MaxInt64-off {
			return nil, 0, tensorErr(ErrFormat, path, t.Name, "data area size overflows")
		}
		infos[i] = TensorInfo{Name: t.Name, DType: t.DType, Shape: slices.Clone(t.Shape), Begin: off, End: off + size}
		off += size
	}
	return infos, off, nil
}

// encodeHeader returns the 8-byte length and the JSON header, padded with
// spaces so that the data area starts at a multiple of DataAlign bytes:
// the deterministic layout of the package documentation.
func encodeHeader(path string, infos []TensorInfo, meta map[string]string) ([]byte, error) {
	var b bytes.Buffer
	b.Write(make([]byte, 8))
	b.WriteByte('{')
	if len(meta) > 0 {
		writeJSONString(&b, metadataKey)
		b.WriteString(":{")
		for i, k := range slices.Sorted(maps.Keys(meta)) {
			if !utf8.ValidString(k) || !utf8.ValidString(meta[k]) {
				return nil, formatErr(path, "metadata %q is not valid UTF-8", k)
			}
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSONString(&b, k)
			b.WriteByte(':')
			writeJSONString(&b, meta[k])
		}
		b.WriteByte('}')
	}
	for i, t := range infos {
		if i > 0 || len(meta) > 0 {
			b.WriteByte(',')
		}
		writeJSONString(&b, t.Name)
		b.WriteString(`:{"dtype":"` + t.DType.String() + `","shape":[`)
		for j, d := range t.Shape {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(d))
		}
		fmt.Fprintf(&b, `],"data_offsets":[%d,%d]}`, t.Begin, t.End)
	}
	b.WriteByte('}')
	for b.Len()%DataAlign != 0 {
		b.WriteByte(' ')
	}
	n := b.Len() - 8
	if n > maxHeaderLen {
		return nil, formatErr(path, "header of %d bytes exceeds the %d-byte limit", n, maxHeaderLen)
	}
	out := b.Bytes()
	binary.LittleEndian.PutUint64(out, uint64(n))
	return out, nil
}

// writeJSONString writes s (valid UTF-8) as a JSON string, without the HTML
// escaping of json.Marshal.
func writeJSONString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)           // cannot fail for a string into a bytes.Buffer
	b.Truncate(b.Len() - 1) // Encode's trailing newline
}

// Write writes raw data bytes, continuing wherever the previous call stopped:
// the tensors' bytes in declared order, back to back. Writing past the
// declared total fails with ErrSequence and writes nothing.
func (w *Writer) Write(p []byte) (int, error) {
	if err := w.usable(); err != nil {
		return 0, err
	}
	if int64(len(p)) > w.total-w.pos {
		return 0, w.fail(&pathError{path: w.path, kind: ErrSequence, msg: fmt.Sprintf(
			"write of %d bytes passes the end of the data (%d of %d bytes written)", len(p), w.pos, w.total)})
	}
	return w.write(p)
}

// WriteTensor writes the raw bytes of the named tensor, which must be the
// next in declared order, with exactly its declared size.
func (w *Writer) WriteTensor(name string, raw []byte) error {
	t, err := w.next(name)
	if err != nil {
		return err
	}
	if size := t.End - t.Begin; int64(len(raw)) != size {
		return w.fail(tensorErr(ErrSequence, w.path, name, "got %d bytes, want %d (shape %v × %v)",
			len(raw), size, t.Shape, t.DType))
	}
	_, err = w.write(raw)
	return err
}

// WriteFloat32 rounds data to the named tensor's dtype (F32, BF16 or F16,
// else ErrDType) and writes it. The tensor must be the next in declared
// order and len(data) its element count. Halves are converted a chunk at a
// time, so only a small fixed buffer is allocated.
func (w *Writer) WriteFloat32(name string, data []float32) error {
	t, err := w.next(name)
	if err != nil {
		return err
	}
	if t.DType != F32 && t.DType != BF16 && t.DType != F16 {
		return w.fail(tensorErr(ErrDType, w.path, name, "WriteFloat32 to a %v tensor (want F32, BF16 or F16)", t.DType))
	}
	if len(data) != t.NumElements() {
		return w.fail(tensorErr(ErrSequence, w.path, name, "got %d values, want %d (shape %v)",
			len(data), t.NumElements(), t.Shape))
	}
	if t.DType == F32 {
		_, err := w.write(leBytes(data))
		return err
	}
	if w.scratch == nil {
		w.scratch = make([]uint16, chunkSize)
	}
	for len(data) > 0 {
		n := min(len(data), len(w.scratch))
		if t.DType == BF16 {
			tensor.F32ToBF16Slice(w.scratch, data[:n])
		} else {
			tensor.F32ToF16Slice(w.scratch, data[:n])
		}
		if _, err := w.write(leBytes(w.scratch[:n])); err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}

// next returns the named tensor if the writer is usable and the tensor's
// data starts at the current position.
func (w *Writer) next(name string) (TensorInfo, error) {
	if err := w.usable(); err != nil {
		return TensorInfo{}, err
	}
	i, ok := w.index[name]
	if !ok {
		return TensorInfo{}, w.fail(tensorErr(ErrNotFound, w.path, name, "not declared to Create"))
	}
	t := w.tensors[i]
	if t.Begin != w.pos {
		return t, w.fail(tensorErr(ErrSequence, w.path, name, "written out of order: %s", w.expected()))
	}
	return t, nil
}

// expected describes where the data stands, for ErrSequence messages.
func (w *Writer) expected() string {
	if w.pos == w.total {
		return "all data already written"
	}
	// The first tensor ending after pos holds the next byte (spans are packed
	// in order, so End is non-decreasing).
	j, _ := slices.BinarySearchFunc(w.tensors, w.pos+1, func(t TensorInfo, p int64) int {
		return cmp.Compare(t.End, p)
	})
	t := w.tensors[j]
	if t.Begin == w.pos {
		return fmt.Sprintf("%q is next", t.Name)
	}
	return fmt.Sprintf("in the middle of %q (%d of %d bytes written)", t.Name, w.pos-t.Begin, t.End-t.Begin)
}

// write sends p, data bytes, to the buffered temporary file.
func (w *Writer) write(p []byte) (int, error) {
	n, err := w.put(p)
	w.pos += int64(n)
	if err != nil {
		return n, w.fail(ioErr(w.path, "write", err))
	}
	return n, nil
}

// put writes p to the buffer in pieces that fit it: bufio writes a large
// p straight through when its buffer is empty, which would leave the
// file's later writes off the bufSize grid.
func (w *Writer) put(p []byte) (int, error) {
	total := 0
	for len(p) > 0 {
		k := min(len(p), bufSize) // a full buffer (Available 0): this Write flushes it, then copies
		if a := w.buf.Available(); a > 0 {
			k = min(k, a)
		}
		n, err := w.buf.Write(p[:k])
		total += n
		if err != nil {
			return total, err
		}
		p = p[n:]
	}
	return total, nil
}

// usable returns the error that stops further writes, if any.
func (w *Writer) usable() error {
	if w.err != nil {
		return w.err
	}
	if w.done {
		return &pathError{path: w.path, msg: "write after Close", kind: ErrClosed}
	}
	return nil
}

// fail records err as the writer's failure if it is the first, and returns it.
func (w *Writer) fail(err error) error {
	if w.err == nil {
		w.err = err
	}
	return err
}

// Close checks that every declared byte was written, flushes and syncs the
// temporary file, renames it over path and syncs the directory. On any
// failure the temporary file is removed and path is left as it was. Closing
// again returns the first result.
func (w *Writer) Close() error {
	if w.done {
		return w.err
	}
	w.done = true
	if w.err == nil && w.pos != w.total {
		w.err = &pathError{path: w.path, kind: ErrSequence, msg: fmt.Sprintf(
			"Close after %d of %d data bytes (%s)", w.pos, w.total, w.expected())}
	}
	if w.err == nil {
		w.err = w.commit()
	}
	if w.err != nil {
		w.discard()
	}
	return w.err
}

// commit makes the complete temporary file durable and moves it to path.
func (w *Writer) commit() error {
	if err := w.buf.Flush(); err != nil {
		return ioErr(w.path, "write", err)
	}
	if err := w.f.Sync(); err != nil {
		return ioErr(w.path, "sync", err)
	}
	f := w.f
	w.f = nil
	if err := f.Close(); err != nil {
		return ioErr(w.path, "close", err)
	}
	mode := os.FileMode(0o644) // CreateTemp made it 0600; keep an existing file's mode
	if st, err := os.Stat(w.path); err == nil {
		mode = st.Mode().Perm()
	}
	if err := os.Chmod(w.tmpName, mode); err != nil {
		return ioErr(w.path, "chmod", err)
	}
	if err := os.Rename(w.tmpName, w.path); err != nil {
		return ioErr(w.path, "rename", err)
	}
	w.renamed = true
	if err := durable.SyncDir(filepath.Dir(w.path)); err != nil {
		return ioErr(w.path, "sync directory", err)
	}
	return nil
}

// Abort stops writing and removes the temporary file, leaving path as it
// was. It is safe to call at any time, including after Close (when it does
// nothing) or after a failure.
func (w *Writer) Abort() {
	if !w.done {
		w.done = true
		w.fail(&pathError{path: w.path, msg: "aborted", kind: ErrClosed})
	}
	w.discard()
}

// discard closes and removes the temporary file unless it became path.
func (w *Writer) discard() {
	if w.f != nil {
		w.f.Close()
		w.f = nil
	}
	if !w.renamed && w.tmpName != "" {
		os.Remove(w.tmpName)
		w.tmpName = ""
	}
}

// WriteFile writes tensors, in the given order, and metadata to path
// atomically (Create, WriteTensor for each, Close).
func WriteFile(path string, tensors []Tensor, metadata map[string]string) error {
	infos := make([]TensorInfo, len(tensors))
	for i, t := range tensors {
		infos[i] = TensorInfo{Name: t.Name, DType: t.DType, Shape: t.Shape}
	}
	w, err := Create(path, infos, metadata)
	if err != nil {
		return err
	}
	defer w.Abort()
	for _, t := range tensors {
		if err := w.WriteTensor(t.Name, t.Data); err != nil {
			return err
		}
	}
	return w.Close()
}

// leBytes returns s as little-endian bytes: a view on little-endian hosts,
// an encoded copy elsewhere.
func leBytes[T uint16 | float32](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	size := int(unsafe.Sizeof(s[0]))
	if littleEndian {
		return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*size)
	}
	out := make([]byte, len(s)*size)
	for i, v := range s {
		switch x := any(v).(type) {
		case uint16:
			binary.LittleEndian.PutUint16(out[2*i:], x)
		case float32:
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(x))
		}
	}
	return out
}
