package tensor

import (
	"fmt"
	"testing"
	"time"
)

// temporary: min-of-N kernel timing in cache
func TestZZMicro(t *testing.T) {
	const in = 2048
	w := make([]uint16, 8*in)
	wf := make([]float32, 8*in)
	for i := range w {
		w[i] = F32ToBF16(float32(i%13+1) / 16)
		wf[i] = float32(i%13+1) / 16
	}
	x := make([]float32, 4*in)
	for i := range x {
		x[i] = 1
	}
	r := func(i int) []uint16 { return w[i*in : (i+1)*in] }
	rf := func(i int) []float32 { return wf[i*in : (i+1)*in] }
	xr := func(i int) []float32 { return x[i*in : (i+1)*in] }
	var sink float32
	meas := func(name string, flops float64, f func()) {
		best := time.Hour
		for range 2000 {
			t0 := time.Now()
			for range 10 {
				f()
			}
			best = min(best, time.Since(t0))
		}
		ns := float64(best.Nanoseconds()) / 10
		fmt.Printf("%-12s %8.0f ns  %6.2f lane-FMA/ns\n", name, ns, flops/ns)
	}
	for _, ks := range kernelSets() {
		k := ks.bf16
		kf := ks.f32
		fmt.Println(ks.name)
		meas("bf16 8x1", 8*in, func() { a, _, _, _, _, _, _, _ := k.d8x1(w, in, xr(0)); sink += a })
		meas("bf16 2x4", 8*in, func() { a, _, _, _, _, _, _, _ := k.d2x4(r(0), r(1), xr(0), xr(1), xr(2), xr(3)); sink += a })
		meas("bf16 1x4", 4*in, func() { a, _, _, _ := k.d1x4(r(0), xr(0), xr(1), xr(2), xr(3)); sink += a })
		meas("bf16 1x1", in, func() { sink += k.d1x1(r(0), xr(0)) })
		meas("f32 8x1", 8*in, func() { a, _, _, _, _, _, _, _ := kf.d8x1(wf, in, xr(0)); sink += a })
		meas("f32 2x4", 8*in, func() { a, _, _, _, _, _, _, _ := kf.d2x4(rf(0), rf(1), xr(0), xr(1), xr(2), xr(3)); sink += a })
	}
	_ = sink
}
