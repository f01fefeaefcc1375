package progress

import (
	"strings"
	"testing"
)

// TestPlainLines: without a terminal, lines appear at 10% steps and at the
// end, never once per update.
func TestPlainLines(t *testing.T) {
	var b strings.Builder
	r := newReporter("job", false, &b, false)
	for i := int64(0); i <= 1000; i++ {
		r.Set(i, 1000)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) < 10 || len(lines) > 12 {
		t.Fatalf("%d lines:\n%s", len(lines), b.String())
	}
	if !strings.Contains(lines[len(lines)-1], "100.0% (1000 of 1000)") {
		t.Errorf("last line %q", lines[len(lines)-1])
	}
}

func TestBar(t *testing.T) {
	var b strings.Builder
	r := newReporter("job", true, &b, true)
	r.Set(5, 10)
	r.Set(10, 10)
	if !strings.Contains(b.String(), "job") {
		t.Errorf("bar output %q", b.String())
	}
}
