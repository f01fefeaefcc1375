package lut

import "fmt"

// PackedLen returns the number of bytes n packed bits-bit codes take:
// ⌈n·bits/8⌉ (the stream is not padded per row, see doc.go).
func PackedLen(n, bits int) int { return int((int64(n)*int64(bits) + 7) / 8) }

// Pack writes codes into dst as one LSB-first bit stream of bits-bit codes
// (doc.go): code k occupies bits [k·bits, (k+1)·bits) of the stream, bit i
// of the stream being bit i mod 8 of dst[i/8]. Bits past the last code are
// zero. dst must hold exactly PackedLen(len(codes), bits) bytes and every
// code must be below 2^bits; Pack panics otherwise (programmer error).
func Pack(dst []byte, codes []uint8, bits int) {
	if bits < 1 || bits > 8 || len(dst) != PackedLen(len(codes), bits) {
		panic(fmt.Sprintf("lut.Pack: %d codes of %d bits into %d bytes", len(codes), bits, len(dst)))
	}
	if bits == 8 {
		copy(dst, codes)
		return
	}
	limit := uint8(1)<<bits - 1
	var acc uint32 // pending bits, LSB first
	nacc, i := 0, 0
	for k, c := range codes {
		if c > limit {
			panic(fmt.Sprintf("lut.Pack: code %d = %d does not fit %d bits", k, c, bits))
		}
		acc |= uint32(c) << nacc
		nacc += bits
		for nacc >= 8 {
			dst[i] = byte(acc)
			i++
			acc >>= 8
			nacc -= 8
		}
	}
	if nacc > 0 {
		dst[i] = byte(acc)
	}
}

// Unpack reads len(dst) codes of bits bits from the packed stream src,
// starting at code number first. It panics if src is too short.
func Unpack(dst []uint8, src []byte, bits, first int) {
	if len(dst) == 0 {
		return
	}
	if bits < 1 || bits > 8 || first < 0 || PackedLen(first+len(dst), bits) > len(src) {
		panic(fmt.Sprintf("lut.Unpack: codes [%d, %d) of %d bits from %d bytes", first, first+len(dst), bits, len(src)))
	}
	pos := int64(first) * int64(bits)
	src = src[pos/8:]
	if pos%8 == 0 {
		switch bits {
		case 8:
			copy(dst, src)
			return
		case 4:
			unpack4(dst, src)
			return
		case 2:
			unpack2(dst, src)
			return
		}
	}
	unpackBits(dst, src, bits, uint(pos%8))
}

// unpack4 reads nibbles, low nibble first, from a byte-aligned stream.
func unpack4(dst []uint8, src []byte) {
	n := len(dst) / 2
	src = src[:(len(dst)+1)/2]
	d := dst[:2*n]
	for i := range n {
		b := src[i]
		d[2*i] = b & 15
		d[2*i+1] = b >> 4
	}
	if len(dst) > 2*n {
		dst[2*n] = src[n] & 15
	}
}

// unpack2 reads 2-bit codes, lowest bits first, from a byte-aligned stream.
func unpack2(dst []uint8, src []byte) {
	n := len(dst) / 4
	d := dst[:4*n]
	for i := range n {
		b := src[i]
		d[4*i] = b & 3
		d[4*i+1] = b >> 2 & 3
		d[4*i+2] = b >> 4 & 3
		d[4*i+3] = b >> 6
	}
	if len(dst) > 4*n {
		unpackBits(dst[4*n:], src[n:], 2, 0)
	}
}

// unpackBits is the general decoder: a bit buffer refilled a byte at a
// time, starting skip bits into src[0].
func unpackBits(dst []uint8, src []byte, bits int, skip uint) {
	mask := uint32(1)<<bits - 1
	acc := uint32(src[0]) >> skip
	nacc := 8 - int(skip)
	i := 1
	for k := range dst {
		if nacc < bits {
			acc |= uint32(src[i]) << nacc
			i++
			nacc += 8
		}
		dst[k] = uint8(acc & mask)
		acc >>= bits
		nacc -= bits
	}
}
