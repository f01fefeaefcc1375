package tensor

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"

	"forge/internal/membw"
)

// temporary A/B harness: interleaved rounds, median and best GB/s.
func TestZZAB(t *testing.T) {
	if os.Getenv("AB") == "" {
		t.Skip()
	}
	out, _ := strconv.Atoi(os.Getenv("OUT"))
	in, _ := strconv.Atoi(os.Getenv("IN"))
	T, _ := strconv.Atoi(os.Getenv("TT"))
	dsb := benchDenses("bf16", out, in)
	dsf := benchDenses("f32", out, in)
	buf := membw.NewBuffer(benchSpan)
	x := New(T, in)
	for i := range x.Data {
		x.Data[i] = 1
	}
	dst := New(T, out)
	names := []string{"bf16", "f32", "read", "bf16eo"}
	res := make([][]float64, 4)
	for range 25 {
		for m := range 4 {
			t0 := time.Now()
			var bytes float64
			switch m {
			case 0:
				for i := range len(dsb) {
					dsb[i].Mul(dst, x)
				}
				bytes = float64(len(dsb)) * float64(dsb[0].Bytes())
			case 1:
				for i := range len(dsf) {
					dsf[i].Mul(dst, x)
				}
				bytes = float64(len(dsf)) * float64(dsf[0].Bytes())
			case 3:
				saved := kern
				kern = &eoKernels
				for i := range len(dsb) {
					dsb[i].Mul(dst, x)
				}
				kern = saved
				bytes = float64(len(dsb)) * float64(dsb[0].Bytes())
			case 2:
				membw.ReadPass(buf, 2)
				bytes = float64(len(buf) * 8)
			}
			res[m] = append(res[m], bytes/time.Since(t0).Seconds()/1e9)
		}
	}
	for m := range 4 {
		sort.Float64s(res[m])
		fmt.Printf("%dx%d T=%d %-5s median %5.1f best %5.1f GB/s\n", out, in, T, names[m], res[m][len(res[m])/2], res[m][len(res[m])-1])
	}
}
