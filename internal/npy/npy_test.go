package npy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// file describes an NPY file for build; the zero value of each field is
// the usual choice.
type file struct {
	descr   string // default "<i4"
	version byte   // default 1
	fortran bool
	shape   string // default "(len(body)/size,)"
	header  string // replaces the whole header dict when set
	body    []byte
}

// build encodes f by hand, as numpy.save would, independently of
// AppendHeader: magic, version, header length, the dict padded with
// spaces so the data starts at a multiple of 64 bytes and ended by "\n",
// then the body.
func build(f file) []byte {
	if f.descr == "" {
		f.descr = "<i4"
	}
	if f.version == 0 {
		f.version = 1
	}
	if f.shape == "" {
		f.shape = fmt.Sprintf("(%d,)", len(f.body)/int(f.descr[2]-'0'))
	}
	order := "False"
	if f.fortran {
		order = "True"
	}
	header := f.header
	if header == "" {
		header = fmt.Sprintf("{'descr': '%s', 'fortran_order': %s, 'shape': %s, }", f.descr, order, f.shape)
	}
	prefix := 10
	if f.version > 1 {
		prefix = 12
	}
	for (prefix+len(header)+1)%64 != 0 {
		header += " "
	}
	header += "\n"
	out := append([]byte(Magic), f.version, 0)
	if f.version > 1 {
		out = binary.LittleEndian.AppendUint32(out, uint32(len(header)))
	} else {
		out = binary.LittleEndian.AppendUint16(out, uint16(len(header)))
	}
	return append(append(out, header...), f.body...)
}

// le encodes values little-endian in size bytes each.
func le(size int, v ...int64) []byte {
	var out []byte
	for _, x := range v {
		switch size {
		case 1:
			out = append(out, byte(x))
		case 2:
			out = binary.LittleEndian.AppendUint16(out, uint16(x))
		case 4:
			out = binary.LittleEndian.AppendUint32(out, uint32(x))
		default:
			out = binary.LittleEndian.AppendUint64(out, uint64(x))
		}
	}
	return out
}

// TestIntsRoundTrip: every integer dtype and format version decodes to
// the values written, negative ones included for the signed types.
func TestIntsRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, descr := range []string{"|i1", "|u1", "<u1", "<i2", "<u2", "<i4", "<u4", "<i8", "<u8"} {
		for _, version := range []byte{1, 2, 3} {
			size := int(descr[2] - '0')
			bits := 8*size - 1 // below the sign bit: fits signed and unsigned alike
			want := make([]int, 12)
			for i := range want {
				want[i] = int(r.Int64N(int64(1) << min(bits, 62)))
				if descr[1] == 'i' && i%2 == 1 {
					want[i] = -want[i] - 1
				}
			}
			var v []int64
			for _, x := range want {
				v = append(v, int64(x))
			}
			a, err := Parse(build(file{descr: descr, version: version, shape: "(3, 4)", body: le(size, v...)}))
			if err != nil {
				t.Fatalf("%s v%d: %v", descr, version, err)
			}
			got, err := a.Ints()
			if err != nil || !slices.Equal(got, want) || a.Descr != descr || a.Size != size ||
				!slices.Equal(a.Shape, []int64{3, 4}) || a.Len() != 12 || a.Fortran {
				t.Errorf("%s v%d: %v, %v (array %+v); want %v", descr, version, got, err, a, want)
			}
		}
	}
}

// TestFloat32s: float32 elements come back bit for bit, float64 ones
// rounded to float32; Fortran order is reported and the bytes kept.
func TestFloat32s(t *testing.T) {
	want := []float32{0, -1.5, 1e-30, float32(math.Inf(1)), 3.25}
	var f4, f8 []byte
	for _, x := range want {
		f4 = binary.LittleEndian.AppendUint32(f4, math.Float32bits(x))
		f8 = binary.LittleEndian.AppendUint64(f8, math.Float64bits(float64(x)))
	}
	f8[8] ^= 1 // the last bit of 1.5 as a float64: rounds back to 1.5 as a float32
	for _, c := range []struct {
		descr string
		body  []byte
	}{{"<f4", f4}, {"<f8", f8}} {
		a, err := Parse(build(file{descr: c.descr, fortran: true, body: c.body}))
		if err != nil {
			t.Fatal(err)
		}
		got, err := a.Float32s()
		if err != nil || !slices.Equal(got, want) || !a.Fortran || a.Kind != 'f' {
			t.Errorf("%s: %v, %v, fortran %v; want %v", c.descr, got, err, a.Fortran, want)
		}
	}
}

