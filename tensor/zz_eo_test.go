package tensor

import "testing"

var eoKernels kernelSet

func TestZZEO(t *testing.T) {
	if eoKernels.name == "" {
		t.Skip()
	}
	saved := kern
	defer func() { kern = saved }()
	kern = &eoKernels
	for i, s := range [][3]int{{8, 32, 1}, {16, 64, 1}, {9, 100, 1}, {70, 300, 1}, {24, 2048, 1}} {
		d, x := denseCase("bf16", s[0], s[1], s[2], uint64(i))
		checkMul(t, d, x)
	}
}
