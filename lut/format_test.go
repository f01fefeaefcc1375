package lut

import (
	"errors"
	"strings"
	"testing"
)

func TestParseFormat(t *testing.T) {
	cases := []struct {
		in, canon string
		want      Format
	}{
		{"LUT4 per-tensor + pcs", "LUT4 per-tensor + pcs", LUT4},
		{"lut4 PER-TENSOR +PCS", "LUT4 per-tensor + pcs", LUT4},
		{"  LUT4   per-tensor+pcs ", "LUT4 per-tensor + pcs", LUT4},
		{"LUT4 + pcs", "LUT4 per-tensor + pcs", LUT4},
		{"LUT1 per-tensor + pcs", "LUT1 per-tensor + pcs", LUTFormat(1, 0)},
		{"LUT3 per-tensor + pcs", "LUT3 per-tensor + pcs", LUTFormat(3, 0)},
		{"LUT6 per-tensor + pcs", "LUT6 per-tensor + pcs", LUTFormat(6, 0)},
		{"LUT8 per-tensor + pcs", "LUT8 per-tensor + pcs", LUTFormat(8, 0)},
		{"LUT4 g128 + pcs", "LUT4 g128 + pcs", LUTFormat(4, 128)},
		{"LUT4 per-group-8 + pcs", "LUT4 g8 + pcs", LUTFormat(4, 8)},
		{"vector 2x16 + pcs", "vector 2x16 + pcs", Vec2x16},
		{"Vector 2X16 + PCS", "vector 2x16 + pcs", Vec2x16},
		{"vector 2x64 + pcs", "vector 2x64 + pcs", VectorFormat(2, 64)},
		{"vector 4x4 g64 + pcs", "vector 4x4 g64 + pcs", Format{Kind: Vector, Bits: 2, Dim: 4, Group: 64}},
		{"vector 2x16 per-tensor + pcs", "vector 2x16 + pcs", Vec2x16},
		{"INT8 per-channel", "INT8 per-channel", INT8},
		{"int8", "INT8 per-channel", INT8},
		{"bf16", "bf16", BFloat16},
		{"FP16", "fp16", Float16},
	}
	for _, c := range cases {
		f, err := ParseFormat(c.in)
		if err != nil {
			t.Errorf("ParseFormat(%q): %v", c.in, err)
			continue
		}
		if f != c.want || f.String() != c.canon {
			t.Errorf("ParseFormat(%q) = %+v %q, want %+v %q", c.in, f, f, c.want, c.canon)
		}
		if g, err := ParseFormat(f.String()); err != nil || g != f {
			t.Errorf("canonical %q does not parse back: %+v, %v", f, g, err)
		}
	}
}

// TestParseFormatHostile: every malformed name is an error wrapping
// ErrFormat whose message quotes the input and says what is wrong.
func TestParseFormatHostile(t *testing.T) {
	cases := []struct{ in, says string }{
		{"", "empty"},
		{"   ", "empty"},
		{"LUT7 per-tensor + pcs", "7-bit"},
		{"LUT5 + pcs", "5-bit"},
		{"LUT0 + pcs", "0-bit"},
		{"LUT16 + pcs", "16-bit"},
		{"LUT + pcs", "not a number"},
		{"LUT-4 + pcs", "not a number"},
		{"LUT4x + pcs", "not a number"},
		{"LUT99999999999999999999 + pcs", "not a number"},
		{"LUT4 per-tensor", "+ pcs"},
		{"LUT4", "+ pcs"},
		{"LUT4 g0 + pcs", "group size 0"},
		{"LUT4 g + pcs", "not a number"},
		{"LUT4 g-3 + pcs", "not a number"},
		{"LUT4 per-channel + pcs", "unexpected"},
		{"LUT4 per-tensor per-tensor + pcs", "unexpected"},
		{"LUT4 per-tensor + pcs + pcs", "unexpected"},
		{"vector 2x17 + pcs", "power of two"},
		{"vector 2x128 + pcs", "7-bit"},
		{"vector 2x1 + pcs", "0-bit"},
		{"vector 0x16 + pcs", "vector length 0"},
		{"vector 300x16 + pcs", "vector length 300"},
		{"vector 2x16 g3 + pcs", "multiple of the vector length"},
		{"vector 2-16 + pcs", "not <d>x<K>"},
		{"vector + pcs", "<d>x<K>"},
		{"vector", "<d>x<K>"},
		{"vector 2xx16 + pcs", "not a number"},
		{"INT8 per-tensor", "INT8 per-channel"},
		{"INT8 per-channel + pcs", "INT8 per-channel"},
		{"INT4 per-channel", "unknown format"},
		{"bf16 + pcs", "no options"},
		{"bf16 g128", "no options"},
		{"fp32", "unknown format"},
		{"q4_K_M", "unknown format"},
		{"LUT4\x00 + pcs", "not a number"},
		{"ＬＵＴ4 + pcs", "unknown format"},
	}
	for _, c := range cases {
		f, err := ParseFormat(c.in)
		if err == nil {
			t.Errorf("ParseFormat(%q) = %v, want an error", c.in, f)
			continue
		}
		if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), c.says) || !strings.Contains(err.Error(), "lut: format") {
			t.Errorf("ParseFormat(%q): error %q, want ErrFormat saying %q", c.in, err, c.says)
		}
	}
}

