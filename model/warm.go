package model

// Warm readies s for the calls a reply makes, then resets it: decode
// steps until s's chooser between the pool and running alone has timed
// both modes (stepMode; one step where the model does not choose), then,
// when rows > 1, a verify block of rows rows that it drops. What those
// calls pay only the first time then stays out of a reply's tokens: each
// matrix's tiles are made by its first int8 product (lut: a second copy
// of the codes), s's buffers grow to their sizes for one and for rows
// rows (first touches of fresh memory, slow on the VM of BENCHMARKS.md),
// and the chooser's turns, which cost forge-tiny's first steps ~2× where
// the pool loses. A fresh process's first verify block of forge-tiny took
// 0.85–1.4 ms against ~280 µs later, its first steps 320–520 µs against
// 92–97 (BENCHMARKS.md, issue 14). llama.cpp likewise runs a warm-up
// decode when it loads a model.
//
// Only s's buffers and choosers outlive Warm: it leaves s empty, at
// position 0, as Reset does. rows is capped at 17 (a draft of 16 and
// its anchor) and by the context.
func (m *Model) Warm(s *State, rows int) {
	s.Reset()
	steps := 1
	if m.timed {
		steps = 4*modeWarm + 4
	}
	if c := m.cfg.MaxContext; c > 0 {
		steps = min(steps, c)
		rows = min(rows, c)
	}
	tok := []int{0}
	for range steps {
		m.Forward(s, tok)
		if !m.timed || s.sc.mode.warm() {
			break
		}
	}
	s.Reset()
	if rows = min(rows, maxVerify); rows > 1 {
		blk := make([]int, rows)
		if _, err := m.Verify(s, blk); err != nil {
			panic("model: Warm: " + err.Error()) // token 0 at position 0: cannot fail
		}
		s.Commit(0)
	}
	s.Reset()
}
