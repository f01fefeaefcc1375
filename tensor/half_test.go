package tensor

import (
	"math"
	"runtime"
	"sync"
	"testing"
)

// The references below compute with float64 arithmetic on real values
// (every binary16/bfloat16/binary32 value is exact in float64), so they share
// no bit tricks with the implementations they check.

func refHalfToF64(h uint16, expBits, manBits int) float64 {
	bias := 1<<(expBits-1) - 1
	sign := 1.0
	if h>>(expBits+manBits)&1 == 1 {
		sign = -1
	}
	e := int(h>>manBits) & (1<<expBits - 1)
	m := float64(int(h) & (1<<manBits - 1))
	switch {
	case e == 1<<expBits-1 && m == 0:
		return sign * math.Inf(1)
	case e == 1<<expBits-1:
		return math.NaN()
	case e == 0:
		return sign * m * math.Ldexp(1, 1-bias-manBits)
	default:
		return sign * (1 + m/float64(int(1)<<manBits)) * math.Ldexp(1, e-bias)
	}
}

// refRound rounds x (finite, not NaN) to a format with expBits/manBits,
// nearest with ties to even, and returns the bit pattern.
func refRound(x float64, expBits, manBits int) uint16 {
	var sign uint16
	if math.Signbit(x) {
		sign = 1 << (expBits + manBits)
		x = -x
	}
	bias := 1<<(expBits-1) - 1
	minNormExp := 1 - bias
	if x == 0 {
		return sign
	}
	if math.IsInf(x, 0) {
		return sign | uint16((1<<expBits-1)<<manBits)
	}
	e := int(math.Float64bits(x)>>52) - 1023 // x is a normal float64: its binary exponent
	if e < minNormExp {                      // subnormal range: units of 2^(minNormExp-manBits)
		m := math.RoundToEven(x / pow2(minNormExp-manBits))
		return sign | uint16(m) // m == 2^manBits lands on the smallest normal: same bits
	}
	m := math.RoundToEven(x / pow2(e-manBits)) // in [2^manBits, 2^(manBits+1)]
	if m == float64(int(1)<<(manBits+1)) {
		m /= 2
		e++
	}
	if e > bias {
		return sign | uint16((1<<expBits-1)<<manBits) // Inf
	}
	return sign | uint16(e+bias)<<manBits | uint16(m-float64(int(1)<<manBits))
}

// pow2 returns 2^e exactly for float64-normal e.
func pow2(e int) float64 { return math.Float64frombits(uint64(e+1023) << 52) }

func TestHalfToF32Exhaustive(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		for _, c := range []struct {
			name     string
			got      float32
			exp, man int
		}{{"bf16", BF16ToF32(uint16(h)), 8, 7}, {"f16", F16ToF32(uint16(h)), 5, 10}} {
			want := refHalfToF64(uint16(h), c.exp, c.man)
			if math.IsNaN(want) {
				if !math.IsNaN(float64(c.got)) {
					t.Fatalf("%s %#04x: got %v, want NaN", c.name, h, c.got)
				}
				continue
			}
			if float64(c.got) != want || math.Signbit(float64(c.got)) != math.Signbit(want) {
				t.Fatalf("%s %#04x: got %v, want %v", c.name, h, c.got, want)
			}
		}
	}
}

// TestF32ToHalfExhaustive checks every one of the 2^32 float32 patterns
// against the float64 reference (about 15 s per core; skipped with -short,
// where a stride of 4099 patterns still covers every exponent).
func TestF32ToHalfExhaustive(t *testing.T) {
	stride := uint64(1)
	if testing.Short() {
		stride = 4099
	}
	workers := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	errs := make(chan string, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for u := uint64(w) * stride; u < 1<<32; u += uint64(workers) * stride {
				f := math.Float32frombits(uint32(u))
				gb, gh := F32ToBF16(f), F32ToF16(f)
				if f != f {
					if BF16ToF32(gb) == BF16ToF32(gb) || F16ToF32(gh) == F16ToF32(gh) {
						errs <- "NaN not preserved"
						return
					}
					continue
				}
				if wb := refRound(float64(f), 8, 7); gb != wb {
					errs <- "bf16 mismatch at " + hex32(uint32(u))
					return
				}
				if wh := refRound(float64(f), 5, 10); gh != wh {
					errs <- "f16 mismatch at " + hex32(uint32(u))
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func hex32(u uint32) string {
	const d = "0123456789abcdef"
	b := []byte("0x00000000")
	for i := 0; i < 8; i++ {
		b[9-i] = d[u>>(4*i)&0xf]
	}
	return string(b)
}

func TestHalfRoundTrip(t *testing.T) {
	// Every finite half value survives widening then narrowing unchanged.
	for h := 0; h < 1<<16; h++ {
		if f := BF16ToF32(uint16(h)); f == f && F32ToBF16(f) != uint16(h) {
			t.Fatalf("bf16 %#04x does not round-trip", h)
		}
		if f := F16ToF32(uint16(h)); f == f && F32ToF16(f) != uint16(h) {
			t.Fatalf("f16 %#04x does not round-trip", h)
		}
	}
}

func BenchmarkBF16ToF32Slice(b *testing.B) {
	src := make([]uint16, 1<<20)
	dst := make([]float32, len(src))
	b.SetBytes(int64(2 * len(src)))
	for b.Loop() {
		BF16ToF32Slice(dst, src)
	}
}

func BenchmarkF16ToF32Slice(b *testing.B) {
	src := make([]uint16, 1<<20)
	for i := range src {
		src[i] = uint16(i * 7)
	}
	dst := make([]float32, len(src))
	b.SetBytes(int64(2 * len(src)))
	for b.Loop() {
		F16ToF32Slice(dst, src)
	}
}
