package safetensors

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"unsafe"

	"golang.org/x/sys/unix"

	"forge/tensor"
)

// littleEndian reports whether the host stores integers little-endian, as
// the file does; only then can the data area be viewed as []uint16 in place.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// File is an open safetensors file whose header has been validated. Its
// methods are safe for concurrent use, except Close, which must come after
// every other call and invalidates every slice Bytes and Uint16 returned.
type File struct {
	path   string
	data   []byte // the whole file: the mapping, or the caller's bytes for OpenBytes
	area   []byte // data[8+N:], the data area
	start  int64  // 8+N: the data area's offset in the file
	infos  map[string]TensorInfo
	names  []string // sorted
	meta   map[string]string
	unmap  func() error // nil for OpenBytes
	closed bool
}

// Open maps the file at path read-only and validates its header (see the
// package documentation for what is checked). The caller must Close it.
func Open(path string) (*File, error) {
	fd, err := os.Open(path)
	if err != nil {
		return nil, ioErr(path, "open", err)
	}
	defer fd.Close()
	st, err := fd.Stat()
	if err != nil {
		return nil, ioErr(path, "stat", err)
	}
	if !st.Mode().IsRegular() {
		return nil, &pathError{path: path, msg: fmt.Sprintf("not a regular file (%v)", st.Mode().Type()), kind: ErrFormat}
	}
	if st.Size() < 8 { // too short to map usefully; OpenBytes reports it
		return OpenBytes(path, make([]byte, st.Size()))
	}
	if st.Size() > math.MaxInt {
		return nil, formatErr(path, "file of %d bytes is too large to map", st.Size())
	}
	data, err := unix.Mmap(int(fd.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, ioErr(path, "mmap", err)
	}
	adviseHuge(data)
	f, err := OpenBytes(path, data)
	if err != nil {
		unix.Munmap(data)
		return nil, err
	}
	f.unmap = func() error { return unix.Munmap(data) }
	return f, nil
}

// OpenBytes parses data, a whole safetensors file, with the same validation
// as Open. name is used only in error messages and Path. The File aliases
// data, which must not change while the File is in use.
func OpenBytes(name string, data []byte) (*File, error) {
	if len(data) < 8 {
		return nil, formatErr(name, "file is %d bytes, shorter than the 8-byte header length", len(data))
	}
	n := binary.LittleEndian.Uint64(data)
	rest := uint64(len(data) - 8)
	switch {
	case n == 0:
		return nil, formatErr(name, "header length is 0")
	case n > maxHeaderLen:
		return nil, formatErr(name, "header length %d exceeds the %d-byte limit", n, maxHeaderLen)
	case n > rest:
		return nil, formatErr(name, "header length %d passes the end of the file (%d bytes after the length)", n, rest)
	}
	area := data[8+n:]
	infos, meta, err := parseHeader(name, data[8:8+n], int64(len(area)))
	if err != nil {
		return nil, err
	}
	f := &File{path: name, data: data, area: area, start: int64(8 + n), meta: meta, infos: make(map[string]TensorInfo, len(infos))}
	for _, t := range infos {
		f.infos[t.Name] = t
		f.names = append(f.names, t.Name)
	}
	slices.Sort(f.names)
	return f, nil
}

// Close unmaps the file. Slices returned by Bytes and Uint16 must not be used
// afterwards. Closing twice returns an error wrapping ErrClosed.
func (f *File) Close() error {
	if f.closed {
		return &pathError{path: f.path, msg: "close", kind: ErrClosed}
	}
	f.closed = true
	f.area, f.data = nil, nil
	if f.unmap != nil {
		if err := f.unmap(); err != nil {
			return ioErr(f.path, "munmap", err)
		}
	}
	return nil
}

// Evict drops the process's resident pages that lie wholly inside b, a
// view of f's mapping (Bytes), as a caller that copied b and will rarely
// read it again wants (lut's transposed codes): the pages stay readable,
// read back from the file's page cache when touched, and leave the
// process's resident set. Nothing happens for a file opened with
// OpenBytes, a b outside the mapping, or off Linux.
func (f *File) Evict(b []byte) {
	if f.unmap == nil || len(b) == 0 || len(f.data) == 0 {
		return
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(f.data)))
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	if lo < base || lo-base+uintptr(len(b)) > uintptr(len(f.data)) {
		return
	}
	page := uintptr(os.Getpagesize())
	start := (lo - base + page - 1) / page * page // the mapping starts on a page
	end := (lo - base + uintptr(len(b))) / page * page
	if start < end {
		dropPages(f.data[start:end])
	}
}

