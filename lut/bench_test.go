package lut

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"forge/internal/membw"
	"forge/tensor"
)

// benchSpan is the total size of the weight copies a benchmark cycles
// through: well above the 32 MiB L3, so that every Mul reads its weights
// from DRAM as a decode step does, not from cache.
const benchSpan = 256 << 20

// readBuf is the buffer readBW reads: 256 MiB, well above the L3.
var readBuf = sync.OnceValue(func() []uint64 { return membw.NewBuffer(256 << 20) })

// readBW returns the 2-thread read bandwidth (GB/s) measured just before a
// sub-benchmark: the median of 5 membw.ReadPass passes (the same yardstick
// as tensor's BenchmarkDenseMul; the median because on a shared machine
// the bandwidth drifts and varies from pass to pass).
func readBW() float64 {
	buf := readBuf()
	rates := make([]float64, 5)
	for i := range rates {
		rates[i] = float64(len(buf)*8) / membw.ReadPass(buf, 2).Seconds() / 1e9
	}
	slices.Sort(rates)
	return rates[len(rates)/2]
}

// linear is what the benchmark multiplies: a lut.Matrix or a tensor.Dense.
type linear interface {
	Mul(dst, x *tensor.Matrix)
	Bytes() int64
}

// BenchmarkLUTMul reports packed weight bytes per second (MB/s from
// SetBytes, and GB/s), the 2-thread read bandwidth measured just before
// (readGB/s) and their ratio (%bw). bf16 is tensor.DenseBF16, the
// unquantized baseline. Sub-benchmark names: format/outxin/T.
func BenchmarkLUTMul(b *testing.B) {
	shapes := [][2]int{{4096, 4096}, {17408, 5120}}
	for _, name := range []string{"LUT4 per-tensor + pcs", "vector 2x16 + pcs", "INT8 per-channel", "bf16"} {
		f := mustFormat(b, name)
		for _, s := range shapes {
			for _, T := range []int{1, 8} {
				sub := fmt.Sprintf("%s/%dx%d/T=%d", benchName(f), s[0], s[1], T)
				b.Run(sub, func(b *testing.B) { benchMul(b, f, s[0], s[1], T) })
			}
		}
	}
}

func benchName(f Format) string {
	switch f.Kind {
	case Scalar:
		return fmt.Sprintf("LUT%d", f.Bits)
	case Vector:
		return fmt.Sprintf("vec%dx%d", f.Dim, f.Entries())
	case Int8:
		return "INT8"
	}
	return f.String()
}

func benchMul(b *testing.B, f Format, out, in, T int) {
	benchMulWith(b, f, out, in, T, func(l linear, dst, x *tensor.Matrix) { l.Mul(dst, x) })
}

// benchMulWith times mul over the copies of a random out×in matrix of
// format f, x of T rows, and reports the weight rate against the read
// bandwidth measured just before.
func benchMulWith(b *testing.B, f Format, out, in, T int, mul func(l linear, dst, x *tensor.Matrix)) {
	ms := benchMatrices(b, f, out, in)
	x := randomX(T, in, 1)
	dst := tensor.New(T, out)
	for _, m := range ms { // warm-up: a matrix's first int8 product transposes its codes (int8vert.go)
		mul(m, dst, x)
	}
	bw := readBW()
	bytes := ms[0].Bytes()
	b.SetBytes(bytes)
	b.ResetTimer()
	i := 0
	for b.Loop() {
		mul(ms[i%len(ms)], dst, x)
		i++
	}
	reportBW(b, bytes, bw)
}

// reportBW reports the weight bytes read per second (GB/s), the read
// bandwidth bw measured before (readGB/s) and their ratio (%bw).
func reportBW(b *testing.B, bytes int64, bw float64) {
	gbs := float64(bytes) * float64(b.N) / b.Elapsed().Seconds() / 1e9
	b.ReportMetric(gbs, "GB/s")
	b.ReportMetric(bw, "readGB/s")
	b.ReportMetric(100*gbs/bw, "%bw")
}

