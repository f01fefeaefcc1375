package units

import "fmt"

// Bytes formats n bytes with one decimal in the largest binary unit not
// above n: n < 1024 as "n B", otherwise n/1024^k as "%.1f" with KiB, MiB,
// GiB, TiB or PiB (k = 1…5; larger sizes stay in PiB).
func Bytes(n int64) string { return format(n, 1) }

// BytesPrecise formats n bytes as Bytes does, but with two decimals from
// MiB up ("3.10 MiB", "14.34 GiB"; KiB keeps one: "1.5 KiB"). Forge's
// reports use it.
func BytesPrecise(n int64) string { return format(n, 2) }

// format writes n in the largest binary unit not above it, KiB with one
// decimal and larger units with decimals. Dividing by 1024 is exact in
// float64, so the value printed is float64(n)/1024^k rounded once.
func format(n int64, decimals int) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	f, i := float64(n)/unit, 0
	for f >= unit && i < 4 {
		f /= unit
		i++
	}
	if i == 0 {
		decimals = 1
	}
	return fmt.Sprintf("%.*f %ciB", decimals, f, "KMGTP"[i])
}

// Count writes a count of things (parameters) as llama-bench does: "512",
// "8.39 K", "8.41 M", "1.40 B" (powers of 1000, two decimals).
func Count(n int64) string {
	switch f := float64(n); {
	case n >= 1e9:
		return fmt.Sprintf("%.2f B", f/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.2f M", f/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.2f K", f/1e3)
	}
	return fmt.Sprint(n)
}
