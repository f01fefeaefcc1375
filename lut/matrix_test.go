package lut

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"forge/tensor"
)

// TestPackLayout pins the bit layout of doc.go with hand-computed bytes.
func TestPackLayout(t *testing.T) {
	cases := []struct {
		bits  int
		codes []uint8
		want  []byte
	}{
		{4, []uint8{0x1, 0x2, 0x3, 0x4, 0xf}, []byte{0x21, 0x43, 0x0f}},
		{2, []uint8{0, 1, 2, 3, 3}, []byte{0b11_10_01_00, 0b11}},
		{1, []uint8{1, 0, 1, 1, 0, 0, 0, 1, 1}, []byte{0b1000_1101, 0b1}},
		// 3-bit: c0 in bits 0-2, c1 in bits 3-5, c2 in bits 6-8 (straddles), …
		{3, []uint8{5, 3, 6, 1, 7, 2, 4, 0}, []byte{
			5 | 3<<3 | (6&3)<<6, // 0b10_011_101
			6>>2 | 1<<1 | 7<<4 | (2&1)<<7,
			2>>1 | 4<<2 | 0<<5,
		}},
		// 6-bit: c0 bits 0-5, c1 bits 6-11, …
		{6, []uint8{0x3f, 0x01, 0x2a, 0x15}, []byte{0x3f | 0x01<<6, 0x01>>2 | (0x2a&0xf)<<4, 0x2a>>4 | 0x15<<2}},
		{8, []uint8{0x80, 0x7f}, []byte{0x80, 0x7f}},
	}
	for _, c := range cases {
		got := make([]byte, PackedLen(len(c.codes), c.bits))
		Pack(got, c.codes, c.bits)
		if !slices.Equal(got, c.want) {
			t.Errorf("%d-bit Pack(%v) = %08b, want %08b", c.bits, c.codes, got, c.want)
		}
		back := make([]uint8, len(c.codes))
		Unpack(back, got, c.bits, 0)
		if !slices.Equal(back, c.codes) {
			t.Errorf("%d-bit Unpack = %v, want %v", c.bits, back, c.codes)
		}
	}
}

// TestPackRoundTrip packs random codes of every width and unpacks random
// sub-ranges (every alignment, the byte-aligned fast paths included),
// checking against the one-bit-at-a-time reference reader.
func TestPackRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, bits := range []int{1, 2, 3, 4, 5, 6, 7, 8} {
		for _, n := range []int{1, 7, 8, 9, 63, 1000} {
			codes := make([]uint8, n)
			for i := range codes {
				codes[i] = uint8(r.IntN(1 << bits))
			}
			buf := make([]byte, PackedLen(n, bits))
			Pack(buf, codes, bits)
			for k := range n {
				if refCode(buf, bits, k) != int(codes[k]) {
					t.Fatalf("%d-bit n=%d: code %d reads %d, packed %d", bits, n, k, refCode(buf, bits, k), codes[k])
				}
			}
			for range 20 {
				lo := r.IntN(n)
				hi := lo + r.IntN(n-lo+1)
				got := make([]uint8, hi-lo)
				Unpack(got, buf, bits, lo)
				if !slices.Equal(got, codes[lo:hi]) {
					t.Fatalf("%d-bit Unpack [%d, %d) = %v, want %v", bits, lo, hi, got, codes[lo:hi])
				}
			}
		}
	}
}

func TestPackPanics(t *testing.T) {
	for name, fn := range map[string]func(){
		"code too large": func() { Pack(make([]byte, 1), []uint8{4}, 2) },
		"short dst":      func() { Pack(make([]byte, 1), []uint8{1, 2, 3}, 4) },
		"short src":      func() { Unpack(make([]uint8, 3), []byte{0}, 4, 0) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			fn()
		}()
	}
}

