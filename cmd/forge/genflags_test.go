package main

import (
	"strings"
	"testing"
)

func TestUnescape(t *testing.T) {
	for in, want := range map[string]string{`a`: "a", `\n\n`: "\n\n", `x\ty`: "x\ty", `\\n`: `\n`, `\"`: `"`, `\r\n`: "\r\n"} {
		if got, err := unescape(in); err != nil || got != want {
			t.Errorf("unescape(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{`\`, `a\q`, `\x41`} {
		if _, err := unescape(in); err == nil {
			t.Errorf("unescape(%q) accepted", in)
		}
	}
}

// TestThinkBudgetFlag: auto is the reference's policy, min(6144,
// max(max-tokens − 4096, max-tokens/2)): 2048 for the default 4096 tokens.
func TestThinkBudgetFlag(t *testing.T) {
	for _, tc := range []struct {
		v    string
		max  int
		want int
	}{{"auto", 4096, 2048}, {"auto", 16384, 6144}, {"auto", 8192, 4096}, {"auto", 100, 50}, {"off", 4096, 0}, {"0", 4096, 0}, {"300", 4096, 300}} {
		if got, err := thinkBudget(tc.v, tc.max); err != nil || got != tc.want {
			t.Errorf("thinkBudget(%q, %d) = %d, %v; want %d", tc.v, tc.max, got, err, tc.want)
		}
	}
	if _, err := thinkBudget("-3", 4096); err == nil || !strings.Contains(err.Error(), "--think-budget") {
		t.Errorf("negative budget: %v", err)
	}
}
