package model

// ChooserWarm reports whether s's decode-step chooser has timed both
// modes (warm_test.go).
func (s *State) ChooserWarm() bool { return s.sc.mode.warm() }

// Timed reports whether m's decode steps choose between the pool and
// running alone.
func (m *Model) Timed() bool { return m.timed }

// SetQuantSplit sets the least stage input whose rows are quantized in the
// stage's chunks (quantSplit) and returns what restores it.
func SetQuantSplit(n int) (restore func()) {
	old := quantSplit
	quantSplit = n
	return func() { quantSplit = old }
}

// SetTimed sets whether m's decode steps choose between the pool and
// running alone (false: always the pool) and returns what restores it.
func (m *Model) SetTimed(timed bool) (restore func()) {
	old := m.timed
	m.timed = timed
	return func() { m.timed = old }
}
