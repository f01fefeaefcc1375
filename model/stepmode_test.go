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

// TestStepModeSeed: a chooser seeded from a warm one starts in its pick
// with no turns (only a probe pair in modeProbe/4 steps runs the other
// mode), corrects a wrong seed once it has timed the other mode modeWarm
// times, and takes turns as before when no chooser is warm to seed it.
func TestStepModeSeed(t *testing.T) {
	const fast, slow = 100 * time.Microsecond, 200 * time.Microsecond
	aloneFaster := func(a bool, _ int) time.Duration {
		if a {
			return fast
		}
		return slow
	}
	poolFaster := func(a bool, i int) time.Duration { return aloneFaster(!a, i) }
	var warm stepMode
	runModes(&warm, 100, aloneFaster)
	if !warm.warm() || !warm.pick {
		t.Fatalf("the sibling did not settle on running alone: %+v", warm)
	}

	var cold, fresh stepMode
	cold.seed(&fresh) // nothing warm: turns
	if n := runModes(&cold, 12, aloneFaster); n != 6 {
		t.Errorf("unseeded: %d of the first 12 steps alone, want the turns' 6", n)
	}

	var right stepMode
	right.seed(&fresh, &warm)
	if !right.seeded || !right.pick {
		t.Fatalf("not seeded from the warm chooser: %+v", right)
	}
	if n := runModes(&right, 14, aloneFaster); n != 14 {
		t.Errorf("seeded: %d of the first 14 steps alone, want all (no turns)", n)
	}
	if n := runModes(&right, 34, aloneFaster); n != 34-6 {
		t.Errorf("seeded: %d of steps 14–47 alone, want all but three probe pairs", n)
	}
	if !right.warm() || !right.pick {
		t.Errorf("seeded: not warm with its pick kept after 48 steps: %+v", right)
	}

	var wrong stepMode
	wrong.seed(&warm) // but at this T the pool is faster
	runModes(&wrong, 100, poolFaster)
	if n := runModes(&wrong, 640, poolFaster); n != 640*2/modeProbe {
		t.Errorf("a wrong seed: %d of 640 steps alone after it was corrected, want the %d probes", n, 640*2/modeProbe)
	}
}
