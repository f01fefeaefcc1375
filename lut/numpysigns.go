package lut

import "math/bits"

// NumpySigns sets dst to the signs numpy draws with
//
//	np.random.default_rng(seed).choice([-1, 1], len(dst))
//
// for a non-negative integer seed, value for value (default_rng is a
// Generator over PCG64; checked against numpy 1.24 by
// testdata/numpy-signs.json, made by scripts/numpy-signs-golden.py). The
// reference pipeline draws its online Hadamard rotation's signs so
// (docs/ane.md §3.3); NewHadamardSigns(width, seed, SignsNumpy) uses them.
// It is a compatibility contract, so every step is spelled out:
//
//  1. SeedSequence(seed) (numpy/random/bit_generator.pyx): the entropy is
//     the seed as little-endian 32-bit words ([0] for 0; one word below
//     2³², else two), mixed into a pool of 4 words by hashmix and mix
//     with 32-bit wrapping arithmetic:
//
//     hashmix(v): v ^= c; c *= 0x931e8875; v *= c; v ^= v >> 16   (c starts at 0x43b0d7e5)
//     mix(x, y):  r = 0xca01f9dd·x − 0x4973f715·y; r ^= r >> 16
//     pool[i] = hashmix(entropy[i] or 0) for i = 0…3, then for every
//     ordered pair src ≠ dst: pool[dst] = mix(pool[dst], hashmix(pool[src])).
//
//  2. generate_state(4, uint64): 8 words w_k = pool[k mod 4] hashed with a
//     second constant (v = w ^ c; c *= 0x58f38ded; v *= c; v ^= v >> 16,
//     c starting at 0x8b51f9dd), paired little-endian into
//     s_i = w_{2i} | w_{2i+1}<<32.
//
//  3. PCG64(seed) (numpy/random/_pcg64.pyx, pcg64.h): a 128-bit LCG
//     state ← state·0x2360ed051fc65da4_4385df649fccf645 + inc seeded by
//     pcg_setseq_128_srandom_r with initstate = s₀<<64 | s₁ and
//     initseq = s₂<<64 | s₃ (the first word of each pair is the high
//     half): inc = initseq<<1 | 1, state = 0, step, state += initstate,
//     step.
//
//  4. Each 64-bit output (pcg64_random_r, XSL-RR) steps first, then
//     returns rotr64(hi ^ lo, hi >> 58) of the new state (hi, lo its
//     halves).
//
//  5. Generator.choice(a, n) with replace and no p draws indices
//     integers(0, 2, n, dtype=int64): random_bounded_uint64_fill with
//     range 1, which for a range below 2³² takes Lemire's method on
//     32-bit draws, m = u32·2 and index m >> 32 (the top bit of u32),
//     rejecting while m mod 2³² < (2³² − 2) mod 2 = 0: never. The 32-bit
//     draws (pcg64_next32) halve each 64-bit output, low half first, then
//     the high half. So output k gives d_{2k} from its bit 31 and
//     d_{2k+1} from its bit 63, a set bit meaning index 1, a[1] = +1, a
//     clear one a[0] = −1.
//
// Sources: numpy's reference pages for SeedSequence
// (numpy.org/doc/stable/reference/random/bit_generators/generated/numpy.random.SeedSequence.html),
// PCG64 (…/random/bit_generators/pcg64.html), Generator.choice and
// Generator.integers (…/random/generated/numpy.random.Generator.integers.html)
// and their implementations named above (bit_generator.pyx, pcg64.h,
// distributions.c's buffered_bounded_lemire_uint32); D. Lemire, "Fast
// random integer generation in an interval", arXiv:1805.10941. Each step
// was checked against numpy's own values (generate_state, random_raw,
// choice), which testdata/numpy-signs.json records.
func NumpySigns(dst []int8, seed uint64) {
	g := newNumpyPCG64(seed)
	for j := 0; j < len(dst); j += 2 {
		o := g.next()
		dst[j] = signOf(o >> 31 & 1)
		if j+1 < len(dst) {
			dst[j+1] = signOf(o >> 63)
		}
	}
}

// signOf maps choice's index bit to a = [−1, +1].
func signOf(bit uint64) int8 { return int8(2*bit) - 1 }

// numpy's SeedSequence constants (numpy/random/bit_generator.pyx).
const (
	ssPoolSize = 4
	ssInitA    = 0x43b0d7e5
	ssMultA    = 0x931e8875
	ssInitB    = 0x8b51f9dd
	ssMultB    = 0x58f38ded
	ssMixMultL = 0xca01f9dd
	ssMixMultR = 0x4973f715
	ssXShift   = 16
)

// PCG64's multiplier PCG_DEFAULT_MULTIPLIER_128, high and low halves.
const pcgMultHi, pcgMultLo = 0x2360ed051fc65da4, 0x4385df649fccf645

// numpySeedState returns SeedSequence(seed).generate_state(4, np.uint64)
// (steps 1 and 2 of NumpySigns).
func numpySeedState(seed uint64) [4]uint64 {
	entropy := []uint32{uint32(seed)}
	if seed>>32 != 0 {
		entropy = append(entropy, uint32(seed>>32))
	}
	c := uint32(ssInitA)
	hashmix := func(v uint32) uint32 {
		v ^= c
		c *= ssMultA
		v *= c
		return v ^ v>>ssXShift
	}
	mix := func(x, y uint32) uint32 {
		r := ssMixMultL*x - ssMixMultR*y
		return r ^ r>>ssXShift
	}
	var pool [ssPoolSize]uint32
	for i := range pool {
		var e uint32
		if i < len(entropy) {
			e = entropy[i]
		}
		pool[i] = hashmix(e)
	}
	for src := range pool {
		for dst := range pool {
			if src != dst {
				pool[dst] = mix(pool[dst], hashmix(pool[src]))
			}
		}
	}
	var s [4]uint64
	c = ssInitB
	for k := range 2 * len(s) {
		v := pool[k%ssPoolSize] ^ c
		c *= ssMultB
		v *= c
		v ^= v >> ssXShift
		s[k/2] |= uint64(v) << (32 * (k % 2))
	}
	return s
}

// numpyPCG64 is numpy's PCG64 bit generator (steps 3 and 4 of
// NumpySigns): a 128-bit LCG with XSL-RR output.
type numpyPCG64 struct {
	hi, lo       uint64 // state
	incHi, incLo uint64 // increment, odd
}

func newNumpyPCG64(seed uint64) *numpyPCG64 {
	s := numpySeedState(seed)
	g := &numpyPCG64{incHi: s[2]<<1 | s[3]>>63, incLo: s[3]<<1 | 1}
	g.step()
	var carry uint64
	g.lo, carry = bits.Add64(g.lo, s[1], 0)
	g.hi, _ = bits.Add64(g.hi, s[0], carry)
	g.step()
	return g
}

// step advances the state: state = state·mult + inc (mod 2¹²⁸).
func (g *numpyPCG64) step() {
	hi, lo := bits.Mul64(g.lo, pcgMultLo)
	hi += g.hi*pcgMultLo + g.lo*pcgMultHi
	var carry uint64
	g.lo, carry = bits.Add64(lo, g.incLo, 0)
	g.hi, _ = bits.Add64(hi, g.incHi, carry)
}

// next returns the next 64-bit output (pcg64_random_r).
func (g *numpyPCG64) next() uint64 {
	g.step()
	return bits.RotateLeft64(g.hi^g.lo, -int(g.hi>>58))
}