// benchMatrices returns enough copies of a random out×in matrix in format
// f (bf16: a tensor.DenseBF16) to span benchSpan bytes. Copies share the
// small arrays and have their own index (or weight) bytes.
func benchMatrices(b testing.TB, f Format, out, in int) []linear {
	g := rand.New(rand.NewPCG(7, 8))
	var p Parts
	var bulk []byte
	if f.Kind == BF16 {
		bulk = make([]byte, 2*out*in)
	} else {
		bulk = make([]byte, f.Size(out, in, 0).Index)
		p.LUT = make([]uint16, f.Groups(out)*f.Entries()*f.Dim)
		for i := range p.LUT {
			p.LUT[i] = tensor.F32ToF16(float32(g.NormFloat64()))
		}
		p.Scale = make([]uint16, out)
		for i := range p.Scale {
			p.Scale[i] = tensor.F32ToF16(float32(0.5 + g.Float64()))
		}
	}
	for i := 0; i+8 <= len(bulk); i += 8 {
		v := g.Uint64()
		for k := range 8 {
			bulk[i+k] = byte(v >> (8 * k))
		}
	}
	if f.Kind == BF16 {
		for i := 1; i < len(bulk); i += 2 {
			bulk[i] = bulk[i]&0x3f | 0x3c // a normal bf16 exponent: no NaN, Inf or subnormal
		}
	}
	if f.Kind == Int8 {
		for i, c := range bulk {
			if c == 0x80 {
				bulk[i] = 0x81
			}
		}
	}
	var ms []linear
	for size := int64(0); size < benchSpan; {
		data := slices.Clone(bulk)
		if f.Kind == BF16 {
			w := make([]uint16, out*in)
			for i := range w {
				w[i] = uint16(data[2*i]) | uint16(data[2*i+1])<<8
			}
			ms = append(ms, tensor.DenseBF16(out, in, w))
		} else {
			q := p
			q.Index = data
			m, err := New(f, out, in, q)
			if err != nil {
				b.Fatal(err)
			}
			ms = append(ms, m)
		}
		size += ms[len(ms)-1].Bytes()
	}
	return ms
}

