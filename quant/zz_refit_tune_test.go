package quant

import (
	"context"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"gonum.org/v1/gonum/floats"
)

func TestRefitTune(t *testing.T) {
	if os.Getenv("REFIT_TUNE") == "" {
		t.Skip()
	}
	const in = 5632
	r := rand.New(rand.NewPCG(1, 2))
	hm := make([]float64, in*in)
	for i := range in {
		for j := 0; j <= i; j++ {
			v := r.NormFloat64()
			hm[i*in+j], hm[j*in+i] = v, v
		}
	}
	// addTo vs floats.Add, L1-resident
	x, y := make([]float64, 512), make([]float64, 512)
	for _, f := range []struct {
		n  string
		fn func(y, x []float64)
	}{{"addTo", addTo}, {"floats.Add", func(y, x []float64) { floats.Add(y[:len(x)], x) }}} {
		t0 := time.Now()
		for range 1 << 20 {
			f.fn(y, x)
		}
		el := time.Since(t0)
		t.Logf("%s: %.3f ns/elem", f.n, float64(el.Nanoseconds())/float64(512<<20))
	}
	ctx := context.Background()
	for _, k := range []int{4, 16, 64, 256} {
		rows := 4096 / k
		if k == 4 {
			rows = 256
		}
		codes := make([]uint8, rows*in)
		for i := range codes {
			codes[i] = uint8(r.IntN(k))
		}
		rf := &refitter{in: in, k: k, d: 1, rows: rows, codes: codes, h: hm}
		g := make([]float64, rows*k*k)
		dt, db := gramTiling(k)
		for _, tb := range [][2]int{{dt, db}, {256, 8}, {512, 8}, {1024, 4}, {256, 32}, {128, 16}, {2048, 2}} {
			rf.tile, rf.batch = tb[0], tb[1]
			t0 := time.Now()
			if err := rf.grams(ctx, g, 0, rows); err != nil {
				t.Fatal(err)
			}
			el := time.Since(t0)
			t.Logf("K=%d tile %d batch %d: %.3f ns per add-element (%d rows: %v)", k, tb[0], tb[1], float64(el.Nanoseconds())/(float64(rows)*in*in/2), rows, el)
		}
	}
	a := make([]float64, 256*in)
	c := make([]float64, 256*in)
	for i := range a {
		a[i] = r.NormFloat64()
	}
	t0 := time.Now()
	la.dgemm(c, a, hm, 256, in, in)
	el := time.Since(t0)
	t.Logf("dgemm 256x%d·H: %v = %.2f GFLOP/s", in, el, 2*256*float64(in)*in/el.Seconds()/1e9)
}
