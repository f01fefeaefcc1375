package lut

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"forge/tensor"
)

// mulShapes exercise the fast kernels' whole blocks, partial last blocks,
// the 4-row and 2-row groupings and their leftovers, odd widths that leave
// index rows unaligned (portable kernel), pool splitting and T tiles.
var mulShapes = []struct {
	name       string
	out, in, T int
}{
	{"1x8", 4, 8, 1},
	{"tail", 12, 40, 1},
	{"blocks", 16, 256, 1},
	{"blocks-T3", 16, 256, 3},
	{"leftover-rows", 18, 136, 1},
	{"leftover-rows-T5", 18, 136, 5},
	{"odd-in", 6, 33, 2},
	{"pool", 96, 1040, 1},
	{"pool-T8", 96, 1040, 8},
	{"T-tiles", 8, 2048, 70},
}

func TestMulFormats(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		for i, name := range testFormats {
			f := mustFormat(t, name)
			for _, c := range mulShapes {
				out := c.out / max(f.Dim, 1) * max(f.Dim, 1)
				if out == 0 || (f.Kind == Vector && out%f.Dim != 0) {
					continue
				}
				m := randomMatrix(t, f, out, c.in, 0, false, uint64(i))
				checkMul(t, m, randomX(c.T, c.in, uint64(i+100)))
			}
		}
	})
}

// TestMulRotationLowRank checks the hooks: x is rotated before the
// product and A·(B·x') is added.
func TestMulRotationLowRank(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		for i, name := range []string{"LUT4 per-tensor + pcs", "vector 2x16 + pcs", "INT8 per-channel", "bf16", "LUT3 g4 + pcs"} {
			f := mustFormat(t, name)
			for _, T := range []int{1, 4} {
				m := randomMatrix(t, f, 24, 80, 3, true, uint64(i))
				checkMul(t, m, randomX(T, 80, uint64(i+7)))
			}
		}
	})
}

// TestMulTiled covers the T > 1 register kernels (tiledRows) and their
// leftovers: x tiles of eight and four rows and left-over rows (T = 4, 5,
// 9, 16, 64), row groups that split pairs and pool blocks (g128 and g5
// with out not a multiple of 8 or 16), several column chunks with a
// partial last block (in not a multiple of 32) and tiny inputs.
func TestMulTiled(t *testing.T) {
	formats := []string{"LUT4 per-tensor + pcs", "LUT4 g128 + pcs", "LUT4 g5 + pcs", "vector 2x16 + pcs", "vector 2x16 g128 + pcs", "INT8 per-channel"}
	shapes := [][2]int{{150, 1000}, {34, 1030}, {6, 8}}
	forEachPath(t, func(t *testing.T) {
		for i, name := range formats {
			f := mustFormat(t, name)
			for _, s := range shapes {
				m := randomMatrix(t, f, s[0], s[1], 0, false, uint64(i))
				for _, T := range []int{4, 5, 9, 16, 64} {
					checkMul(t, m, randomX(T, s[1], uint64(T)))
				}
			}
		}
	})
}

func TestMulRandomShapes(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	forEachPath(t, func(t *testing.T) {
		for i := range 80 {
			f := mustFormat(t, testFormats[i%len(testFormats)])
			d := max(f.Dim, 1)
			out, in, T := d*(1+r.IntN(40)), 1+r.IntN(300), 1+r.IntN(10)
			m := randomMatrix(t, f, out, in, r.IntN(2)*(1+r.IntN(3)), r.IntN(3) == 0, uint64(i))
			checkMul(t, m, randomX(T, in, uint64(i)))
		}
	})
}

// FuzzMul compares Mul (fast and portable kernels) with its reference twin
// for every format at fuzzed shapes, ranks and rotations.
func FuzzMul(f *testing.F) {
	f.Add(uint64(1), uint8(3), uint16(16), uint16(64), uint8(1), uint8(0))
	f.Add(uint64(2), uint8(9), uint16(34), uint16(130), uint8(3), uint8(5))
	f.Add(uint64(3), uint8(17), uint16(7), uint16(19), uint8(9), uint8(2))
	f.Fuzz(func(t *testing.T, seed uint64, fi uint8, out, in uint16, T, extra uint8) {
		fm := mustFormat(t, testFormats[int(fi)%len(testFormats)])
		d := max(fm.Dim, 1)
		o, n := d*(1+int(out)%48), 1+int(in)%400
		m := randomMatrix(t, fm, o, n, int(extra%4), extra&4 != 0, seed)
		x := randomX(int(T)%12, n, seed+1)
		saved := useFast
		defer func() { useFast = saved }()
		for _, fast := range []bool{false, true} {
			useFast = fast
			checkMul(t, m, x)
		}
	})
}

