package model

import (
	"testing"
	"time"
)

// runModes drives m through n decode steps whose times are given by dur
// (for the step's mode and number) and returns how many ran alone.
func runModes(m *stepMode, n int, dur func(alone bool, step int) time.Duration) (alone int) {
	for i := range n {
		m.begin()
		if m.alone {
			alone++
		}
		m.end(time.Now().Add(-dur(m.alone, i)))
	}
	return alone
}

// TestStepMode: decode steps settle on the faster mode (only the probes,
// two in modeProbe, run in the other), are not moved by single outliers
// of ten times the usual time, and follow a lasting change of which mode
// is faster within a few hundred steps.
func TestStepMode(t *testing.T) {
	const pool, alone = 300 * time.Microsecond, 400 * time.Microsecond
	steady := func(a bool, i int) time.Duration {
		d := pool
		if a {
			d = alone
		}
		if i%50 == 7 { // a preempted step now and then
			d *= 10
		}
		return d
	}
	var m stepMode
	runModes(&m, 100, steady) // warm-up and settling
	if n := runModes(&m, 640, steady); n != 640*2/modeProbe {
		t.Errorf("pool faster: %d of 640 steps alone, want the %d probes", n, 640*2/modeProbe)
	}
	// The machine gets busy: now alone is faster.
	busy := func(a bool, i int) time.Duration {
		if a {
			return alone
		}
		return 2 * alone
	}
	runModes(&m, 400, busy)
	if n := runModes(&m, 640, busy); n != 640-640*2/modeProbe {
		t.Errorf("alone faster: %d of 640 steps alone, want all but the %d probes", n, 640*2/modeProbe)
	}
}