// TestNewHostileParts feeds New arrays as a corrupt bundle might: every
// mismatch is an error wrapping ErrParts (or ErrFormat), never a panic.
func TestNewHostileParts(t *testing.T) {
	good := func(f Format) Parts { return randomParts(f, 8, 12, 0, false, 1) }
	lut3 := LUTFormat(3, 0) // 3·5 codes × 3 bits = 45 bits: 6 bytes, 3 padding bits
	cases := []struct {
		name string
		f    Format
		out  int
		in   int
		p    func() Parts
		is   error
	}{
		{"index-short", LUT4, 8, 12, func() Parts { p := good(LUT4); p.Index = p.Index[1:]; return p }, ErrParts},
		{"index-long", LUT4, 8, 12, func() Parts { p := good(LUT4); p.Index = append(p.Index, 0); return p }, ErrParts},
		{"index-nil", LUT4, 8, 12, func() Parts { p := good(LUT4); p.Index = nil; return p }, ErrParts},
		{"lut-short", LUT4, 8, 12, func() Parts { p := good(LUT4); p.LUT = p.LUT[:15]; return p }, ErrParts},
		{"lut-nan", LUT4, 8, 12, func() Parts { p := good(LUT4); p.LUT[3] = 0x7e00; return p }, ErrParts},
		{"lut-inf", LUT4, 8, 12, func() Parts { p := good(LUT4); p.LUT[3] = 0xfc00; return p }, ErrParts},
		{"scale-short", LUT4, 8, 12, func() Parts { p := good(LUT4); p.Scale = p.Scale[:7]; return p }, ErrParts},
		{"scale-nan", LUT4, 8, 12, func() Parts { p := good(LUT4); p.Scale[0] = 0x7c01; return p }, ErrParts},
		{"weight-on-lut", LUT4, 8, 12, func() Parts { p := good(LUT4); p.Weight = make([]uint16, 96); return p }, ErrParts},
		{"padding-bits", lut3, 3, 5, func() Parts {
			p := randomParts(lut3, 3, 5, 0, false, 1)
			p.Index[len(p.Index)-1] |= 0x80
			return p
		}, ErrParts},
		{"int8-minus-128", INT8, 8, 12, func() Parts { p := good(INT8); p.Index[17] = 0x80; return p }, ErrParts},
		{"int8-with-lut", INT8, 8, 12, func() Parts { p := good(INT8); p.LUT = make([]uint16, 1); return p }, ErrParts},
		{"vector-lut-size", Vec2x16, 8, 12, func() Parts { p := good(Vec2x16); p.LUT = p.LUT[:16]; return p }, ErrParts},
		{"bf16-short", BFloat16, 8, 12, func() Parts { p := good(BFloat16); p.Weight = p.Weight[:95]; return p }, ErrParts},
		{"bf16-with-scale", BFloat16, 8, 12, func() Parts { p := good(BFloat16); p.Scale = make([]uint16, 8); return p }, ErrParts},
		{"lowrank-a-only", LUT4, 8, 12, func() Parts { p := good(LUT4); p.LowRankA = make([]uint16, 16); return p }, ErrParts},
		{"lowrank-b-wrong", LUT4, 8, 12, func() Parts {
			p := good(LUT4)
			p.LowRankA, p.LowRankB = make([]uint16, 16), make([]uint16, 23)
			return p
		}, ErrParts},
		{"lowrank-a-ragged", LUT4, 8, 12, func() Parts {
			p := good(LUT4)
			p.LowRankA, p.LowRankB = make([]uint16, 17), make([]uint16, 24)
			return p
		}, ErrParts},
		{"lowrank-nan", LUT4, 8, 12, func() Parts {
			p := good(LUT4)
			p.LowRankA, p.LowRankB = make([]uint16, 16), make([]uint16, 24)
			p.LowRankB[5] = 0x7c00
			return p
		}, ErrParts},
		{"vector-rows", Vec2x16, 7, 12, func() Parts { return good(LUT4) }, ErrFormat},
		{"zero-format", Format{}, 8, 12, func() Parts { return good(LUT4) }, ErrFormat},
		{"empty", LUT4, 0, 12, func() Parts { return Parts{} }, ErrFormat},
	}
	for _, c := range cases {
		m, err := New(c.f, c.out, c.in, c.p())
		if m != nil || !errors.Is(err, c.is) || !strings.HasPrefix(err.Error(), "lut: ") {
			t.Errorf("%s: New = %v, %v; want nil and an error wrapping %v", c.name, m, err, c.is)
		}
	}
}

