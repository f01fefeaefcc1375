package tensor

import "math"

// BF16ToF32 widens a bfloat16 bit pattern exactly: bf16 is the top half of an
// IEEE-754 binary32, so the conversion is a 16-bit shift.
func BF16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// F32ToBF16 rounds f to the nearest bfloat16, ties to even. NaNs stay NaN
// (quiet bit forced so that truncation cannot turn a NaN into an infinity).
func F32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 { // NaN
		return uint16(b>>16) | 0x0040
	}
	// Round to nearest even: add 0x7fff plus the lowest kept bit.
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// F16ToF32 widens an IEEE-754 binary16 bit pattern exactly, including
// subnormals, infinities and NaN payloads.
func F16ToF32(h uint16) float32 { return math.Float32frombits(f16Table[h]) }

// f16Table maps every binary16 pattern to its binary32 pattern (256 KiB),
// built once from f16ToF32Bits.
var f16Table = func() *[1 << 16]uint32 {
	var t [1 << 16]uint32
	for i := range t {
		t[i] = f16ToF32Bits(uint16(i))
	}
	return &t
}()

// f16ToF32Bits is the bit-level widening: rebias the exponent (15 → 127),
// normalise subnormals, and carry infinities and NaN payloads over.
func f16ToF32Bits(h uint16) uint32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	man := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // inf or NaN
		return sign | 0x7f800000 | man<<13
	case exp == 0 && man == 0:
		return sign
	case exp == 0: // subnormal: value man·2^-24, normalise
		e := uint32(127 - 15 + 1)
		for man&0x400 == 0 {
			man <<= 1
			e--
		}
		return sign | e<<23 | (man&0x3ff)<<13
	default:
		return sign | (exp+127-15)<<23 | man<<13
	}
}

// F32ToF16 rounds f to the nearest binary16, ties to even, with gradual
// underflow to subnormals and overflow to ±Inf. NaNs stay NaN.
func F32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	man := b & 0x7fffff
	if exp == 0xff {
		if man != 0 {
			return sign | 0x7e00 | uint16(man>>13) // quiet NaN
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		// Subnormal (or zero) result: shift the full significand right.
		if e < -10 {
			return sign // below half the smallest subnormal: rounds to 0
		}
		m := man | 0x800000
		shift := uint32(14 - e) // 13 for the mantissa narrowing + (1-e)
		half := uint32(1) << (shift - 1)
		r := m >> shift
		rem := m & (1<<shift - 1)
		if rem > half || (rem == half && r&1 == 1) {
			r++
		}
		return sign | uint16(r)
	}
	r := uint32(e)<<10 | man>>13
	rem := man & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && r&1 == 1) {
		r++ // may carry into the exponent, up to Inf: correct
	}
	return sign | uint16(r)
}

// BF16ToF32Slice widens src into dst (len(dst) ≥ len(src)).
func BF16ToF32Slice(dst []float32, src []uint16) {
	dst = dst[:len(src)]
	for i, h := range src {
		dst[i] = math.Float32frombits(uint32(h) << 16)
	}
}

// F16ToF32Slice widens src into dst (len(dst) ≥ len(src)).
func F16ToF32Slice(dst []float32, src []uint16) {
	dst = dst[:len(src)]
	t := f16Table
	for i, h := range src {
		dst[i] = math.Float32frombits(t[h])
	}
}

// F32ToBF16Slice rounds src into dst (len(dst) ≥ len(src)).
func F32ToBF16Slice(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	for i, f := range src {
		dst[i] = F32ToBF16(f)
	}
}

// F32ToF16Slice rounds src into dst (len(dst) ≥ len(src)).
func F32ToF16Slice(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	for i, f := range src {
		dst[i] = F32ToF16(f)
	}
}
