package safetensors

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"forge/tensor"
)

// randomBytes returns n seeded random bytes.
func randomBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// sampleTensors returns one [3 5] tensor of every dtype with random bytes
// (BOOL gets 0/1), plus a scalar and an empty tensor.
func sampleTensors(rng *rand.Rand) []Tensor {
	var ts []Tensor
	for d := BF16; d <= BOOL; d++ {
		data := randomBytes(rng, 15*d.Size())
		if d == BOOL {
			for i := range data {
				data[i] &= 1
			}
		}
		ts = append(ts, Tensor{Name: "t." + d.String(), DType: d, Shape: []int{3, 5}, Data: data})
	}
	ts = append(ts, Tensor{Name: "scalar", DType: F32, Shape: []int{}, Data: randomBytes(rng, 4)})
	ts = append(ts, Tensor{Name: "empty", DType: BF16, Shape: []int{0, 4}, Data: nil})
	return ts
}

func TestRoundTripEveryDType(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ts := sampleTensors(rng)
	path := filepath.Join(t.TempDir(), "all.safetensors")
	meta := map[string]string{"format": "pt", "note": "round trip"}
	if err := WriteFile(path, ts, meta); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Metadata(); got["format"] != "pt" || got["note"] != "round trip" || len(got) != 2 {
		t.Errorf("Metadata() = %v", got)
	}
	want := make([]string, len(ts))
	for i, tt := range ts {
		want[i] = tt.Name
	}
	slices.Sort(want)
	if got := f.Names(); !slices.Equal(got, want) {
		t.Errorf("Names() = %v, want %v", got, want)
	}
	for _, tt := range ts {
		info, ok := f.Info(tt.Name)
		if !ok || info.DType != tt.DType || !slices.Equal(info.Shape, tt.Shape) || int(info.End-info.Begin) != len(tt.Data) {
			t.Errorf("Info(%q) = %+v, %v", tt.Name, info, ok)
		}
		b, err := f.Bytes(tt.Name)
		if err != nil || !bytes.Equal(b, tt.Data) {
			t.Errorf("Bytes(%q) differ (err %v)", tt.Name, err)
		}
		if off, ok := f.Offset(tt.Name); !ok || off+int64(len(tt.Data)) > int64(len(raw)) || !bytes.Equal(raw[off:off+int64(len(tt.Data))], tt.Data) {
			t.Errorf("Offset(%q) = %d, %v: not where its bytes are in the file", tt.Name, off, ok)
		}
		checkWidened(t, f, tt)
	}
	if _, ok := f.Offset("absent"); ok {
		t.Error("Offset of an absent tensor reports it present")
	}
}

// checkWidened checks the typed accessors of one tensor against its bytes.
func checkWidened(t *testing.T, f *File, tt Tensor) {
	t.Helper()
	n := len(tt.Data) / tt.DType.Size()
	got, err := f.Float32(tt.Name)
	switch tt.DType {
	case BF16, F16, F32:
		if err != nil || len(got) != n {
			t.Fatalf("Float32(%q) = %d values, %v; want %d", tt.Name, len(got), err, n)
		}
		for i := range n {
			var want float32
			switch tt.DType {
			case BF16:
				want = tensor.BF16ToF32(binary.LittleEndian.Uint16(tt.Data[2*i:]))
			case F16:
				want = tensor.F16ToF32(binary.LittleEndian.Uint16(tt.Data[2*i:]))
			case F32:
				want = math.Float32frombits(binary.LittleEndian.Uint32(tt.Data[4*i:]))
			}
			// Compare bits: random data holds NaNs, which must survive too.
			if math.Float32bits(got[i]) != math.Float32bits(want) {
				t.Fatalf("Float32(%q)[%d] = %v, want %v", tt.Name, i, got[i], want)
			}
		}
	default:
		if !errors.Is(err, ErrDType) || !strings.Contains(err.Error(), tt.Name) {
			t.Errorf("Float32(%q) of %v: error %v, want ErrDType naming the tensor", tt.Name, tt.DType, err)
		}
	}
	u, err := f.Uint16(tt.Name)
	if tt.DType == BF16 || tt.DType == F16 {
		for i := range u {
			if u[i] != binary.LittleEndian.Uint16(tt.Data[2*i:]) {
				t.Fatalf("Uint16(%q)[%d] wrong", tt.Name, i)
			}
		}
	} else if !errors.Is(err, ErrDType) {
		t.Errorf("Uint16(%q) of %v: error %v, want ErrDType", tt.Name, tt.DType, err)
	}
	iv, err := f.Int32(tt.Name)
	if tt.DType == I32 {
		for i := range iv {
			if iv[i] != int32(binary.LittleEndian.Uint32(tt.Data[4*i:])) {
				t.Fatalf("Int32(%q)[%d] wrong", tt.Name, i)
			}
		}
	} else if !errors.Is(err, ErrDType) {
		t.Errorf("Int32(%q) of %v: error %v, want ErrDType", tt.Name, tt.DType, err)
	}
}

