//go:build goexperiment.simd && amd64

package lut

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// tileRef is the reference twin of the T > 1 register kernels
// (tile_amd64.s), written out plainly: for each pair p < np, row k, x
// row t and lane i it adds, in float64, the products of the row's
// weights with x over blocks [0, nb) from byte off. Codes are 4-bit (two
// phases per byte, weights from the pair's tables) or, with i8, int8
// values (one phase). x holds the chunk in tile layout from its first
// vector: tiles of four rows, phase vector v of tile row r at
// 16·(4v + r). It also returns Σ|w·x| per sum, the scale of the float32
// rounding error.
func tileRef(pp []tilePair, codes [][2][]byte, i8 bool, off, nb, rows int, x [2][]float32, acc *tileAcc) (want [tileO / 2][2][tileG][16]float64, bound [tileO / 2][2][tileG][16]float64) {
	P := 2
	if i8 {
		P = 1
	}
	for p := range pp {
		tabs := [2]*[16]float32{pp[p].ta, pp[p].tb}
		for k := range 2 {
			for t := range rows {
				for i := range 16 {
					s, b := float64(acc[p][k][t][i]), 0.0
					for blk := range nb {
						c := codes[p][k][off+16*blk+i]
						for ph := range P {
							var w float64
							if i8 {
								w = float64(int8(c))
							} else {
								w = float64(tabs[k][c>>(4*ph)&15])
							}
							xv := float64(x[t/tileX][16*(tileX*(P*blk+ph)+t%tileX)+i])
							s += w * xv
							b += math.Abs(w * xv)
						}
					}
					want[p][k][t][i], bound[p][k][t][i] = s, b+math.Abs(float64(acc[p][k][t][i]))
				}
			}
		}
	}
	return want, bound
}

// TestTileKernels compares lut4Tile8, lut4Tile4, i8Tile8 and i8Tile4 with
// tileRef for every number of pairs, several chunk lengths and offsets,
// pairs with their own tables (so that a pair run with the previous
// pair's tables fails) and 2-vector pairs (wa = wb).
func TestTileKernels(t *testing.T) {
	if !fastReady {
		t.Skip("no AVX-512 on this CPU: these kernels never run here (Mul takes the portable ones)")
	}
	g := rand.New(rand.NewPCG(5, 6))
	for _, i8 := range []bool{false, true} {
		for _, rows := range []int{tileX, tileG} {
			for np := 1; np <= tileO/2; np++ {
				for _, nb := range []int{1, 2, 5} {
					off := 16 * g.IntN(3)
					n := off + 16*nb
					pp := make([]tilePair, np)
					codes := make([][2][]byte, np)
					for p := range pp {
						for k := range 2 {
							codes[p][k] = make([]byte, n)
							for i := range codes[p][k] {
								codes[p][k][i] = byte(g.IntN(256))
								if i8 && codes[p][k][i] == 0x80 {
									codes[p][k][i] = 0x81
								}
							}
						}
						if p%3 == 2 { // a 2-vector row: one code row, two tables
							codes[p][1] = codes[p][0]
						}
						var tabs [2]*[16]float32
						for k := range tabs {
							tabs[k] = new([16]float32)
							for i := range tabs[k] {
								tabs[k][i] = float32(g.NormFloat64())
							}
						}
						pp[p] = tilePair{ta: tabs[0], tb: tabs[1], wa: unsafe.Pointer(&codes[p][0][0]), wb: unsafe.Pointer(&codes[p][1][0])}
					}
					P := 2
					if i8 {
						P = 1
					}
					var x [2][]float32
					for i := range x {
						x[i] = make([]float32, 64*P*(off/16+nb))
						for j := range x[i] {
							x[i][j] = float32(g.NormFloat64())
						}
						x[i] = x[i][64*P*off/16:] // the chunk's first vector
					}
					acc := new(tileAcc)
					for p := range acc {
						for k := range acc[p] {
							for t := range acc[p][k] {
								for i := range acc[p][k][t] {
									acc[p][k][t][i] = float32(g.NormFloat64())
								}
							}
						}
					}
					want, bound := tileRef(pp, codes, i8, off, nb, rows, x, acc)
					before := *acc
					var arr [tileO / 2]tilePair
					copy(arr[:], pp)
					x0, x1 := unsafe.Pointer(&x[0][0]), unsafe.Pointer(&x[1][0])
					switch {
					case i8 && rows == tileG:
						i8Tile8(&arr, np, off, nb, x0, x1, acc)
					case i8:
						i8Tile4(&arr, np, off, nb, x0, acc)
					case rows == tileG:
						lut4Tile8(&arr, np, off, nb, x0, x1, acc)
					default:
						lut4Tile4(&arr, np, off, nb, x0, acc)
					}
					for p := range acc {
						for k := range acc[p] {
							for r := range acc[p][k] {
								for i := range acc[p][k][r] {
									got := acc[p][k][r][i]
									if p >= np || r >= rows { // untouched
										if got != before[p][k][r][i] {
											t.Fatalf("int8=%v rows=%d np=%d nb=%d: acc[%d][%d][%d][%d] changed", i8, rows, np, nb, p, k, r, i)
										}
										continue
									}
									w, tol := want[p][k][r][i], 1e-6*bound[p][k][r][i]
									if !(math.Abs(float64(got)-w) <= tol) {
										t.Fatalf("int8=%v rows=%d np=%d nb=%d off=%d: acc[%d][%d][%d][%d] = %g, want %g ± %g",
											i8, rows, np, nb, off, p, k, r, i, got, w, tol)
									}
								}
							}
						}
					}
				}
			}
		}
	}
}

// TestSumTile compares sumTile with a float64 sum of the lanes.
func TestSumTile(t *testing.T) {
	if !fastReady {
		t.Skip("no AVX-512 on this CPU: these kernels never run here (Mul takes the portable ones)")
	}
	g := rand.New(rand.NewPCG(7, 8))
	for range 20 {
		var acc [2][tileG][16]float32
		for k := range acc {
			for r := range acc[k] {
				for i := range acc[k][r] {
					acc[k][r][i] = float32(g.NormFloat64())
				}
			}
		}
		var s [2 * tileG]float32
		sumTile(&acc, &s)
		for k := range acc {
			for r := range acc[k] {
				var w, b float64
				for _, v := range acc[k][r] {
					w += float64(v)
					b += math.Abs(float64(v))
				}
				if got := float64(s[tileG*k+r]); !(math.Abs(got-w) <= 1e-6*b) {
					t.Fatalf("s[%d] = %g, want %g", tileG*k+r, got, w)
				}
			}
		}
	}
}
