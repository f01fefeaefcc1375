//go:build goexperiment.simd && amd64

package membw

import "simd/archsimd"

// sum adds every word of b (wrapping) with the widest vectors the CPU has.
func sum(b []uint64) uint64 {
	switch {
	case archsimd.X86.AVX512():
		return sum512(b)
	case archsimd.X86.AVX2():
		return sum256(b)
	}
	return sumGo(b)
}

// sum512 reads 256 bytes per iteration into four 512-bit accumulators.
func sum512(b []uint64) uint64 {
	var a0, a1, a2, a3 archsimd.Uint64x8
	i := 0
	for ; i+32 <= len(b); i += 32 {
		c := b[i : i+32 : i+32]
		a0 = a0.Add(archsimd.LoadUint64x8Slice(c[0:]))
		a1 = a1.Add(archsimd.LoadUint64x8Slice(c[8:]))
		a2 = a2.Add(archsimd.LoadUint64x8Slice(c[16:]))
		a3 = a3.Add(archsimd.LoadUint64x8Slice(c[24:]))
	}
	var t [8]uint64
	a0.Add(a1).Add(a2.Add(a3)).Store(&t)
	return t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7] + sumGo(b[i:])
}

// sum256 reads 128 bytes per iteration into four 256-bit accumulators.
func sum256(b []uint64) uint64 {
	var a0, a1, a2, a3 archsimd.Uint64x4
	i := 0
	for ; i+16 <= len(b); i += 16 {
		c := b[i : i+16 : i+16]
		a0 = a0.Add(archsimd.LoadUint64x4Slice(c[0:]))
		a1 = a1.Add(archsimd.LoadUint64x4Slice(c[4:]))
		a2 = a2.Add(archsimd.LoadUint64x4Slice(c[8:]))
		a3 = a3.Add(archsimd.LoadUint64x4Slice(c[12:]))
	}
	var t [4]uint64
	a0.Add(a1).Add(a2.Add(a3)).Store(&t)
	return t[0] + t[1] + t[2] + t[3] + sumGo(b[i:])
}