// TestWrongKind: Ints refuses floats and Float32s integers, as
// unsupported, naming the dtype.
func TestWrongKind(t *testing.T) {
	a, err := Parse(build(file{descr: "<f4", body: le(4, 0, 0)}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Ints(); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), `"<f4"`) {
		t.Errorf("Ints of <f4: %v", err)
	}
	b, err := Parse(build(file{descr: "<i8", body: le(8, 1)}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Float32s(); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), `"<i8"`) {
		t.Errorf("Float32s of <i8: %v", err)
	}
}

// TestIntsRange: a uint64 above MaxInt64 is a RangeError at its index.
func TestIntsRange(t *testing.T) {
	a, err := Parse(build(file{descr: "<u8", shape: "(2, 2)", body: le(8, 1, 2, 3, -1)}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Ints()
	var re *RangeError
	if !errors.As(err, &re) || re.Index != 3 || !strings.Contains(err.Error(), "element 3") {
		t.Errorf("error %v, want a RangeError at element 3", err)
	}
}

// TestHeaderForms: header spellings numpy and other writers produce.
func TestHeaderForms(t *testing.T) {
	for _, h := range []string{
		"{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }",
		`{"descr": "<i4", "fortran_order": False, "shape": (2, 3)}`,
		"{'shape': (2L, 3L), 'fortran_order': False, 'descr': '<i4'}",
		"{ 'descr' : '<i4' , 'fortran_order' : False , 'shape' : ( 2 , 3 , ) , }",
	} {
		a, err := Parse(build(file{header: h, body: le(4, 1, 2, 3, 4, 5, 6)}))
		if err != nil {
			t.Errorf("header %s: %v", h, err)
			continue
		}
		if got, err := a.Ints(); err != nil || !slices.Equal(got, []int{1, 2, 3, 4, 5, 6}) || !slices.Equal(a.Shape, []int64{2, 3}) {
			t.Errorf("header %s: %v, %v, shape %v", h, got, err, a.Shape)
		}
	}
}

// TestShapes: a scalar holds one element, a zero dimension none, however
// large the others.
func TestShapes(t *testing.T) {
	for _, c := range []struct {
		shape string
		n     int64
	}{{"()", 1}, {"(0,)", 0}, {"(1000000000000, 0)", 0}, {"(0, 9223372036854775807, 2)", 0}, {"(1, 1, 1)", 1}} {
		a, err := Parse(build(file{shape: c.shape, body: le(4, make([]int64, c.n)...)}))
		if err != nil || a.Len() != c.n {
			t.Errorf("shape %s: %v, want %d elements", c.shape, err, c.n)
		}
	}
}

// TestRefusals: each malformed or unsupported file is refused with the
// right sentinel and a message that says what is wrong.
func TestRefusals(t *testing.T) {
	good := build(file{shape: "(2, 3)", body: le(4, 1, 2, 3, 4, 5, 6)})
	withHeader := func(h string) []byte { return build(file{header: h, body: le(4, 1, 2, 3, 4, 5, 6)}) }
	for _, c := range []struct {
		name string
		data []byte
		is   error
		want string
	}{
		{"bad magic", append([]byte("\x93NUMPX"), good[6:]...), ErrFormat, "bad magic"},
		{"empty", nil, ErrFormat, "bad magic"},
		{"magic only", []byte(Magic), ErrFormat, "bad magic"},
		{"v1 truncated header", good[:9], ErrFormat, "truncated header"},
		{"v2 truncated header", append([]byte(Magic), 2, 0, 1), ErrFormat, "truncated header"},
		{"version 4", append(append([]byte(Magic), 4, 0), good[8:]...), ErrUnsupported, "version 4.0"},
		{"header past end", good[:40], ErrFormat, "header of"},
		{"huge v2 header length", append(append([]byte(Magic), 2, 0), 0xff, 0xff, 0xff, 0xff, '{'), ErrFormat, "header of 4294967295 bytes"},
		{"big endian", build(file{descr: ">i4", shape: "(2, 3)", body: le(4, 1, 2, 3, 4, 5, 6)}), ErrUnsupported, "big-endian"},
		{"big endian float", build(file{descr: ">f4", body: le(4, 1)}), ErrUnsupported, `dtype ">f4" is big-endian`},
		{"float16", build(file{descr: "<f2", body: le(2, 1)}), ErrUnsupported, `"<f2"`},
		{"complex", build(file{descr: "<c8", body: le(8, 1)}), ErrUnsupported, `"<c8"`},
		{"native order", build(file{descr: "=i4", body: le(4, 1)}), ErrUnsupported, `"=i4"`},
		{"structured dtype", withHeader("{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (6,), }"), ErrUnsupported, "descr"},
		{"missing key", withHeader("{'descr': '<i4', 'shape': (2, 3)}"), ErrFormat, "want keys"},
		{"extra key", withHeader("{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), 'x': 1}"), ErrFormat, "unexpected key"},
		{"repeated key", withHeader("{'descr': '<i4', 'descr': '<i4', 'fortran_order': False, 'shape': (2, 3)}"), ErrFormat, "repeated"},
		{"garbage", withHeader("descr=<i4"), ErrFormat, "not a dict"},
		{"text after", withHeader("{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3)} x"), ErrFormat, "text after"},
		{"bad bool", withHeader("{'descr': '<i4', 'fortran_order': 0, 'shape': (2, 3)}"), ErrFormat, "fortran_order"},
		{"negative dim", withHeader("{'descr': '<i4', 'fortran_order': False, 'shape': (-2, 3)}"), ErrFormat, "shape is not"},
		{"truncated data", good[:len(good)-3], ErrFormat, "shape (2, 3) needs 24 data bytes, file has 21 (truncated)"},
		{"trailing data", append(slices.Clone(good), 0, 0, 0, 0), ErrFormat, "file has 28 (trailing data)"},
		{"absurd shape", build(file{shape: "(9223372036854775807, 9223372036854775807)"}), ErrFormat, "absurdly large"},
		{"absurd 1-D", build(file{descr: "<f8", shape: "(9223372036854775807,)"}), ErrFormat, "absurdly large"},
		{"large shape", build(file{shape: "(1000000, 1000)", body: le(4, 1, 2)}), ErrFormat, "needs 4000000000 data bytes, file has 8 (truncated)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(c.data)
			var e *Error
			if !errors.Is(err, c.is) || !errors.As(err, &e) || !strings.HasPrefix(err.Error(), "npy: ") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want an *Error matching %v that says %q", err, c.is, c.want)
			}
			other := ErrFormat
			if c.is == ErrFormat {
				other = ErrUnsupported
			}
			if errors.Is(err, other) {
				t.Errorf("error %v matches %v too", err, other)
			}
		})
	}
}