// Path returns the path given to Open (or the name given to OpenBytes).
func (f *File) Path() string { return f.path }

// Names returns the tensor names, sorted. The slice is the caller's.
func (f *File) Names() []string { return slices.Clone(f.names) }

// Info returns the description of the named tensor.
func (f *File) Info(name string) (TensorInfo, bool) {
	t, ok := f.infos[name]
	t.Shape = slices.Clone(t.Shape)
	return t, ok
}

// Offset returns the position in the file of the named tensor's first
// byte: the data area's start (8 + the header length) plus its begin
// offset. Kernels that read an array in 64-byte loads want it at a
// multiple of DataAlign.
func (f *File) Offset(name string) (int64, bool) {
	t, ok := f.infos[name]
	return f.start + t.Begin, ok
}

// Metadata returns a copy of the "__metadata__" map (nil when absent).
func (f *File) Metadata() map[string]string { return maps.Clone(f.meta) }

// lookup returns the named tensor's info and bytes.
func (f *File) lookup(name string) (TensorInfo, []byte, error) {
	if f.closed {
		return TensorInfo{}, nil, tensorErr(ErrClosed, f.path, name, "file is closed")
	}
	t, ok := f.infos[name]
	if !ok {
		return t, nil, tensorErr(ErrNotFound, f.path, name, "no such tensor")
	}
	return t, f.area[t.Begin:t.End:t.End], nil
}

// Bytes returns the named tensor's raw little-endian bytes. The slice aliases
// the mapping: it must not be written, nor used after Close.
func (f *File) Bytes(name string) ([]byte, error) {
	_, b, err := f.lookup(name)
	return b, err
}

// Float32 returns a new slice holding the named tensor widened to float32.
// The tensor must be BF16, F16 or F32 (else the error wraps ErrDType).
func (f *File) Float32(name string) ([]float32, error) {
	t, b, err := f.lookup(name)
	if err != nil {
		return nil, err
	}
	out := make([]float32, len(b)/max(t.DType.Size(), 1))
	switch t.DType {
	case BF16:
		tensor.BF16ToF32Slice(out, halves(b))
	case F16:
		tensor.F16ToF32Slice(out, halves(b))
	case F32:
		if v, ok := view[float32](b); ok {
			copy(out, v)
			break
		}
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
	default:
		return nil, tensorErr(ErrDType, f.path, name, "Float32 of a %v tensor (want BF16, F16 or F32)", t.DType)
	}
	return out, nil
}

// Uint16 returns the raw 16-bit values of a BF16 or F16 tensor (else the
// error wraps ErrDType). When the bytes are 2-byte aligned in memory (as in a
// mapped file whose header length is even) the slice is a view of the
// mapping, with the same rules as Bytes; otherwise it is a copy.
func (f *File) Uint16(name string) ([]uint16, error) {
	t, b, err := f.lookup(name)
	if err != nil {
		return nil, err
	}
	if t.DType != BF16 && t.DType != F16 {
		return nil, tensorErr(ErrDType, f.path, name, "Uint16 of a %v tensor (want BF16 or F16)", t.DType)
	}
	return halves(b), nil
}

// Int32 returns a new slice holding an I32 tensor (else the error wraps
// ErrDType).
func (f *File) Int32(name string) ([]int32, error) {
	t, b, err := f.lookup(name)
	if err != nil {
		return nil, err
	}
	if t.DType != I32 {
		return nil, tensorErr(ErrDType, f.path, name, "Int32 of a %v tensor (want I32)", t.DType)
	}
	out := make([]int32, len(b)/4)
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out, nil
}

// halves returns b as little-endian uint16s: a view when possible, else a copy.
func halves(b []byte) []uint16 {
	if v, ok := view[uint16](b); ok {
		return v
	}
	out := make([]uint16, len(b)/2)
	for i := range out {
		out[i] = binary.LittleEndian.Uint16(b[2*i:])
	}
	return out
}

// view reinterprets b as a []T in place when the host is little-endian and
// b is aligned for T. len(b) must be a multiple of T's size.
func view[T uint16 | float32](b []byte) ([]T, bool) {
	var zero T
	size := int(unsafe.Sizeof(zero))
	if len(b) == 0 {
		return []T{}, true
	}
	if !littleEndian || uintptr(unsafe.Pointer(&b[0]))%uintptr(size) != 0 {
		return nil, false
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), len(b)/size), true
}
