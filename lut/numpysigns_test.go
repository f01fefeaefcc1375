package lut

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"forge/tensor"
)

// numpyGolden is testdata/numpy-signs.json (testdata/README.md).
type numpyGolden struct {
	Numpy string `json:"numpy"`
	Seeds []struct {
		Seed  uint64            `json:"seed"`
		State []string          `json:"state"` // SeedSequence(seed).generate_state(4, np.uint64), hex
		Raw   []string          `json:"raw"`   // PCG64(seed).random_raw(4), hex
		Signs map[string]string `json:"signs"` // width → packed signs, hex (bit j%8 of byte j/8 set: +1)
	} `json:"seeds"`
}

func readNumpyGolden(t *testing.T) numpyGolden {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "numpy-signs.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g numpyGolden
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Seeds) != 8 {
		t.Fatalf("%d seeds in the golden file, want 8", len(g.Seeds))
	}
	return g
}

func hex64(t *testing.T, s string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(s, 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestHadamardNumpySigns checks NumpySigns against numpy itself
// (testdata/numpy-signs.json, written by scripts/numpy-signs-golden.py
// with numpy 1.24): every sign of every vector (8 seeds, among them 0 and
// one above 2³², 9 widths from 1 to 17408, each drawn by a fresh
// generator), and on the way the seeding (generate_state's four words)
// and the first PCG64 outputs, so that a wrong step is named.
func TestHadamardNumpySigns(t *testing.T) {
	g := readNumpyGolden(t)
	for _, s := range g.Seeds {
		t.Run(fmt.Sprint(s.Seed), func(t *testing.T) {
			state := numpySeedState(s.Seed)
			for i, w := range s.State {
				if state[i] != hex64(t, w) {
					t.Fatalf("generate_state word %d: %016x, numpy %s", i, state[i], w)
				}
			}
			pcg := newNumpyPCG64(s.Seed)
			for i, w := range s.Raw {
				if got := pcg.next(); got != hex64(t, w) {
					t.Fatalf("PCG64 output %d: %016x, numpy %s", i, got, w)
				}
			}
			if len(s.Signs) != 9 {
				t.Errorf("%d widths, want 9", len(s.Signs))
			}
			for ws, packed := range s.Signs {
				width, _ := strconv.Atoi(ws)
				want, err := hex.DecodeString(packed)
				if err != nil || len(want) != (width+7)/8 {
					t.Fatalf("width %s: %d bytes (%v)", ws, len(want), err)
				}
				d := make([]int8, width)
				NumpySigns(d, s.Seed)
				for j, v := range d {
					if w := int8(2*(want[j/8]>>(j%8)&1)) - 1; v != w {
						t.Fatalf("width %d: sign %d is %d, numpy's %d", width, j, v, w)
					}
				}
			}
		})
	}
}

// TestHadamardSignsSource: NewHadamardSigns with SignsNumpy has the signs
// NumpySigns draws (the scale d_j/√n, column by column), says so, and
// rotates as the explicit float64 product D·H_n/√n with those signs, to
// TestHadamardRef's bound; NewHadamard is NewHadamardSigns with SignsForge
// bit for bit; the two sources give different signs for the same seed; an
// unknown source panics.
func TestHadamardSignsSource(t *testing.T) {
	for _, width := range []int{7, 96, 5120} {
		const seed = 1003
		h := NewHadamardSigns(width, seed, SignsNumpy)
		if h.Signs() != SignsNumpy || h.Seed() != seed || h.Width() != width || h.Block() != HadamardBlock(width) {
			t.Fatalf("width %d: signs %v seed %d width %d block %d", width, h.Signs(), h.Seed(), h.Width(), h.Block())
		}
		d8 := make([]int8, width)
		NumpySigns(d8, seed)
		d := make([]float64, width)
		inv := float32(1 / math.Sqrt(float64(h.Block())))
		for j, s := range d8 {
			d[j] = float64(s)
			if h.scale[j] != float32(s)*inv {
				t.Fatalf("width %d column %d: scale %v, numpy sign %d", width, j, h.scale[j], s)
			}
		}
		x := hdNormal(3, width, 17)
		got := tensor.New(3, width)
		h.Rotate(got, x)
		want := hadamardRefD(d, x, false)
		tol := float64(bits.Len(uint(h.Block()))+1) * hdUnit
		for r := range want {
			var e float64
			for j, w := range want[r] {
				e += (float64(got.Row(r)[j]) - w) * (float64(got.Row(r)[j]) - w)
			}
			if rel := math.Sqrt(e) / hdNorm(x.Row(r)); rel > tol {
				t.Errorf("width %d row %d: ‖Rotate − ref‖/‖x‖ = %.3g > %.3g", width, r, rel, tol)
			}
		}
		f, f2 := NewHadamard(width, seed), NewHadamardSigns(width, seed, SignsForge)
		same, differ := true, 0
		for j := range width {
			same = same && math.Float32bits(f.scale[j]) == math.Float32bits(f2.scale[j])
			differ += hdBool(f.scale[j] != h.scale[j])
		}
		if !same || f.Signs() != SignsForge || f.Signs().String() != "forge" || h.Signs().String() != "numpy" {
			t.Errorf("width %d: NewHadamard and NewHadamardSigns(SignsForge) differ (same %t, signs %v)", width, same, f.Signs())
		}
		if width >= 96 && differ == 0 {
			t.Errorf("width %d: forge's and numpy's signs agree everywhere", width)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("NewHadamardSigns with source 7: no panic")
		}
	}()
	NewHadamardSigns(64, 1, SignSource(7))
}
