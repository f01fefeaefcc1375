package model

// ChooserWarm reports whether s's decode-step chooser has timed both
// modes (warm_test.go).
func (s *State) ChooserWarm() bool { return s.sc.mode.warm() }

// Timed reports whether m's decode steps choose between the pool and
// running alone.
func (m *Model) Timed() bool { return m.timed }
