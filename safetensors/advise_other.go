//go:build !linux

package safetensors

// adviseHuge does nothing where there is no MADV_HUGEPAGE.
func adviseHuge([]byte) {}

// dropPages does nothing off Linux.
func dropPages([]byte) {}
