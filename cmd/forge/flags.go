package main

import (
	"fmt"
	"strconv"
	"strings"
)

// The flag helpers every subcommand shares.

// modelDir returns the model directory given as --model or as a positional
// argument (an alias kept for commands that took it so), refusing neither
// or two different ones.
func modelDir(flag, arg string) (string, error) {
	switch {
	case flag == "" && arg == "":
		return "", fmt.Errorf("give the model directory: --model DIR")
	case flag != "" && arg != "" && flag != arg:
		return "", fmt.Errorf("two model directories: --model %s and %s", flag, arg)
	case flag != "":
		return flag, nil
	}
	return arg, nil
}

// trimList drops empty items and surrounding spaces from a list flag's
// values (every list flag is comma-separated and may also be repeated).
func trimList(items []string) []string {
	var out []string
	for _, s := range items {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// trimEach trims the spaces around each value of a list flag whose
// positions matter (an empty value stays, meaning "none for this one").
func trimEach(items []string) []string {
	out := make([]string, len(items))
	for i, s := range items {
		out[i] = strings.TrimSpace(s)
	}
	return out
}

// positive refuses flag values ≤ 0: pairs of a flag name and its value.
// (Zero means "the default" in the forge package's configs; on the command
// line the defaults are already filled in, so a 0 there is a mistake.)
func positive(pairs ...any) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if v := pairs[i+1].(int); v <= 0 {
			return fmt.Errorf("%s %d: want a positive number", pairs[i], v)
		}
	}
	return nil
}

// sizeFlag writes n as parseSize reads it: whole GiB or MiB when it is
// one, else bytes.
func sizeFlag(n int64) string {
	switch {
	case n > 0 && n%(1<<30) == 0:
		return strconv.FormatInt(n>>30, 10) + "GiB"
	case n > 0 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + "MiB"
	}
	return strconv.FormatInt(n, 10)
}

// sizeUnits are the suffixes parseSize accepts, longest first.
var sizeUnits = []struct {
	suffix string
	bytes  int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1},
}

// parseSize reads a positive byte count: digits with an optional unit
// (B, KB, MB, GB powers of 1000; KiB, MiB, GiB powers of 1024).
func parseSize(s string) (int64, error) {
	num, unit := strings.TrimSpace(s), int64(1)
	for _, u := range sizeUnits {
		if n, ok := strings.CutSuffix(num, u.suffix); ok {
			num, unit = strings.TrimSpace(n), u.bytes
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/unit {
		return 0, fmt.Errorf("%q: want a positive size such as 4GiB, 500MB or 1000000", s)
	}
	return n * unit, nil
}
