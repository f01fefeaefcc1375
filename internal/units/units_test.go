package units

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// oldBudgetBytes and oldHumanBytes are the formatters units replaced
// (internal/budget.Bytes; humanBytes of inspect.go and eval/report.go),
// copied verbatim: the tests hold the merged one to their strings.
func oldBudgetBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	f, i := float64(n)/unit, 0
	for f >= unit && i < 4 {
		f /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", f, "KMGTP"[i])
}

func oldHumanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// sizes returns the unit boundaries and their neighbours, values that
// round up to the next unit, and random sizes of every magnitude.
func sizes() []int64 {
	out := []int64{-1, 0, 1, 999, 1023}
	for k := 10; k <= 62; k += 10 {
		b := int64(1) << k
		out = append(out, b-1, b, b+1, b-b/2000, b+b/2000)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		out = append(out, r.Int64N(int64(1)<<r.IntN(63)+1))
	}
	return out
}

func TestBytesHand(t *testing.T) {
	for _, c := range []struct {
		n             int64
		bytes, report string
	}{
		{512, "512 B", "512 B"},
		{1536, "1.5 KiB", "1.5 KiB"},
		{550_502, "537.6 KiB", "537.6 KiB"},
		{3_250_586, "3.1 MiB", "3.10 MiB"},
		{3 << 30, "3.0 GiB", "3.00 GiB"},
		{15_400_000_000, "14.3 GiB", "14.34 GiB"},
		{5 << 40, "5.0 TiB", "5.00 TiB"},
		{1<<63 - 1, "8192.0 PiB", "8192.00 PiB"},
	} {
		if got := Bytes(c.n); got != c.bytes {
			t.Errorf("Bytes(%d) = %q, want %q", c.n, got, c.bytes)
		}
		if got := BytesPrecise(c.n); got != c.report {
			t.Errorf("BytesPrecise(%d) = %q, want %q", c.n, got, c.report)
		}
	}
}

// TestSameStrings: Bytes prints what budget.Bytes printed for every size,
// and BytesPrecise what humanBytes printed below 1 TiB (humanBytes had no
// unit above GiB: it printed 1 TiB as "1024.00 GiB", BytesPrecise as
// "1.00 TiB").
func TestSameStrings(t *testing.T) {
	for _, n := range sizes() {
		if got, want := Bytes(n), oldBudgetBytes(n); got != want {
			t.Fatalf("Bytes(%d) = %q, budget.Bytes printed %q", n, got, want)
		}
		if n >= 1<<40 {
			continue
		}
		if got, want := BytesPrecise(n), oldHumanBytes(n); got != want {
			t.Fatalf("BytesPrecise(%d) = %q, humanBytes printed %q", n, got, want)
		}
	}
}

func TestCount(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1.00 K", 8_412_160: "8.41 M", 1_403_000_000: "1.40 B", 27_800_000_000: "27.80 B"} {
		if got := Count(n); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
		}
	}
}