func TestUint16Views(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	ts := []Tensor{{Name: "h", DType: BF16, Shape: []int{64}, Data: randomBytes(rng, 128)}}
	path := filepath.Join(t.TempDir(), "h.safetensors")
	if err := WriteFile(path, ts, nil); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, _ := f.Bytes("h")
	u, err := f.Uint16("h")
	if err != nil {
		t.Fatal(err)
	}
	// The writer aligns the data area to 8 bytes and mappings are page
	// aligned, so on a little-endian host the view aliases the mapping.
	if littleEndian && unsafe.Pointer(&u[0]) != unsafe.Pointer(&b[0]) {
		t.Errorf("Uint16 copied an aligned tensor")
	}

	// The same file one byte into a buffer: unaligned, so Uint16 copies,
	// and the values must not change.
	raw, _ := os.ReadFile(path)
	buf := make([]byte, len(raw)+1)
	copy(buf[1:], raw)
	g, err := OpenBytes("shifted", buf[1:])
	if err != nil {
		t.Fatal(err)
	}
	gb, _ := g.Bytes("h")
	gu, _ := g.Uint16("h")
	if unsafe.Pointer(&gu[0]) == unsafe.Pointer(&gb[0]) {
		t.Errorf("Uint16 aliased an odd address")
	}
	if !slices.Equal(gu, u) {
		t.Errorf("unaligned Uint16 differs from aligned")
	}
	checkWidened(t, g, ts[0])
	ts[0].DType = F32 // the same bytes read as F32 through the unaligned path
	g2, _ := OpenBytes("shifted", bytes.Replace(buf[1:], []byte(`"BF16","shape":[64]`), []byte(`"F32" ,"shape":[32]`), 1))
	if g2 == nil {
		t.Fatal("could not retype the tensor")
	}
	checkWidened(t, g2, ts[0])
}

func TestAccessErrors(t *testing.T) {
	f, err := OpenBytes("acc.safetensors", rawFile(`{`+f32a+`}`, 4))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Bytes("nope"); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), `acc.safetensors: tensor "nope": no such tensor`) {
		t.Errorf("Bytes(unknown) error = %v", err)
	}
	if _, ok := f.Info("nope"); ok {
		t.Errorf("Info(unknown) ok")
	}
	info, _ := f.Info("a")
	info.Shape[0] = 99 // must not reach the File
	if again, _ := f.Info("a"); again.Shape[0] != 1 {
		t.Errorf("Info shares its Shape with the File")
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Bytes("a"); !errors.Is(err, ErrClosed) {
		t.Errorf("Bytes after Close: %v, want ErrClosed", err)
	}
	if err := f.Close(); !errors.Is(err, ErrClosed) {
		t.Errorf("second Close: %v, want ErrClosed", err)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(filepath.Join(dir, "missing.safetensors")); !errors.Is(err, os.ErrNotExist) ||
		!strings.Contains(err.Error(), "missing.safetensors: open") {
		t.Errorf("Open(missing) error = %v", err)
	}
	if _, err := Open(dir); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("Open(dir) error = %v", err)
	}
	empty := filepath.Join(dir, "empty.safetensors")
	os.WriteFile(empty, nil, 0o644)
	if _, err := Open(empty); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "file is 0 bytes") {
		t.Errorf("Open(empty) error = %v", err)
	}
	// A header and no data area at all: mapped, and valid.
	bare := filepath.Join(dir, "bare.safetensors")
	os.WriteFile(bare, rawFile(`{"__metadata__":{"k":"v"}}`, 0), 0o644)
	f, err := Open(bare)
	if err != nil {
		t.Fatalf("Open(empty data area): %v", err)
	}
	if f.Path() != bare || len(f.Names()) != 0 || f.Metadata()["k"] != "v" {
		t.Errorf("bare file: path %q names %v meta %v", f.Path(), f.Names(), f.Metadata())
	}
	if err := f.Close(); err != nil {
		t.Error(err)
	}
}