// BenchmarkLUTMulCache is BenchmarkLUTMul for one small matrix that stays
// in the L2 cache (256×4096: 2x16 128 KiB of indices, LUT4 512 KiB, INT8
// 1 MiB), so that it measures the kernels rather than DRAM; run it with
// -cpu 1 for one core. Reports GB/s of packed weight bytes.
func BenchmarkLUTMulCache(b *testing.B) {
	const out, in = 256, 4096
	for _, name := range []string{"LUT4 per-tensor + pcs", "vector 2x16 + pcs", "INT8 per-channel"} {
		f := mustFormat(b, name)
		m := randomMatrix(b, f, out, in, 0, false, 1)
		for _, T := range []int{1, 4, 8, 16} {
			b.Run(fmt.Sprintf("%s/T=%d", benchName(f), T), func(b *testing.B) {
				x, dst := randomX(T, in, 2), tensor.New(T, out)
				b.SetBytes(m.Bytes())
				for b.Loop() {
					m.Mul(dst, x)
				}
				b.ReportMetric(float64(m.Bytes())*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
			})
		}
		// The peer of every T = 1 kernel: the portable one.
		b.Run(fmt.Sprintf("%s/T=1/portable", benchName(f)), func(b *testing.B) {
			saved := useFast
			useFast = false
			defer func() { useFast = saved }()
			x, dst := randomX(1, in, 2), tensor.New(1, out)
			b.SetBytes(m.Bytes())
			for b.Loop() {
				m.Mul(dst, x)
			}
			b.ReportMetric(float64(m.Bytes())*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
		if !m.Int8Activations() {
			continue
		}
		// The peer of the multi-row kernel: eight rows as eight one-row products.
		b.Run(fmt.Sprintf("%s/int8/T=8/row-by-row", benchName(f)), func(b *testing.B) {
			x, dst := randomX(8, in, 2), tensor.New(1, out)
			qs := make([]Int8Input, 8)
			for t := range qs {
				m.QuantizeInput(&qs[t], tensor.FromSlice(1, in, x.Row(t)))
			}
			b.SetBytes(m.Bytes())
			for b.Loop() {
				for t := range qs {
					m.MulInt8(dst, &qs[t])
				}
			}
			b.ReportMetric(float64(m.Bytes())*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
		for _, T := range []int{1, 2, 4, 8, 16} {
			b.Run(fmt.Sprintf("%s/int8/T=%d", benchName(f), T), func(b *testing.B) {
				x, dst := randomX(T, in, 2), tensor.New(T, out)
				var q Int8Input
				m.QuantizeInput(&q, x)
				b.SetBytes(m.Bytes())
				for b.Loop() {
					m.MulInt8(dst, &q)
				}
				b.ReportMetric(float64(m.Bytes())*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
			})
		}
	}
}

// BenchmarkLUTMulConcurrent runs 4096×4096 LUT4 products (T = 1, weights
// from DRAM as in BenchmarkLUTMul) from 1 and from 2 goroutines at once,
// sharing the default worker pool, and reports the total products per
// second (mul/s): the pool shares its workers between concurrent callers
// (issue 11's aim: two streams ≥ 1.6× one).
func BenchmarkLUTMulConcurrent(b *testing.B) {
	f := mustFormat(b, "LUT4 per-tensor + pcs")
	const out, in = 4096, 4096
	ms := benchMatrices(b, f, out, in)
	for _, streams := range []int{1, 2} {
		b.Run(fmt.Sprintf("LUT4/%dx%d/streams=%d", out, in, streams), func(b *testing.B) {
			var wg sync.WaitGroup
			b.ResetTimer()
			for s := range streams {
				wg.Add(1)
				go func() {
					defer wg.Done()
					x, dst := randomX(1, in, uint64(s)), tensor.New(1, out)
					for i := range b.N {
						ms[(i*streams+s)%len(ms)].Mul(dst, x)
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(streams*b.N)/b.Elapsed().Seconds(), "mul/s")
		})
	}
}

// BenchmarkLUTMulInt8 is BenchmarkLUTMul's T = 1 case with int8
// activations (MulInt8, the input quantized in every iteration as a
// decode step does once per input), beside the float32 kernels in the
// same run: `-bench 'LUTMul(Int8)?/(LUT4|vec2x16)/.*/T=1$'`.
func BenchmarkLUTMulInt8(b *testing.B) {
	for _, name := range []string{"LUT4 per-tensor + pcs", "vector 2x16 + pcs"} {
		f := mustFormat(b, name)
		// 6912×2048 and 2048×6912: the synth-1.4b's MLP up and down
		// projections (at T = 8 the down projection's x overflows L1).
		// Both run in the tile order where its kernels run, and as their
		// peer in the same run the row-major kernels ("rows").
		orders := []bool{false}
		if int8Vert {
			orders = []bool{true, false}
		}
		for _, s := range [][2]int{{4096, 4096}, {17408, 5120}, {2048, 6912}, {6912, 2048}} {
			for _, T := range []int{1, 8} {
				for _, vert := range orders {
					sub := fmt.Sprintf("%s/%dx%d/T=%d", benchName(f), s[0], s[1], T)
					if !vert && len(orders) == 2 {
						sub += "/rows"
					}
					b.Run(sub, func(b *testing.B) {
						saved := int8Vert
						int8Vert = vert
						defer func() { int8Vert = saved }()
						var q Int8Input
						benchMulWith(b, f, s[0], s[1], T, func(l linear, dst, x *tensor.Matrix) {
							m := l.(*Matrix)
							m.QuantizeInput(&q, x)
							m.MulInt8(dst, &q)
						})
					})
				}
			}
		}
	}
}

// BenchmarkLUTMulTiny runs forge-tiny's decode products (T = 1, int8
// activations, one core: -cpu 1) on their own, the input's quantization
// apart from the product: a step's matrices are small enough that per-row
// and per-call costs, not the weight stream, set their speed.
func BenchmarkLUTMulTiny(b *testing.B) {
	f := mustFormat(b, "LUT4 per-tensor + pcs")
	for _, s := range [][2]int{{64, 256}, {768, 256}, {256, 768}, {4160, 256}} {
		m := randomMatrix(b, f, s[0], s[1], 0, false, 1)
		if !m.Int8Activations() {
			b.Skip("no int8 kernels on this CPU")
		}
		x, dst := randomX(1, s[1], 2), tensor.New(1, s[0])
		var q Int8Input
		b.Run(fmt.Sprintf("%dx%d/quantize", s[0], s[1]), func(b *testing.B) {
			for b.Loop() {
				m.QuantizeInput(&q, x)
			}
		})
		b.Run(fmt.Sprintf("%dx%d/mul", s[0], s[1]), func(b *testing.B) {
			m.QuantizeInput(&q, x)
			b.SetBytes(m.Bytes())
			for b.Loop() {
				m.MulRowsInt8(dst, &q, 0, s[0])
			}
		})
	}
}

// BenchmarkQuantize quantizes T rows of x to int8 (QuantizeInput: the
// codes, scales and lane sums of every row, in the layout the kernels of
// T rows read) at the widths of forge-tiny's inputs (256, 768) and the
// synth-1.4b's (2048, 6912), one core: ns a column of a row.
func BenchmarkQuantize(b *testing.B) {
	f := mustFormat(b, "LUT4 per-tensor + pcs")
	for _, in := range []int{256, 768, 2048, 6912} {
		m := randomMatrix(b, f, 64, in, 0, false, 1)
		if !m.Int8Activations() {
			b.Skip("no int8 kernels on this CPU")
		}
		for _, T := range []int{1, 8} {
			x := randomX(T, in, 2)
			var q Int8Input
			b.Run(fmt.Sprintf("%d/T=%d", in, T), func(b *testing.B) {
				for b.Loop() {
					m.QuantizeInput(&q, x)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(T*in), "ns/column")
			})
		}
	}
}
