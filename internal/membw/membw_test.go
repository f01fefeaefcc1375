package membw

import (
	"math"
	"testing"
)

func TestSum(t *testing.T) {
	for _, n := range []int{0, 1, 7, 8, 33, 64, 1000, 4099} {
		b := make([]uint64, n)
		var want uint64
		for i := range b {
			b[i] = uint64(i)*0x9e3779b97f4a7c15 + 1
			want += b[i]
		}
		if got := sum(b); got != want {
			t.Errorf("n=%d: sum = %d, want %d", n, got, want)
		}
	}
}

func TestReadCopySmall(t *testing.T) {
	for _, threads := range []int{0, 1, 2, 3} {
		if r := Read(1<<20, threads); !(r > 0) || math.IsInf(r, 0) {
			t.Errorf("Read(1 MiB, %d) = %v, want positive finite", threads, r)
		}
		if c := Copy(1<<20, threads); !(c > 0) || math.IsInf(c, 0) {
			t.Errorf("Copy(1 MiB, %d) = %v, want positive finite", threads, c)
		}
	}
}

// benchBytes is well above the 32 MiB L3 so that passes come from DRAM.
const benchBytes = 512 << 20

var benchBuf []uint64

func benchRead(b *testing.B, threads int) {
	if benchBuf == nil {
		benchBuf = NewBuffer(benchBytes)
	}
	b.SetBytes(int64(len(benchBuf)) * 8)
	b.ResetTimer()
	for b.Loop() {
		ReadPass(benchBuf, threads)
	}
}

func BenchmarkRead1Thread(b *testing.B)  { benchRead(b, 1) }
func BenchmarkRead2Threads(b *testing.B) { benchRead(b, 2) }

func BenchmarkCopy2Threads(b *testing.B) {
	src, dst := NewBuffer(benchBytes/2), NewBuffer(benchBytes/2)
	b.SetBytes(2 * int64(len(src)) * 8)
	b.ResetTimer()
	for b.Loop() {
		CopyPass(dst, src, 2)
	}
}