// TestTruncated cuts a valid file at points in each of its parts; every cut
// must fail with an error that says which part is missing.
func TestTruncated(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	dir := t.TempDir()
	full := filepath.Join(dir, "full.safetensors")
	if err := WriteFile(full, sampleTensors(rng), map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	checkTruncations(t, full, dir)
}

// TestTruncatedFixture does the same to the real Qwen3.5 fixture.
func TestTruncatedFixture(t *testing.T) {
	const fixture = "../../shared/fixtures/qwen35-tiny-random/model.safetensors"
	if _, err := os.Stat(fixture); err != nil {
		t.Skipf("fixture %s not available: %v", fixture, err)
	}
	f, err := Open(fixture)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(f.Names()); n != 109 || f.Metadata()["format"] != "pt" {
		t.Errorf("fixture: %d tensors, metadata %v; want 109 and format pt", n, f.Metadata())
	}
	w, err := f.Float32("lm_head.weight")
	if err != nil || len(w) != 512*256 {
		t.Errorf("Float32(lm_head.weight): %d values, %v", len(w), err)
	}
	f.Close()
	checkTruncations(t, fixture, t.TempDir())
}

func checkTruncations(t *testing.T, src, dir string) {
	t.Helper()
	raw, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	n := int(binary.LittleEndian.Uint64(raw))
	cuts := []struct {
		at   int
		want string
	}{
		{0, "file is 0 bytes"},
		{5, "file is 5 bytes, shorter than the 8-byte header length"},
		{8, "passes the end of the file (0 bytes after the length)"},
		{8 + n/2, "passes the end of the file"},
		{8 + n - 1, "passes the end of the file"},
		{8 + n, "pass the end of the 0-byte data area"},
		{8 + n + (len(raw)-8-n)/2, "pass the end of the"},
		{len(raw) - 1, "pass the end of the"},
	}
	for _, c := range cuts {
		path := filepath.Join(dir, "cut.safetensors")
		if err := os.WriteFile(path, raw[:c.at], 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := Open(path)
		if err == nil {
			f.Close()
			t.Errorf("cut at %d of %d: opened", c.at, len(raw))
			continue
		}
		if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("cut at %d of %d: error %q, want ErrFormat naming %s and %q", c.at, len(raw), err, path, c.want)
		}
	}
}

func TestGoldenFixtureInt32(t *testing.T) {
	const fixture = "../../shared/fixtures/qwen35-tiny-random/golden.safetensors"
	if _, err := os.Stat(fixture); err != nil {
		t.Skipf("fixture %s not available: %v", fixture, err)
	}
	f, err := Open(fixture)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, name := range f.Names() {
		info, _ := f.Info(name)
		var n int
		switch info.DType {
		case I32:
			v, err := f.Int32(name)
			if err != nil {
				t.Fatal(err)
			}
			n = len(v)
		default:
			v, err := f.Float32(name)
			if err != nil {
				t.Fatal(err)
			}
			n = len(v)
		}
		if n != info.NumElements() {
			t.Errorf("%s: %d values, want %d", name, n, info.NumElements())
		}
	}
}
