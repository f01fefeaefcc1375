//go:build !(goexperiment.simd && amd64)

package lut

import "forge/tensor"

// Without GOEXPERIMENT=simd on amd64 the int8 activations run on the
// portable twin (int8RowGo) alone.
const (
	int8Ready = false
	int8A2    = false
)

func (m *Matrix) int8Kernel(y []float32, qx []int8, dx []float32, qh []int32, r, r1 int) int {
	return r
}

func quantizeFast(q []int8, d []float32, qs []int32, x []float32) (float32, bool) {
	return 0, false
}

func (m *Matrix) int8RowsT(dst *tensor.Matrix, q *Int8Input, r0, r1 int) bool { return false }

func scaleOut8(ys, ss []float32, c, k float32) int { return 0 }

func vertStripFast(dst, rows []byte, n int) bool { return false }

func (m *Matrix) vertRow(y []float32, q *Int8Input, t, r0, r1 int) bool { return false }
