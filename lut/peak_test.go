//go:build goexperiment.simd && amd64

package lut

import "testing"

//go:noescape
func vnniPeak(n int)

//go:noescape
func addChain(n int)

// BenchmarkVNNIPeak measures the limit the multi-row int8 kernels are held
// against: VPDPBUSD on zmm registers without loads or dependencies
// (vnni/cycle), with the clock taken from a chain of dependent one-cycle
// adds in the same run (GHz). lut4I8T needs 2·T VPDPBUSD per 64 bytes of
// codes, so T·2 ÷ (vnni/cycle) cycles is its floor (BENCHMARKS.md, issue 14).
func BenchmarkVNNIPeak(b *testing.B) {
	if !int8Ready {
		b.Skip("no AVX-512 VNNI")
	}
	const rounds = 1 << 20
	var vnni, chain float64
	for b.Loop() {
		t0 := b.Elapsed()
		addChain(rounds)
		t1 := b.Elapsed()
		vnniPeak(rounds)
		t2 := b.Elapsed()
		chain += (t1 - t0).Seconds()
		vnni += (t2 - t1).Seconds()
	}
	ghz := 12 * rounds * float64(b.N) / chain / 1e9
	b.ReportMetric(ghz, "GHz")
	b.ReportMetric(12*rounds*float64(b.N)/(vnni*ghz*1e9), "vnni/cycle")
}
