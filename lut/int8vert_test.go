package lut

import (
	"fmt"
	"math"
	"testing"

	"forge/tensor"
)

// TestVertTiles checks the transposed codes against the layout of
// int8vert.go, index by index: strip i's tile (b, k, s), lane r holds
// bytes 4k…4k+3 of step 4b+s of index row 16i+r; rows past the last
// whole strip get no tiles. Parts.Evict is offered the packed rows once,
// when the last unit is made, and not where the kernels read a padded
// copy (192 columns). It runs on any host (the tiles are plain Go).
func TestVertTiles(t *testing.T) {
	saved := int8Vert
	int8Vert = true
	defer func() { int8Vert = saved }()
	f := mustFormat(t, "LUT4 per-tensor + pcs")
	for _, sh := range [][2]int{{16, 128}, {40, 192}, {32, 640}, {48, 1152}, {96, 256}} {
		out, in := sh[0], sh[1]
		p := randomParts(f, out, in, 0, false, uint64(out+in))
		var evicted [][]byte
		p.Evict = func(b []byte) { evicted = append(evicted, b) }
		m, err := New(f, out, in, p)
		if err != nil {
			t.Fatal(err)
		}
		if m.vert == nil {
			t.Fatalf("%dx%d: not in the tile order", out, in)
		}
		idx, n := m.codes8()
		m.tiles(0, 32) // the first unit (two strips) alone
		if len(evicted) != 0 && out > 32 {
			t.Fatalf("%dx%d: evicted before every unit was made", out, in)
		}
		w := m.tiles(0, out)
		m.tiles(0, out)
		switch {
		case in%int8Step != 0 && len(evicted) != 0:
			t.Fatalf("%dx%d: the packed rows were evicted, though the kernels read a padded copy", out, in)
		case in%int8Step == 0 && (len(evicted) != 1 || &evicted[0][0] != &p.Index[0] || len(evicted[0]) != len(p.Index)):
			t.Fatalf("%dx%d: Evict called %d times, want once with the packed rows", out, in, len(evicted))
		}
		steps := n / 64
		if len(w) != out/vertRows*vertRows*n {
			t.Fatalf("%dx%d: %d bytes of tiles, want %d", out, in, len(w), out/vertRows*vertRows*n)
		}
		pos := 0
		for i := range out / vertRows {
			for b := 0; b*int8Steps < steps; b++ {
				S := min(int8Steps, steps-b*int8Steps)
				for k := range 16 {
					for s := range S {
						for r := range vertRows {
							for j := range 4 {
								if got, want := w[pos], idx[(16*i+r)*n+(4*b+s)*64+4*k+j]; got != want {
									t.Fatalf("%dx%d: strip %d tile (%d,%d,%d) lane %d byte %d = %#x, want %#x", out, in, i, b, k, s, r, j, got, want)
								}
								pos++
							}
						}
					}
				}
			}
		}
	}
}

// TestInt8VertKernels compares the tile kernels (T = 1…8 rows at once,
// and 11 rows: a chunk of eight and one of three; 2x16 four rows a call)
// with the twin, int8VertRowGo, bit for bit: widths whose last block is
// short (192: two steps; 640: five) or long (4224), codebooks per tensor
// and per 16 or 32 rows (2x16: 32 outputs, 16 index rows), and output
// counts that leave rows past the last strip (40, 72) or a codebook run
// that ends inside a kernel call's range. Without the kernels (no AVX-512
// VNNI) it compares the twin with itself.
func TestInt8VertKernels(t *testing.T) {
	saved := int8Vert
	int8Vert = true
	defer func() { int8Vert = saved }()
	for _, name := range []string{"LUT4 per-tensor + pcs", "LUT4 g16 + pcs", "LUT4 g32 + pcs", "vector 2x16 + pcs", "vector 2x16 g32 + pcs"} {
		f := mustFormat(t, name)
		for _, sh := range [][2]int{{16, 128}, {40, 192}, {64, 640}, {72, 1152}, {32, 4224}} {
			out, in := sh[0], sh[1]
			m := randomMatrix(t, f, out, in, 0, false, uint64(3*out+in))
			if m.vert == nil {
				t.Fatalf("%s %dx%d: not in the tile order", name, out, in)
			}
			for _, T := range []int{1, 2, 3, 4, 5, 6, 7, 8, 11} {
				x := int8X(T, in, uint64(T+in))
				var q Int8Input
				m.QuantizeInput(&q, x)
				want := tensor.New(T, out)
				d := f.Dim
				for tt := range T {
					for o := range out {
						want.Row(tt)[o] = int8VertRowGo(m.table8(o/d, o%d), m.codesRow(o/d), q.q[tt*len(q.q)/T:][:len(q.q)/T], q.d[tt*len(q.d)/T:][:len(q.d)/T])
					}
					m.int8Scale(want.Row(tt), q.k[tt], 0, out/d)
				}
				got := tensor.New(T, out)
				m.MulRowsInt8(got, &q, 0, out)
				where := fmt.Sprintf("%s %dx%d T=%d", name, out, in, T)
				for i := range got.Data {
					if math.Float32bits(got.Data[i]) != math.Float32bits(want.Data[i]) {
						t.Fatalf("%s: row %d output %d = %v, twin %v", where, i/out, i%out, got.Data[i], want.Data[i])
					}
				}
				if int8Ready && useFast && m.vert.done.Load() != int64(len(m.vert.units)) {
					t.Fatalf("%s: the tile kernels did not run", where)
				}
			}
		}
	}
}

