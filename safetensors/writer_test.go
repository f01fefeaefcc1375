package safetensors

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"forge/internal/durable"
	"forge/tensor"
)

func TestWriterHeaderGolden(t *testing.T) {
	path := filepath.Join(t.TempDir(), "g.safetensors")
	ts := []Tensor{
		{Name: "w<&>", DType: F32, Shape: []int{2}, Data: make([]byte, 8)},
		{Name: "b", DType: I8, Shape: []int{}, Data: []byte{7}},
	}
	if err := WriteFile(path, ts, map[string]string{"z": "1", "a": "\"q\""}); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	// Metadata first with sorted keys, tensors in the given order, no HTML
	// escaping, spaces until the data area starts at a multiple of 64.
	want := `{"__metadata__":{"a":"\"q\"","z":"1"},"w<&>":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},` +
		`"b":{"dtype":"I8","shape":[],"data_offsets":[8,9]}}`
	want += strings.Repeat(" ", (64-(8+len(want))%64)%64)
	n := int(raw[0]) | int(raw[1])<<8
	if n != len(want) || string(raw[8:8+n]) != want {
		t.Errorf("header =\n%q (%d)\nwant\n%q (%d)", raw[8:8+n], n, want, len(want))
	}
	if (8+n)%64 != 0 || len(raw) != 8+n+9 || raw[len(raw)-1] != 7 {
		t.Errorf("layout: header %d, file %d bytes", n, len(raw))
	}
	info, _ := os.Stat(path)
	if info.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", info.Mode().Perm())
	}
}

func TestWriterDeterministic(t *testing.T) {
	dir := t.TempDir()
	var files [2][]byte
	for i := range files {
		rng := rand.New(rand.NewPCG(7, 8)) // the same input both times
		path := filepath.Join(dir, "d.safetensors")
		if err := WriteFile(path, sampleTensors(rng), map[string]string{"b": "2", "a": "1", "c": "3"}); err != nil {
			t.Fatal(err)
		}
		files[i], _ = os.ReadFile(path)
	}
	if !bytes.Equal(files[0], files[1]) {
		t.Errorf("identical input gave different files")
	}
}

