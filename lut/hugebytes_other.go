//go:build !linux

package lut

// hugeBytes returns n zeroed bytes (a plain slice off Linux).
func hugeBytes[T any](owner *T, n int) []byte { return make([]byte, n) }
