//go:build !linux

package safetensors

// adviseHuge does nothing where there is no MADV_HUGEPAGE.
func adviseHuge([]byte) {}
