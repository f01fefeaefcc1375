//go:build race

package lut

// raceEnabled: the race detector makes sync.Pool drop items at random, so
// allocation counts are not meaningful (see TestMulNoAlloc).
const raceEnabled = true
