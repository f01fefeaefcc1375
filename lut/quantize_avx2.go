//go:build goexperiment.simd && amd64

package lut

import "simd/archsimd"

// quantize8 is quantizeRow's AVX2 twin (quantizeFast is the AVX-512 one)
// for rows of whole steps (len(x) a multiple of 128; ok is false
// otherwise, or without AVX2): the same float32 products and
// round-half-even, so the same codes, scales and k. A vector of 8 columns
// is one scale group's columns in one step. The vector passes (group
// maxima; codes) and the scalar work between them (d, 1/d, the byte
// scatter into phase layout, k) are kept apart, with the upper register
// state cleared before the scalar part, since scalar float code after
// 256-bit code is slow on some x86 hosts.
func quantize8(q []int8, d []float32, x []float32) (k float32, ok bool) {
	if !int8A2 || len(x)%int8Step != 0 || len(q) != len(x) {
		return 0, false
	}
	abs := archsimd.BroadcastUint32x8(0x7fffffff)
	var mx [16][8]float32      // per group, the lanes' maxima
	var inv [16][8]float32     // per group, 127/max broadcast
	var codes [int8Block]int32 // the block's codes, in column order
	for b := 0; 16*b < len(d); b++ {
		c0, c1 := b*int8Block, min(len(x), (b+1)*int8Block)
		for g := range mx {
			var m archsimd.Float32x8
			for s := c0; s < c1; s += int8Step {
				m = m.Max(archsimd.LoadFloat32x8((*[8]float32)(x[s+8*g:])).AsUint32x8().And(abs).AsFloat32x8())
			}
			m.Store(&mx[g])
		}
		archsimd.ClearAVXUpperBits()
		for g := range mx {
			a := mx[g][0]
			for _, v := range mx[g][1:] {
				a = max(a, v)
			}
			d[16*b+g] = a / 127
			r := 127 / max(a, int8Tiny)
			for i := range inv[g] {
				inv[g][i] = r
			}
		}
		for s := c0; s < c1; s += int8Step {
			for g := range inv {
				c := archsimd.LoadFloat32x8((*[8]float32)(x[s+8*g:])).Mul(archsimd.LoadFloat32x8(&inv[g]))
				c.RoundToEven().ConvertToInt32().Store((*[8]int32)(codes[s-c0+8*g:]))
			}
		}
		archsimd.ClearAVXUpperBits()
		var sum [16]int32
		for s := c0; s < c1; s += int8Step {
			cs, qs := codes[s-c0:][:int8Step], q[s:][:int8Step]
			for j, c := range cs {
				sum[j/8] += c
				qs[j%2*64+j/2] = int8(c)
			}
		}
		for g, s := range sum {
			k += float32(float32(128*s) * d[16*b+g])
		}
	}
	return k, true
}
