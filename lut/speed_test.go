package lut

import (
	"fmt"
	"os"
	"testing"
	"time"

	"forge/tensor"
)

// TestMulSpeed is a tuning aid, not a test: with FORGE_LUT_SPEED=1 it
// times Mul for a few formats and T, the configurations interleaved and
// the best of many rounds kept, which is steadier than -bench on a shared
// machine.
func TestMulSpeed(t *testing.T) {
	if os.Getenv("FORGE_LUT_SPEED") == "" {
		t.Skip("set FORGE_LUT_SPEED=1")
	}
	type cfg struct {
		name string
		ms   []linear
		x    *tensor.Matrix
		dst  *tensor.Matrix
		best time.Duration
	}
	var cs []*cfg
	out, in := 4096, 4096
	for _, name := range []string{"LUT4 per-tensor + pcs", "vector 2x16 + pcs", "INT8 per-channel"} {
		f := mustFormat(t, name)
		ms := benchMatrices(nil, f, out, in)
		for _, T := range []int{1, 8} {
			cs = append(cs, &cfg{name: fmt.Sprintf("%s T=%d", benchName(f), T), ms: ms, x: randomX(T, in, 1), dst: tensor.New(T, out)})
		}
	}
	for round := range 15 {
		for _, c := range cs {
			t0 := time.Now()
			for i := range 2 * len(c.ms) {
				c.ms[(i+round)%len(c.ms)].Mul(c.dst, c.x)
			}
			d := time.Since(t0) / time.Duration(2*len(c.ms))
			if c.best == 0 || d < c.best {
				c.best = d
			}
		}
	}
	for _, c := range cs {
		fmt.Printf("%-14s %9v %6.2f GB/s\n", c.name, c.best, float64(c.ms[0].Bytes())/c.best.Seconds()/1e9)
	}
}