func TestMulPanicsOnShape(t *testing.T) {
	m := randomMatrix(t, LUT4, 4, 8, 0, false, 1)
	x := tensor.New(2, 8)
	for name, dst := range map[string]*tensor.Matrix{"rows": tensor.New(3, 4), "cols": tensor.New(2, 5)} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s mismatch: no panic", name)
				}
			}()
			m.Mul(dst, x)
		}()
	}
}

// TestMulNoAlloc checks that decode- and verify-sized calls, split over
// the pool, allocate nothing (after warm-up), rotation and factors included.
func TestMulNoAlloc(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items under the race detector")
	}
	forEachPath(t, func(t *testing.T) {
		for _, name := range []string{"LUT4 per-tensor + pcs", "vector 2x16 + pcs", "INT8 per-channel", "LUT2 g64 + pcs", "LUT3 per-tensor + pcs", "bf16"} {
			for _, T := range []int{1, 8} {
				for _, r := range []int{0, 4} {
					m := randomMatrix(t, mustFormat(t, name), 512, 1024, r, r > 0, 1)
					x, dst := randomX(T, 1024, 2), tensor.New(T, 512)
					m.Mul(dst, x)
					if a := testing.AllocsPerRun(20, func() { m.Mul(dst, x) }); a != 0 {
						t.Errorf("%s T=%d r=%d: Mul allocates %v times per call", name, T, r, a)
					}
				}
			}
		}
	})
}

// TestMulConcurrent runs one Matrix from several goroutines at once and
// checks that every result is identical.
func TestMulConcurrent(t *testing.T) {
	m := randomMatrix(t, Vec2x16, 130, 200, 2, true, 3)
	x := randomX(5, 200, 4)
	want := tensor.New(5, 130)
	m.Mul(want, x)
	done := make(chan error)
	for g := range 4 {
		go func() {
			dst := tensor.New(5, 130)
			for range 20 {
				m.Mul(dst, x)
				for i := range dst.Data {
					if dst.Data[i] != want.Data[i] {
						done <- fmt.Errorf("goroutine %d: dst[%d] = %v, want %v", g, i, dst.Data[i], want.Data[i])
						return
					}
				}
			}
			done <- nil
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// TestMulRows: MulRows over splits at multiples of 32 outputs gives Mul's
// result bit for bit for every format (rotation and low rank included;
// T = 1, 3 and 9; a vector length that does not divide 32 rounds the
// splits down), a range of two index rows gives Mul's values and touches
// no other column, and a range past W panics.
func TestMulRows(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		for i, name := range testFormats {
			f := mustFormat(t, name)
			d := max(f.Dim, 1)
			out := 150 / d * d
			for _, T := range []int{1, 3, 9} {
				m := randomMatrix(t, f, out, 96, 4*(i%2), i%3 == 0, uint64(i))
				x := randomX(T, 96, uint64(i+T))
				want := tensor.New(T, out)
				m.Mul(want, x)
				got := tensor.New(T, out)
				for lo, size := 0, 32; lo < out; lo, size = lo+size, size+32 {
					m.MulRows(got, x, lo, min(lo+size, out))
				}
				for k, w := range want.Data {
					if math.Float32bits(got.Data[k]) != math.Float32bits(w) {
						t.Fatalf("%s T=%d: MulRows [%d][%d] = %v, Mul %v", m, T, k/out, k%out, got.Data[k], w)
					}
				}
				for k := range got.Data {
					got.Data[k] = float32(math.NaN())
				}
				lo, hi := 2*d, 4*d
				m.MulRows(got, x, lo, hi)
				for k, v := range got.Data {
					if o := k % out; (o < lo || o >= hi) && v == v {
						t.Fatalf("%s: MulRows [%d, %d) wrote column %d", m, lo, hi, o)
					} else if o >= lo && o < hi && math.Float32bits(v) != math.Float32bits(want.Data[k]) &&
						!(math.Abs(float64(v-want.Data[k])) <= 1e-5*(1+math.Abs(float64(want.Data[k])))) {
						t.Fatalf("%s: MulRows [%d, %d) column %d = %v, Mul %v", m, lo, hi, o, v, want.Data[k])
					}
				}
			}
		}
	})
	m := randomMatrix(t, mustFormat(t, "vector 2x16 + pcs"), 8, 32, 0, false, 1)
	defer func() {
		if recover() == nil {
			t.Error("MulRows past the last row did not panic")
		}
	}()
	m.MulRows(tensor.New(1, 8), randomX(1, 32, 1), 4, 10)
}
