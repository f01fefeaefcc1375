package tensor

import (
	"fmt"
	"os"
	"sort"
	"testing"
	"time"
)

func TestZZT8(t *testing.T) {
	if os.Getenv("T8") == "" {
		t.Skip()
	}
	for _, T := range []int{1, 4, 8} {
		for _, dt := range []string{"bf16", "bf16-4x2"} {
			saved := d4x2Hook
			if dt == "bf16" {
				d4x2Hook = nil
			}
			ds := benchDenses("bf16", 2048, 2048)
			x := New(T, 2048)
			for i := range x.Data {
				x.Data[i] = 1
			}
			dst := New(T, 2048)
			var dram, l3 []float64
			for range 25 {
				t0 := time.Now()
				for i := range ds {
					ds[i].Mul(dst, x)
				}
				dram = append(dram, float64(len(ds))*float64(ds[0].Bytes())/time.Since(t0).Seconds()/1e9)
				t0 = time.Now()
				for range ds {
					ds[0].Mul(dst, x)
				}
				l3 = append(l3, float64(len(ds))*float64(ds[0].Bytes())/time.Since(t0).Seconds()/1e9)
			}
			sort.Float64s(dram)
			sort.Float64s(l3)
			d4x2Hook = saved
			fmt.Printf("%s T=%d 2048x2048: dram median %.1f  cached median %.1f GB/s\n", dt, T, dram[12], l3[12])
		}
	}
}
