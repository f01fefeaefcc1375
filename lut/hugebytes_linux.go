package lut

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// hugeBytes returns n zeroed bytes that owner keeps alive: on Linux an
// anonymous mapping advised to take 2 MiB pages (MADV_HUGEPAGE, as a
// bundle's mapping is: a kernel streaming its bytes then misses the TLB
// once per 2 MiB, not per 4 KiB), unmapped when owner is unreachable; a
// plain slice if the mapping fails.
func hugeBytes[T any](owner *T, n int) []byte {
	if n <= 0 {
		return nil
	}
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return make([]byte, n)
	}
	_ = unix.Madvise(b, unix.MADV_HUGEPAGE)
	runtime.AddCleanup(owner, func(b []byte) { _ = unix.Munmap(b) }, b)
	return b
}