func TestWriteFloat32(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	const n = 2*chunkSize + 123 // several conversion chunks and a partial one
	vals := make([]float32, n)
	for i := range vals {
		vals[i] = float32(rng.NormFloat64() * 10)
	}
	vals[0], vals[1], vals[2] = float32(math.Inf(-1)), 65504, 1e-8
	infos := []TensorInfo{
		{Name: "f32", DType: F32, Shape: []int{n}},
		{Name: "bf16", DType: BF16, Shape: []int{n}},
		{Name: "f16", DType: F16, Shape: []int{n}},
	}
	path := filepath.Join(t.TempDir(), "f.safetensors")
	w, err := Create(path, infos, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	for _, info := range infos {
		if err := w.WriteFloat32(info.Name, vals); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// The writer must round exactly as tensor's conversions do (they are
	// tested against a float64 reference there), so compare bit for bit.
	ref := map[string]func(float32) float32{
		"f32":  func(x float32) float32 { return x },
		"bf16": func(x float32) float32 { return tensor.BF16ToF32(tensor.F32ToBF16(x)) },
		"f16":  func(x float32) float32 { return tensor.F16ToF32(tensor.F32ToF16(x)) },
	}
	for name, round := range ref {
		got, err := f.Float32(name)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range vals {
			if math.Float32bits(got[i]) != math.Float32bits(round(v)) {
				t.Fatalf("%s[%d] = %v, want %v", name, i, got[i], round(v))
			}
		}
	}
}

// TestWriterStream writes through the io.Writer interface in odd-sized
// pieces that straddle tensor boundaries.
func TestWriterStream(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	ts := sampleTensors(rng)
	var all []byte
	infos := make([]TensorInfo, len(ts))
	for i, tt := range ts {
		infos[i] = TensorInfo{Name: tt.Name, DType: tt.DType, Shape: tt.Shape, Begin: 999, End: -1}
		all = append(all, tt.Data...)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "s.safetensors")
	w, err := Create(path, infos, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	if _, err := io.CopyBuffer(w, bytes.NewReader(all), make([]byte, 7)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	ref := filepath.Join(dir, "ref.safetensors")
	if err := WriteFile(ref, ts, nil); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(path)
	b, _ := os.ReadFile(ref)
	if !bytes.Equal(a, b) {
		t.Errorf("Write and WriteTensor produced different files")
	}
}

func TestWriterSequenceErrors(t *testing.T) {
	infos := []TensorInfo{
		{Name: "a", DType: F32, Shape: []int{2}},
		{Name: "n", DType: I32, Shape: []int{1}},
	}
	cases := []struct {
		name string
		do   func(w *Writer) error
		is   error
		want string
	}{
		{"out of order", func(w *Writer) error { return w.WriteTensor("n", make([]byte, 4)) }, ErrSequence, `tensor "n": written out of order: "a" is next`},
		{"wrong size", func(w *Writer) error { return w.WriteTensor("a", make([]byte, 4)) }, ErrSequence, `tensor "a": got 4 bytes, want 8 (shape [2] × F32)`},
		{"unknown", func(w *Writer) error { return w.WriteTensor("zz", nil) }, ErrNotFound, `tensor "zz": not declared to Create`},
		{"float32 count", func(w *Writer) error { return w.WriteFloat32("a", []float32{1}) }, ErrSequence, `got 1 values, want 2`},
		{"float32 to int", func(w *Writer) error {
			w.WriteFloat32("a", []float32{1, 2})
			return w.WriteFloat32("n", []float32{1})
		}, ErrDType, `WriteFloat32 to a I32 tensor`},
		{"middle of tensor", func(w *Writer) error {
			w.Write([]byte{1, 2, 3})
			return w.WriteTensor("n", make([]byte, 4))
		}, ErrSequence, `in the middle of "a" (3 of 8 bytes written)`},
		{"past the end", func(w *Writer) error { _, err := w.Write(make([]byte, 13)); return err }, ErrSequence, `write of 13 bytes passes the end of the data (0 of 12 bytes written)`},
		{"twice", func(w *Writer) error {
			w.WriteFloat32("a", []float32{1, 2})
			return w.WriteFloat32("a", []float32{1, 2})
		}, ErrSequence, `"n" is next`},
		{"close early", func(w *Writer) error {
			w.WriteFloat32("a", []float32{1, 2})
			return w.Close()
		}, ErrSequence, `Close after 8 of 12 data bytes ("n" is next)`},
		{"after abort", func(w *Writer) error { w.Abort(); return w.WriteFloat32("a", []float32{1, 2}) }, ErrClosed, `aborted`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "seq.safetensors")
			w, err := Create(path, infos, nil)
			if err != nil {
				t.Fatal(err)
			}
			err = c.do(w)
			if !errors.Is(err, c.is) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error = %v\nwant %v containing %q", err, c.is, c.want)
			}
			// Failures are sticky: a correct write now fails the same way,
			// Close fails, and nothing is left behind.
			if err2 := w.WriteTensor("a", make([]byte, 8)); err2 == nil {
				t.Errorf("write after a failure succeeded")
			}
			if err := w.Close(); err == nil {
				t.Errorf("Close after a failure succeeded")
			}
			w.Abort()
			assertDirHolds(t, dir)
		})
	}
}

// assertDirHolds fails unless dir holds exactly the named entries (so no
// temporary file was left behind).
func assertDirHolds(t *testing.T, dir string, names ...string) {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if strings.Join(got, ",") != strings.Join(names, ",") {
		t.Errorf("directory holds %v, want %v", got, names)
	}
}

func TestCreateInvalid(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bad.safetensors")
	cases := []struct {
		name  string
		infos []TensorInfo
		meta  map[string]string
		want  string
	}{
		{"duplicate", []TensorInfo{{Name: "a", DType: U8}, {Name: "a", DType: U8}}, nil, `tensor "a": duplicate tensor name`},
		{"reserved name", []TensorInfo{{Name: "__metadata__", DType: U8}}, nil, `reserved for metadata`},
		{"zero dtype", []TensorInfo{{Name: "a", Shape: []int{1}}}, nil, `tensor "a": invalid dtype DType(0)`},
		{"negative dim", []TensorInfo{{Name: "a", DType: F32, Shape: []int{-2}}}, nil, `negative dimension`},
		{"overflow", []TensorInfo{{Name: "a", DType: F32, Shape: []int{1 << 62}}}, nil, `byte size overflows`},
		{"total overflow", []TensorInfo{{Name: "a", DType: U8, Shape: []int{math.MaxInt64}}, {Name: "b", DType: U8, Shape: []int{1}}}, nil, `data area size overflows`},
		{"bad utf8 name", []TensorInfo{{Name: "a\xff", DType: U8}}, nil, `not valid UTF-8`},
		{"bad utf8 metadata", nil, map[string]string{"k": "\xfe"}, `metadata "k" is not valid UTF-8`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, err := Create(path, c.infos, c.meta)
			if err == nil {
				w.Abort()
				t.Fatalf("Create succeeded")
			}
			if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error = %v, want ErrFormat containing %q", err, c.want)
			}
		})
	}
	assertDirHolds(t, dir)
	if _, err := Create(filepath.Join(dir, "no", "such", "dir.safetensors"), nil, nil); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Create in a missing directory: %v", err)
	}
}

// failingFile is a temporary file whose writes fail with ENOSPC after limit
// bytes, or whose Sync fails: a full disk, without filling one.
type failingFile struct {
	*os.File
	limit    int
	failSync bool
	written  int
}

func (f *failingFile) Write(p []byte) (int, error) {
	if f.written+len(p) > f.limit {
		n := max(f.limit-f.written, 0)
		f.File.Write(p[:n])
		f.written += n
		return n, syscall.ENOSPC
	}
	f.written += len(p)
	return f.File.Write(p)
}

func (f *failingFile) Sync() error {
	if f.failSync {
		return syscall.EIO
	}
	return f.File.Sync()
}