// TestDequantizeExact: Dequantize equals the reference dequantization
// (refWeights, float64 products of fp16 values) exactly for every format,
// i.e. each Ŵ[o,j] is exactly s[o]·L[code] — no rounding. Low-rank factors
// are added in float64 and rounded once.
func TestDequantizeExact(t *testing.T) {
	for i, name := range testFormats {
		f := mustFormat(t, name)
		for _, r := range []int{0, 2} {
			out := 12 / max(f.Dim, 1) * max(f.Dim, 1)
			m := randomMatrix(t, f, out, 20, r, false, uint64(i))
			got := tensor.New(out, 20)
			m.Dequantize(got)
			for k, w := range refWeights(m) {
				if got.Data[k] != float32(w) || (r == 0 && float64(got.Data[k]) != w) {
					t.Fatalf("%s r=%d: Ŵ[%d] = %v, want %v", name, r, k, got.Data[k], w)
				}
			}
		}
	}
}

// TestAccessors: Parts returns the stored arrays themselves, the byte
// accounting equals their sizes, Codes unpacks the index matrix.
func TestAccessors(t *testing.T) {
	for i, name := range testFormats {
		f := mustFormat(t, name)
		out := 12 / max(f.Dim, 1) * max(f.Dim, 1)
		p := randomParts(f, out, 20, 3, true, uint64(i))
		m, err := New(f, out, 20, p)
		if err != nil {
			t.Fatal(err)
		}
		q := m.Parts()
		if len(q.Scale) != len(p.Scale) || (len(p.Scale) > 0 && &q.Scale[0] != &p.Scale[0]) || len(q.Index) != len(p.Index) || (len(p.Index) > 0 && &q.Index[0] != &p.Index[0]) {
			t.Errorf("%s: Parts does not alias the stored arrays", name)
		}
		stored := int64(len(p.Index)) + 2*int64(len(p.LUT)+len(p.Scale)+len(p.Weight)+len(p.LowRankA)+len(p.LowRankB))
		if m.Bytes() != stored || m.Size().Total() != stored {
			t.Errorf("%s: Bytes %d, Size %+v, stored arrays %d", name, m.Bytes(), m.Size(), stored)
		}
		if o, n := m.Dims(); o != out || n != 20 || m.Rank() != 3 || m.Format() != f {
			t.Errorf("%s: Dims %d×%d rank %d format %v", name, o, n, m.Rank(), m.Format())
		}
		if !strings.Contains(m.String(), f.String()) {
			t.Errorf("%s: String %q", name, m)
		}
		if f.Quantized() {
			codes := make([]uint8, f.IndexRows(out)*20)
			m.Codes(codes)
			for k, c := range codes {
				if int(c) != refCode(p.Index, f.Bits, k) {
					t.Fatalf("%s: Codes[%d] = %d, want %d", name, k, c, refCode(p.Index, f.Bits, k))
				}
			}
		}
	}
}

// FuzzNew feeds New arrays of fuzzed lengths and contents: it must return
// a Matrix or an error, never panic, and a Matrix it returns must multiply.
func FuzzNew(f *testing.F) {
	f.Add(uint8(3), uint8(4), uint8(9), []byte{1, 2, 3}, uint16(16), uint16(4), uint8(0))
	f.Add(uint8(9), uint8(8), uint8(16), make([]byte, 64), uint16(32), uint16(8), uint8(0))
	f.Fuzz(func(t *testing.T, fi, out, in uint8, idx []byte, nlut, nscale uint16, r uint8) {
		fm := mustFormat(t, testFormats[int(fi)%len(testFormats)])
		p := Parts{Index: idx, LUT: make([]uint16, int(nlut)%600), Scale: make([]uint16, int(nscale)%300)}
		for i := range p.LUT {
			p.LUT[i] = uint16(i * 7919)
		}
		for i := range p.Scale {
			p.Scale[i] = 0x3c00
		}
		if !fm.Quantized() {
			p = Parts{Weight: make([]uint16, int(nscale)%300)}
		}
		if r%4 > 0 {
			p.LowRankA, p.LowRankB = make([]uint16, int(out)*int(r%4)), make([]uint16, int(in)*int(r%4))
		}
		m, err := New(fm, int(out)%40, int(in)%40, p)
		if err != nil {
			return
		}
		o, n := m.Dims()
		m.Mul(tensor.New(2, o), tensor.New(2, n))
	})
}
