package tensor

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"forge/internal/membw"
)

// benchSpan is the total size of the weight copies a benchmark cycles
// through: well above the 32 MiB L3, so that every Mul reads from DRAM as
// a decode step does, not from cache.
const benchSpan = 256 << 20

// readBuf is the buffer readBW reads: 256 MiB, well above the L3.
var readBuf = sync.OnceValue(func() []uint64 { return membw.NewBuffer(256 << 20) })

// readBW returns the 2-thread read bandwidth (GB/s) measured just before a
// sub-benchmark, the ceiling its GB/s is compared with: the median of 5
// passes (membw.ReadPass). It is measured again for every sub-benchmark,
// and as a median rather than membw.Read's best pass, because on a shared
// machine the bandwidth drifts over minutes and varies from pass to pass.
func readBW() float64 {
	buf := readBuf()
	rates := make([]float64, 5)
	for i := range rates {
		rates[i] = float64(len(buf)*8) / membw.ReadPass(buf, 2).Seconds() / 1e9
	}
	slices.Sort(rates)
	return rates[len(rates)/2]
}

// BenchmarkDenseMul reports weight bytes per second (MB/s from SetBytes,
// and GB/s), the 2-thread read bandwidth measured just before (readGB/s)
// and their ratio (%bw). Sub-benchmark names: dtype/outxin/T.
func BenchmarkDenseMul(b *testing.B) {
	b.Run("membw-read-2threads", func(b *testing.B) {
		buf := membw.NewBuffer(512 << 20)
		b.SetBytes(int64(len(buf)) * 8)
		for b.Loop() {
			membw.ReadPass(buf, 2)
		}
	})
	shapes := [][2]int{{2048, 2048}, {6912, 2048}, {2048, 6912}, {4096, 4096}}
	for _, dt := range []string{"bf16", "f32"} {
		for _, s := range shapes {
			for _, T := range []int{1, 8} {
				name := fmt.Sprintf("%s/%dx%d/T=%d", dt, s[0], s[1], T)
				b.Run(name, func(b *testing.B) { benchDenseMul(b, dt, s[0], s[1], T) })
			}
		}
	}
}

func benchDenseMul(b *testing.B, dt string, out, in, T int) {
	ds := benchDenses(dt, out, in)
	x := New(T, in)
	for i := range x.Data {
		x.Data[i] = float32(i%7) - 3
	}
	dst := New(T, out)
	bw := readBW()
	b.SetBytes(ds[0].Bytes())
	b.ResetTimer()
	i := 0
	for b.Loop() {
		ds[i%len(ds)].Mul(dst, x)
		i++
	}
	gbs := float64(ds[0].Bytes()) * float64(b.N) / b.Elapsed().Seconds() / 1e9
	b.ReportMetric(gbs, "GB/s")
	b.ReportMetric(bw, "readGB/s")
	b.ReportMetric(100*gbs/bw, "%bw")
}

// benchDenses returns enough copies of an out×in weight matrix to span
// benchSpan bytes, filled with small normal values (no zeros or subnormals,
// which could change the timing).
func benchDenses(dt string, out, in int) []*Dense {
	n := out * in
	var ds []*Dense
	for size := 0; size < benchSpan; {
		if dt == "f32" {
			w := make([]float32, n)
			for i := range w {
				w[i] = float32(i%13+1) / 16
			}
			ds = append(ds, DenseF32(out, in, w))
		} else {
			w := make([]uint16, n)
			for i := range w {
				w[i] = F32ToBF16(float32(i%13+1) / 16)
			}
			ds = append(ds, DenseBF16(out, in, w))
		}
		size += int(ds[len(ds)-1].Bytes())
	}
	return ds
}

// BenchmarkDenseGEMM reports the arithmetic rate of prefill-sized calls
// (GFLOP/s = 2·T·out·in per call; T = 8 stays on the dot-product path).
// The weights cycle through benchSpan bytes of copies, so each call reads
// them from DRAM as a prefill does. On a shared machine take the best of
// several -count runs. Sub-benchmark names: dtype/outxin/T.
func BenchmarkDenseGEMM(b *testing.B) {
	shapes := [][2]int{{2048, 2048}, {6912, 2048}, {2048, 6912}}
	for _, dt := range []string{"bf16", "f32"} {
		for _, s := range shapes {
			for _, T := range []int{8, 64, 128, 512} {
				name := fmt.Sprintf("%s/%dx%d/T=%d", dt, s[0], s[1], T)
				b.Run(name, func(b *testing.B) { benchDenseGEMM(b, dt, s[0], s[1], T) })
			}
		}
	}
}

func benchDenseGEMM(b *testing.B, dt string, out, in, T int) {
	ds := benchDenses(dt, out, in)
	x := New(T, in)
	for i := range x.Data {
		x.Data[i] = float32(i%7) - 3
	}
	dst := New(T, out)
	ds[0].Mul(dst, x) // warm up the pools
	b.ResetTimer()
	i := 0
	for b.Loop() {
		ds[i%len(ds)].Mul(dst, x)
		i++
	}
	flops := 2 * float64(T) * float64(out) * float64(in)
	b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// BenchmarkDenseMulPath runs small T through both the dot-product path and
// the GEMM path (GFLOP/s), to place gemmKernels.minT.
func BenchmarkDenseMulPath(b *testing.B) {
	g := kern.gemm
	saved := g.minT
	defer func() { g.minT = saved }()
	for _, dt := range []string{"bf16", "f32"} {
		for _, s := range [][2]int{{2048, 2048}, {6912, 2048}, {2048, 6912}} {
			for _, T := range []int{8, 16, 24, 32, 64} {
				for _, path := range []string{"dot", "gemm"} {
					name := fmt.Sprintf("%s/%dx%d/T=%d/%s", dt, s[0], s[1], T, path)
					b.Run(name, func(b *testing.B) {
						g.minT = [3]int{1 << 30, 1 << 30, 1 << 30}
						if path == "gemm" {
							g.minT = [3]int{1, 1, 1}
						}
						benchDenseGEMM(b, dt, s[0], s[1], T)
					})
				}
			}
		}
	}
}