func TestCheckShape(t *testing.T) {
	cases := []struct {
		f       Format
		out, in int
		says    string
	}{
		{VectorFormat(3, 16), 4096, 64, "not divisible by the vector length 3"},
		{Vec2x16, 7, 8, "not divisible"},
		{LUT4, 0, 8, "empty shape"},
		{LUT4, 8, 0, "empty shape"},
		{LUT4, -1, 8, "empty shape"},
		{Format{}, 4, 4, "unknown kind"},
		{Format{Kind: Scalar, Bits: 4, Dim: 2}, 4, 4, "vector length 1"},
		{Format{Kind: Int8, Bits: 4, Dim: 1}, 4, 4, "INT8"},
		{LUT4, 1 << 24, 1 << 24, "too large"},
	}
	for _, c := range cases {
		err := c.f.CheckShape(c.out, c.in)
		if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%+v at %dx%d: %v, want %q", c.f, c.out, c.in, err, c.says)
		}
	}
	if err := VectorFormat(3, 16).CheckShape(4095, 64); err != nil {
		t.Errorf("vector 3x16 at 4095 rows: %v", err)
	}
	if s := (Format{}).String(); !strings.HasPrefix(s, "invalid") {
		t.Errorf("zero Format String = %q", s)
	}
}

// TestSize checks the byte accounting formulas, in particular the exact
// docs/quantization.md §1 formula for vector 2x16 + pcs: out·in/4 + 64 + 2·out.
func TestSize(t *testing.T) {
	for _, s := range [][2]int{{4096, 4096}, {17408, 5120}, {2, 2}, {6, 10}, {248320, 5120}} {
		out, in := s[0], s[1]
		got := Vec2x16.Size(out, in, 0).Total()
		if want := int64(out)*int64(in)/4 + 64 + 2*int64(out); got != want {
			t.Errorf("vector 2x16 + pcs %dx%d: %d bytes, want out·in/4 + 64 + 2·out = %d", out, in, got, want)
		}
	}
	cases := []struct {
		f              Format
		out, in, r     int
		index, lut, sc int64
		lowRank        int64
	}{
		{LUT4, 8, 16, 0, 64, 32, 16, 0},
		{LUTFormat(3, 0), 3, 5, 0, 6, 16, 6, 0},        // 15 codes × 3 bits = 45 bits → 6 bytes
		{LUTFormat(4, 3), 8, 16, 0, 64, 3 * 32, 16, 0}, // ⌈8/3⌉ = 3 codebooks
		{LUTFormat(6, 0), 4, 4, 0, 12, 128, 8, 0},
		{VectorFormat(2, 64), 4, 8, 0, 12, 256, 8, 0},
		{INT8, 4, 8, 0, 32, 0, 8, 0},
		{BFloat16, 4, 8, 2, 64, 0, 0, 2 * 2 * 12},
	}
	for _, c := range cases {
		s := c.f.Size(c.out, c.in, c.r)
		if s.Index != c.index || s.LUT != c.lut || s.Scale != c.sc || s.LowRank != c.lowRank {
			t.Errorf("%s %dx%d r=%d: %+v, want index %d lut %d scale %d low-rank %d", c.f, c.out, c.in, c.r, s, c.index, c.lut, c.sc, c.lowRank)
		}
	}
	if bpw := Vec2x16.BitsPerWeight(4096, 4096, 0); bpw < 2 || bpw > 2.01 {
		t.Errorf("vector 2x16 bpw = %v, want just over 2", bpw)
	}
}

