//go:build race

package tensor

// raceEnabled: the race detector makes sync.Pool drop items at random, so
// allocation counts are not meaningful (see TestDenseMulNoAlloc).
const raceEnabled = true
