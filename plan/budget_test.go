package plan

import (
	"errors"
	"strings"
	"testing"
)

func TestParseBudget(t *testing.T) {
	good := []struct {
		in    string
		bpw   float64
		bytes int64
		str   string
	}{
		{"2.6bpw", 2.6, 0, "2.6bpw"},
		{" 4 BPW ", 4, 0, "4bpw"},
		{"3.1GiB", 0, 3_328_599_654, "3.1GiB"},
		{"850MiB", 0, 850 << 20, "850MiB"},
		{"2.5GB", 0, 2_500_000_000, "2.5GB"},
		{"900MB", 0, 900_000_000, "900MB"},
		{"900 mb", 0, 900_000_000, "900MB"},
		{"123456B", 0, 123456, "123456B"},
		{"1KiB", 0, 1024, "1KiB"},
	}
	for _, c := range good {
		b, err := ParseBudget(c.in)
		if err != nil || b.BPW != c.bpw || b.Bytes != c.bytes || b.String() != c.str {
			t.Errorf("%q: %+v (%q), %v; want bpw %g bytes %d", c.in, b, b.String(), err, c.bpw, c.bytes)
		}
	}
	bad := []struct{ in, want string }{
		{"", "no unit"},
		{"2.6", "no unit"},
		{"3.1GiBs", "no unit"},
		{"2.6 bits", "no unit"},
		{"0bpw", "not above zero"},
		{"-1GiB", "not above zero"},
		{"-0bpw", "not above zero"},
		{"NaNbpw", "not a number"},
		{"nan GiB", "not a number"},
		{"InfGiB", "not a number"},
		{"0x10B", "not a number"},
		{"1_000B", "not a number"},
		{"GiB", "not a number"},
		{"12.5B", "whole number"},
		{"0.1B", "whole number"},
		{"1e30TB", "too large"},
		{"0.0001KB", "less than a byte"},
	}
	for _, c := range bad {
		_, err := ParseBudget(c.in)
		if err == nil || !errors.Is(err, ErrBudget) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "2.6bpw") {
			t.Errorf("%q: %v, want an ErrBudget saying %q and what to give", c.in, err, c.want)
		}
	}
}