func TestPlace(t *testing.T) {
	cases := []struct {
		f       string
		out, in int
		where   Where
		says    string
		convs   int
	}{
		{"LUT4 per-tensor + pcs", 5120, 5120, OnANE, "", 1},
		{"LUT4 per-tensor + pcs", 248320, 5120, OnANE, "as 16 convs of ≤16384 channels", 16},
		{"LUT4 g128 + pcs", 17408, 5120, OnANE, "~20% more time", 2},
		{"LUT4 g7 + pcs", 768, 256, OnCPU, "768 rows are not a multiple of 7", 0},
		{"LUT3 per-tensor + pcs", 64, 64, OnANE, "3-bit indices are read like 4-bit", 1},
		{"LUT6 per-tensor + pcs", 64, 64, OnANE, "6-bit indices are read like 8-bit", 1},
		{"vector 2x16 + pcs", 17408, 5120, OnANE, "", 2},
		{"vector 2x64 + pcs", 64, 64, OnANE, "", 1},
		{"vector 2x256 + pcs", 64, 64, Inexpressible, "512 values exceeds 256", 0},
		{"vector 4x64 + pcs", 64, 64, OnANE, "", 1},
		{"vector 8x64 + pcs", 64, 64, Inexpressible, "exceeds 256", 0},
		{"vector 32x4 + pcs", 64, 64, Inexpressible, "vector length 32 > 16", 0},
		{"vector 2x16 g128 + pcs", 4096, 4096, OnCPU, "per-group vector LUTs", 0},
		{"vector 2x16 g4096 + pcs", 4096, 4096, OnANE, "", 1},
		{"vector 3x16 + pcs", 4096, 64, Inexpressible, "not divisible", 0},
		{"INT8 per-channel", 1024, 5120, OnANE, "", 1},
		{"bf16", 1024, 5120, OnANE, "run as fp16", 1},
	}
	for _, c := range cases {
		p := Place(mustFormat(t, c.f), c.out, c.in)
		s := p.String()
		if p.Where != c.where || !strings.Contains(s, c.says) || (c.where == OnANE && p.Convs != c.convs) {
			t.Errorf("Place(%s, %dx%d) = %+v %q, want %v saying %q, %d convs", c.f, c.out, c.in, p, s, c.where, c.says, c.convs)
		}
	}
	// A split never cuts a vector: 3-row vectors split at 16383 rows.
	if p := Place(VectorFormat(3, 16), 3*10000, 64); p.Convs != 2 || p.ConvOut != 16383 {
		t.Errorf("vector 3x16 30000 rows: %+v", p)
	}
}

// FuzzParseFormat: no input panics; whatever parses is valid, and its
// canonical spelling parses back to the same format.
func FuzzParseFormat(f *testing.F) {
	for _, s := range []string{"LUT4 per-tensor + pcs", "vector 2x16 + pcs", "LUT4 g128 + pcs", "INT8 per-channel", "bf16", "vector 3x16 g6 + pcs", "LUT7"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fm, err := ParseFormat(s)
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("ParseFormat(%q): error %v does not wrap ErrFormat", s, err)
			}
			return
		}
		if fm.Check() != nil {
			t.Fatalf("ParseFormat(%q) = invalid %+v", s, fm)
		}
		if back, err := ParseFormat(fm.String()); err != nil || back != fm {
			t.Fatalf("ParseFormat(%q) = %+v; canonical %q parses to %+v, %v", s, fm, fm, back, err)
		}
	})
}
