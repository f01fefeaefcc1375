//go:build goexperiment.simd && amd64

package lut

import (
	"math"
	"testing"
	"unsafe"

	"forge/tensor"
)

// TestLUT4Groups checks that a T = 1 product of a 4-bit scalar LUT with
// whole-block rows (one lut4Groups call per run of eight-row groups)
// gives bit for bit the sums of the eight-row kernel lut4Rows8, scaled as
// mulJob.store scales them: per tensor, with codebook groups of 16 rows
// and of 12 (groups of eight straddle them and take decodedRows, and
// only the rows lut4Groups ran are compared), with leftover rows.
func TestLUT4Groups(t *testing.T) {
	if !fastReady {
		t.Skip("no AVX-512: the fast kernels do not run")
	}
	for i, c := range []struct {
		format  string
		out, in int
	}{
		{"LUT4 per-tensor + pcs", 4160, 256},
		{"LUT4 per-tensor + pcs", 44, 768},
		{"LUT4 g16 + pcs", 64, 96},
		{"LUT4 g12 + pcs", 48, 64},
	} {
		f := mustFormat(t, c.format)
		m := randomMatrix(t, f, c.out, c.in, 0, false, uint64(i))
		x := randomX(1, c.in, uint64(i+50))
		got := tensor.New(1, c.out)
		m.Mul(got, x)

		j := &mulJob{m: m, x: x, dst: tensor.New(1, c.out)}
		j.prepare()
		g := j.geom()
		compared := 0
		for r := 0; r+8 <= c.out; r += 8 {
			if m.rowsG > 0 && r/m.rowsG != (r+7)/m.rowsG {
				continue // straddles two codebooks: decodedRows, not lut4Groups
			}
			var s [8]float32
			w := unsafe.Pointer(&m.p.Index[r*g.n])
			lut4Rows8(j.tab16(r, 0), w, g.n, g.nb, j.xptr(0, 0), uintptr(w)+uintptr(8*g.n), &s)
			for k, v := range s {
				want := m.scale[r+k] * v
				if math.Float32bits(got.Data[r+k]) != math.Float32bits(want) {
					t.Fatalf("%s %dx%d: row %d = %g, want %g (lut4Rows8)", c.format, c.out, c.in, r+k, got.Data[r+k], want)
				}
				compared++
			}
		}
		if compared == 0 {
			t.Fatalf("%s %dx%d: no row compared", c.format, c.out, c.in)
		}
	}
}