// TestEncodeFloat32: the header numpy expects (version 1.0, data at a
// multiple of 64 bytes), the values rounded to float32, and Parse reads
// it back.
func TestEncodeFloat32(t *testing.T) {
	v := []float64{0, 0.5, 1e-3, 12, math.Pi}
	b := EncodeFloat32(v)
	if string(b[:8]) != "\x93NUMPY\x01\x00" {
		t.Fatalf("magic %q", b[:8])
	}
	hl := int(binary.LittleEndian.Uint16(b[8:]))
	hdr := string(b[10 : 10+hl])
	if (10+hl)%64 != 0 || hdr != "{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }"+strings.Repeat(" ", 128-10-57-1)+"\n" {
		t.Fatalf("header %q (data at %d)", hdr, 10+hl)
	}
	a, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	got, err := a.Float32s()
	if err != nil || len(got) != len(v) {
		t.Fatalf("%v, %v", got, err)
	}
	for i, x := range v {
		if got[i] != float32(x) {
			t.Errorf("value %d = %v, want %v", i, got[i], float32(x))
		}
	}
	if !bytes.Equal(EncodeFloat32(nil)[:10], append([]byte(Magic), 1, 0, 118, 0)) {
		t.Errorf("empty array preamble %q", EncodeFloat32(nil)[:10])
	}
}