// TestWriterDiskFull shows that a failed write leaves the destination as it
// was (absent, or the old file) and removes the temporary file.
func TestWriterDiskFull(t *testing.T) {
	big := make([]float32, 3<<20/4) // 3 MiB: passes through the 1 MiB buffer
	cases := []struct {
		name     string
		limit    int
		failSync bool
		old      bool // an old file exists at the destination
		want     error
	}{
		{"fails at flush, no old file", 100, false, false, syscall.ENOSPC},
		{"fails at flush, old file kept", 100, false, true, syscall.ENOSPC},
		{"fails mid tensor", 2 << 20, false, true, syscall.ENOSPC},
		{"fails at sync", math.MaxInt, true, true, syscall.EIO},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "out.safetensors")
			if c.old {
				os.WriteFile(path, []byte("old contents"), 0o644)
			}
			saved := createTemp
			defer func() { createTemp = saved }()
			createTemp = func(path string) (tempFile, error) {
				f, err := durable.CreateTemp(path)
				return &failingFile{File: f, limit: c.limit, failSync: c.failSync}, err
			}
			w, err := Create(path, []TensorInfo{{Name: "big", DType: F32, Shape: []int{len(big)}}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Abort()
			err = w.WriteFloat32("big", big)
			if err == nil {
				err = w.Close()
			}
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("error = %v, want %v naming %s", err, c.want, path)
			}
			w.Abort()
			if c.old {
				if got, _ := os.ReadFile(path); string(got) != "old contents" {
					t.Errorf("destination changed to %d bytes", len(got))
				}
				assertDirHolds(t, dir, "out.safetensors")
			} else {
				assertDirHolds(t, dir)
			}
		})
	}
}

func TestWriterRenameFails(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "taken")
	os.MkdirAll(filepath.Join(path, "child"), 0o755) // a non-empty directory cannot be renamed over
	err := WriteFile(path, []Tensor{{Name: "a", DType: U8, Shape: []int{1}, Data: []byte{1}}}, nil)
	// Refused before any data is written (durable.CreateTemp: only a
	// regular file is ever replaced), not at the final rename.
	if err == nil || !strings.Contains(err.Error(), "refusing to replace it") {
		t.Fatalf("error = %v, want a refusal", err)
	}
	assertDirHolds(t, dir, "taken")
}

func TestWriterCloseTwiceAndAbort(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.safetensors")
	w, err := Create(path, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	w.Abort() // after a successful Close: must keep the file
	f, err := Open(path)
	if err != nil {
		t.Fatalf("empty file from Create(nil): %v", err)
	}
	f.Close()
	if _, err := w.Write([]byte{1}); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Close: %v, want ErrClosed", err)
	}
	assertDirHolds(t, dir, "c.safetensors")
}

// gridFile records the size of every write to the temporary file.
type gridFile struct {
	*os.File
	writes []int
}

func (g *gridFile) Write(p []byte) (int, error) {
	g.writes = append(g.writes, len(p))
	return g.File.Write(p)
}

// TestWriterWritesWholeBuffers checks that every write to the file but the
// last is bufSize bytes (so each starts at a multiple of bufSize, where
// Linux can cache the file in 2 MiB folios), whatever the sizes of the
// tensors and of the Write calls: a header, a tensor smaller than the
// buffer, one of 2.5 buffers written at once (which bufio would send
// straight through), and one streamed in odd pieces; and that the file
// holds what was written.
func TestWriterWritesWholeBuffers(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	sizes := []int{1000, bufSize*5/2 + 3, bufSize + 17}
	infos := make([]TensorInfo, len(sizes))
	data := make([][]byte, len(sizes))
	for i, n := range sizes {
		infos[i] = TensorInfo{Name: fmt.Sprint("t", i), DType: U8, Shape: []int{n}}
		data[i] = make([]byte, n)
		for j := range data[i] {
			data[i][j] = byte(rng.Uint32())
		}
	}
	path := filepath.Join(t.TempDir(), "g.safetensors")
	saved := createTemp
	defer func() { createTemp = saved }()
	var g *gridFile
	createTemp = func(path string) (tempFile, error) {
		f, err := durable.CreateTemp(path)
		g = &gridFile{File: f}
		return g, err
	}
	w, err := Create(path, infos, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	for i := range 2 {
		if err := w.WriteTensor(infos[i].Name, data[i]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := io.CopyBuffer(w, bytes.NewReader(data[2]), make([]byte, 333_333)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if len(g.writes) < 3 {
		t.Fatalf("%d writes, want ≥ 3: %v", len(g.writes), g.writes)
	}
	for i, n := range g.writes[:len(g.writes)-1] {
		if n != bufSize {
			t.Fatalf("write %d of %d is %d bytes, want %d: %v", i, len(g.writes), n, bufSize, g.writes)
		}
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i, in := range infos {
		got, err := f.Bytes(in.Name)
		if err != nil || !bytes.Equal(got, data[i]) {
			t.Fatalf("tensor %s: %d bytes back (err %v), not what was written", in.Name, len(got), err)
		}
	}
}
