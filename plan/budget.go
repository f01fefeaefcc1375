package plan

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ErrBudget is wrapped by every malformed budget and every budget a sweep
// cannot meet (below its smallest plan) or need not choose under (at or
// above its largest).
var ErrBudget = errors.New("invalid budget")

// Budget is a size limit for a plan, in one of two units: bits per weight
// of the sweep's units (BPW > 0: the units may store at most
// BPW·Σ Unit.Params/8 bytes), or the whole bundle's bytes (Bytes > 0:
// the units may store at most Bytes − Sweep.FixedBytes). The zero Budget
// is no budget.
type Budget struct {
	BPW   float64
	Bytes int64
	// Unit and Value are the budget as given ("bpw", "GiB", "MB", "B", …
	// and the number), for messages in the user's own unit.
	Unit  string
	Value float64
}

// sizeUnits are the byte units ParseBudget reads (case-insensitive),
// longest suffix first.
var sizeUnits = []struct {
	name  string
	bytes float64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1},
}

// ParseBudget reads "2.6bpw" (bits per weight of the swept matrices) or
// a bundle size "3.1GiB", "850MiB", "2.5GB", "900MB", "123456B" (units
// B, KB, MB, GB, TB in powers of 1000, KiB, MiB, GiB, TiB in powers of
// 1024; a space before the unit is allowed; a size in B is a whole
// number). Zero, negative, NaN, infinite and unit-less values are errors.
func ParseBudget(s string) (Budget, error) {
	bad := func(why string) (Budget, error) {
		return Budget{}, fmt.Errorf("%w %q: %s (want bits per weight such as 2.6bpw, or a size such as 3.1GiB, 850MiB, 2.5GB or 123456B)", ErrBudget, s, why)
	}
	t := strings.TrimSpace(s)
	unit, mult := "", 0.0
	if num, ok := cutSuffixFold(t, "bpw"); ok {
		t, unit = num, "bpw"
	} else {
		for _, u := range sizeUnits {
			if num, ok := cutSuffixFold(t, u.name); ok {
				t, unit, mult = num, u.name, u.bytes
				break
			}
		}
	}
	if unit == "" {
		return bad("no unit")
	}
	t = strings.TrimSpace(t)
	v, err := strconv.ParseFloat(t, 64)
	switch {
	case err != nil || strings.ContainsAny(t, "xXpP_") || strings.EqualFold(t, "nan") || strings.Contains(strings.ToLower(t), "inf"):
		return bad("not a number")
	case math.IsNaN(v) || math.IsInf(v, 0):
		return bad("not a finite number")
	case v <= 0:
		return bad("not above zero")
	}
	b := Budget{Unit: unit, Value: v}
	if unit == "bpw" {
		b.BPW = v
		return b, nil
	}
	n := v * mult
	switch {
	case unit == "B" && v != math.Trunc(v):
		return bad("a size in bytes is a whole number")
	case n > 1<<62:
		return bad("too large")
	case n < 1:
		return bad("less than a byte")
	}
	b.Bytes = int64(n)
	return b, nil
}

func cutSuffixFold(s, suffix string) (string, bool) {
	if len(s) >= len(suffix) && strings.EqualFold(s[len(s)-len(suffix):], suffix) {
		return s[:len(s)-len(suffix)], true
	}
	return s, false
}

// String writes the budget as given: "2.6bpw", "3.1GiB".
func (b Budget) String() string {
	if b.Unit == "" {
		return "no budget"
	}
	return strconv.FormatFloat(b.Value, 'g', -1, 64) + b.Unit
}

// unitBytes is the most bytes the units of s may store under b.
func (b Budget) unitBytes(s *Sweep, params int64) (int64, error) {
	switch {
	case b.BPW > 0 && b.Bytes == 0:
		return int64(math.Min(math.Floor(b.BPW*float64(params)/8), 1<<62)), nil
	case b.Bytes > 0 && b.BPW == 0:
		return b.Bytes - s.FixedBytes, nil
	}
	return 0, fmt.Errorf("%w: give bits per weight or a size, not %s", ErrBudget, b)
}

// express writes a plan whose units store n bytes in b's unit: bits per
// weight of the units' params, or the bundle's size (n + FixedBytes).
// up rounds up at the precision shown (a bound the user must reach),
// else down.
func (b Budget) express(n, params, fixed int64, up bool) string {
	round := func(v, scale float64) float64 {
		if up {
			return math.Ceil(v*scale) / scale
		}
		return math.Floor(v*scale) / scale
	}
	if b.BPW > 0 {
		return strconv.FormatFloat(round(8*float64(n)/float64(params), 1e4), 'f', -1, 64) + "bpw"
	}
	total := n + fixed
	for _, u := range sizeUnits {
		if u.name == b.Unit && u.bytes > 1 {
			return strconv.FormatFloat(round(float64(total)/u.bytes, 1e3), 'f', -1, 64) + u.name
		}
	}
	return strconv.FormatInt(total, 10) + "B"
}