// TestEncodeInt64Rows: a 2-D '<i8' C-order array of the rows, values
// beyond 32 bits and negative ones kept, that Parse reads back.
func TestEncodeInt64Rows(t *testing.T) {
	rows := [][]int{{0, 1, -2}, {1 << 40, 4095, 7}}
	a, err := Parse(EncodeInt64Rows(rows))
	if err != nil {
		t.Fatal(err)
	}
	if a.Descr != "<i8" || a.Fortran || len(a.Shape) != 2 || a.Shape[0] != 2 || a.Shape[1] != 3 {
		t.Fatalf("descr %q fortran %v shape %v", a.Descr, a.Fortran, a.Shape)
	}
	got, err := a.Ints()
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{0, 1, -2, 1 << 40, 4095, 7}; !slices.Equal(got, want) {
		t.Fatalf("values %v, want %v", got, want)
	}
	defer func() {
		if recover() == nil {
			t.Error("rows of different lengths did not panic")
		}
	}()
	EncodeInt64Rows([][]int{{1, 2}, {3}})
}

// TestAppendHeader: headers of every length start the data at a multiple
// of 64 bytes, match the hand-built encoding, and parse; one too long for
// version 1.0 is written as 2.0.
func TestAppendHeader(t *testing.T) {
	for n := 1; n <= 70; n++ {
		shape := make([]int64, n%7)
		for i := range shape {
			shape[i] = int64(n + i)
		}
		descr := fmt.Sprintf("<i%d", []int{1, 2, 4, 8}[n%4])
		if n%4 == 0 {
			descr = "|i1"
		}
		h := AppendHeader(nil, descr, n%2 == 0, shape...)
		if len(h)%64 != 0 {
			t.Fatalf("shape %v: header of %d bytes", shape, len(h))
		}
		a, err := parseHeader(string(h[10:]))
		if err != nil || a.Descr != descr || a.Fortran != (n%2 == 0) || !slices.Equal(a.Shape, shape) {
			t.Fatalf("shape %v: %+v, %v", shape, a, err)
		}
	}
	long := make([]int64, 22000) // 66 kB of "1, 1, …"
	for i := range long {
		long[i] = 1
	}
	h := AppendHeader(nil, "<i4", false, long...)
	if h[6] != 2 || len(h)%64 != 0 {
		t.Fatalf("long header: version %d, %d bytes", h[6], len(h))
	}
	if a, err := Parse(append(h, 7, 0, 0, 0)); err != nil || a.Len() != 1 || len(a.Shape) != len(long) {
		t.Errorf("long header: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(build(file{shape: "(2, 3)", body: le(4, 1, 2, 3, 4, 5, 6)}))
	f.Add(build(file{descr: "<f8", version: 2, body: le(8, 1, 2)}))
	f.Add(build(file{descr: "|u1", version: 3, shape: "()", body: []byte{9}}))
	f.Add(build(file{shape: "(5, 0)"}))
	f.Add([]byte(Magic))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := Parse(data)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v is not an *Error", err)
			}
			return
		}
		n := int64(1)
		for _, d := range a.Shape {
			n *= d
		}
		if a.Len() != n || int64(len(a.Data)) != n*int64(a.Size) {
			t.Fatalf("shape %v, %d bytes of size %d", a.Shape, len(a.Data), a.Size)
		}
		if a.Kind == 'f' {
			_, err = a.Float32s()
		} else {
			_, err = a.Ints()
		}
		var re *RangeError
		if err != nil && !errors.As(err, &re) {
			t.Fatalf("decoding: %v", err)
		}
	})
}