// codesRow returns the index row r as the int8 kernels read it.
func (m *Matrix) codesRow(r int) []byte {
	idx, n := m.codes8()
	return idx[r*n : (r+1)*n]
}

// TestInt8VertOrder: the tile order's sum is the row-major one's up to
// float32 rounding (both are Σ d·S over the same exact integer sums) and,
// on these rows, not the same bits everywhere, so a matrix that mixed the
// two orders between its kernels would fail the bit-for-bit tests.
func TestInt8VertOrder(t *testing.T) {
	m := randomMatrix(t, mustFormat(t, "LUT4 per-tensor + pcs"), 64, 4224, 0, false, 9)
	x := int8X(4, 4224, 10)
	var q Int8Input
	m.QuantizeInput(&q, x)
	differ := 0
	steps, nb := len(q.q)/4, len(q.d)/4
	for tt := range 4 {
		qx, dx := q.q[tt*steps:][:steps], q.d[tt*nb:][:nb]
		for r := range 64 {
			a := int8VertRowGo(m.table8(r, 0), m.codesRow(r), qx, dx)
			b := int8RowGo(m.table8(r, 0), m.codesRow(r), qx, dx)
			// Both orders sum the same n = 16·blocks terms d·S, each
			// product rounded once and each partial sum once (at most
			// n + 15 roundings, the row-major order's lanes then its
			// sum16), so each is within (2n + 15)·u·Σ|d·S| of the exact
			// sum (u = 2⁻²⁴), and they are within twice that of each
			// other. Σ|d·S| is computed here in float64 from the exact
			// integer sums.
			abs := 0.0
			for bb := 0; 16*bb < nb; bb++ {
				for k := range 16 {
					s := int64(0)
					for st := int8Steps * bb; st < min(int8Steps*(bb+1), steps/int8Step); st++ {
						w, xs := m.codesRow(r)[st*64+4*k:][:4], qx[st*int8Step+4*k:]
						tab := m.table8(r, 0)
						for j, c := range w {
							s += int64(tab[c&15])*int64(xs[j]) + int64(tab[c>>4])*int64(xs[64+j])
						}
					}
					abs += math.Abs(float64(s) * float64(dx[16*bb+k]))
				}
			}
			bound := 2 * float64(2*nb+15) * abs / (1 << 24)
			if e := math.Abs(float64(a) - float64(b)); e > bound {
				t.Fatalf("row %d index row %d: tile order %v, row-major %v: |Δ| %g > %g", tt, r, a, b, e, bound)
			}
			if a != b {
				differ++
			}
		}
	}
	if differ == 0 {
		t.Fatal("the two orders gave the same bits on every row")
	}
	t.Logf("%d of 256 sums differ in their last bits", differ)
}

// TestVertStripFast compares the gathering transposition (vertStrip16)
// with vertStrip byte for byte, for blocks of four steps and a short last
// one (1, 2, 5, 9 and 54 steps).
func TestVertStripFast(t *testing.T) {
	for _, steps := range []int{1, 2, 5, 9, 54} {
		n := 64 * steps
		rows := make([]byte, vertRows*n)
		for i := range rows {
			rows[i] = byte(i*131 + i/7)
		}
		want, got := make([]byte, len(rows)), make([]byte, len(rows))
		vertStrip(want, rows, n)
		if !vertStripFast(got, rows, n) {
			if int8Ready {
				t.Fatal("vertStrip16 did not run")
			}
			t.Logf("no AVX-512 VNNI: nothing to compare")
			return
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%d steps: byte %d = %#x, want %#x", steps, i, got[i], want[i])
			}
		}
	}
}
