//go:build goexperiment.simd && amd64

package lut

import "testing"

//go:noescape
func vnniPeak(n int)

//go:noescape
func vnniMul(n int)

//go:noescape
func vnniPerm(n int)

//go:noescape
func vnniAdd(n int)

//go:noescape
func addChain(n int)

// BenchmarkVNNIPeak measures the limit the multi-row int8 kernels are held
// against: twelve VPDPBUSD on zmm registers a round, without loads or
// dependencies, alone and with six VMULPS, VPERMB or VADDPS beside them,
// in cycles a round (the clock from a chain of dependent one-cycle adds
// in the same run, GHz) and, alone, VPDPBUSD a cycle. lut4I8T needs 2·T
// VPDPBUSD per 64 bytes of codes, so T·2 ÷ (vnni/cycle) cycles is its
// floor, higher where its other instructions share VPDPBUSD's pipes
// (BENCHMARKS.md, issue 14).
func BenchmarkVNNIPeak(b *testing.B) {
	if !int8Ready {
		b.Skip("no AVX-512 VNNI")
	}
	const rounds = 1 << 20
	for _, k := range []struct {
		name string
		f    func(int)
	}{{"alone", vnniPeak}, {"vmulps", vnniMul}, {"vpermb", vnniPerm}, {"vaddps", vnniAdd}} {
		b.Run(k.name, func(b *testing.B) {
			var work, chain float64
			for b.Loop() {
				t0 := b.Elapsed()
				addChain(rounds)
				t1 := b.Elapsed()
				k.f(rounds)
				t2 := b.Elapsed()
				chain += (t1 - t0).Seconds()
				work += (t2 - t1).Seconds()
			}
			ghz := 12 * rounds * float64(b.N) / chain / 1e9
			cycles := work * ghz * 1e9 / (rounds * float64(b.N))
			b.ReportMetric(ghz, "GHz")
			b.ReportMetric(cycles, "cycles/round")
			if k.name == "alone" {
				b.ReportMetric(12/cycles, "vnni/cycle")
			}
		})
	}
}
