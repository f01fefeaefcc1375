// The transposing lane reduction shared by the T = 1 kernels
// (rows_amd64.s, int8_amd64.s): a file that includes it gets its own
// copy of the grpIdx table.

// HALVES adds the 256-bit halves of a and b: d = [a.lo + a.hi, b.lo +
// b.hi] (128-bit quarters: VSHUFF32X4 $0x44 takes q0 q1 of each, $0xEE
// q2 q3), lane k of a's half being a[k] + a[k+8] as in HSUM.
#define HALVES(a, b, d) \
	VSHUFF32X4 $0x44, b, a, Z28; \
	VSHUFF32X4 $0xEE, b, a, Z29; \
	VADDPS Z29, Z28, d

// TREE8 leaves in Y0 the eight lane sums of Z0–Z7 in row order, by a
// transposing tree that makes exactly the additions of HSUM in the same
// order (lane l + lane l+8, then + the lane 4 above, then adjacent pairs
// and the two pair sums, as VHADDPS twice; sum16 in int8act.go is its
// portable twin): 256-bit halves, then 128-bit quarters, then lane pairs.
// The last level leaves row k at the lane grpIdx lists. It uses Z16, Z17,
// Z28 and Z29 as scratch and leaves Z1–Z7 clobbered.
#define TREE8 \
	HALVES(Z0, Z1, Z0); HALVES(Z2, Z3, Z2); HALVES(Z4, Z5, Z4); HALVES(Z6, Z7, Z6); \
	VSHUFF32X4 $0x88, Z2, Z0, Z16; VSHUFF32X4 $0xDD, Z2, Z0, Z17; VADDPS Z17, Z16, Z0; \
	VSHUFF32X4 $0x88, Z6, Z4, Z16; VSHUFF32X4 $0xDD, Z6, Z4, Z17; VADDPS Z17, Z16, Z4; \
	VSHUFPS $0x88, Z4, Z0, Z16; VSHUFPS $0xDD, Z4, Z0, Z17; VADDPS Z17, Z16, Z0; \
	VSHUFPS $0x88, Z0, Z0, Z16; VSHUFPS $0xDD, Z0, Z0, Z17; VADDPS Z17, Z16, Z0; \
	VMOVUPS grpIdx<>(SB), Z1; \
	VPERMPS Z0, Z1, Z0

// grpIdx: after TREE8's last level quarter l holds rows [l, l+4, l, l+4].
DATA grpIdx<>+0(SB)/4, $0
DATA grpIdx<>+4(SB)/4, $4
DATA grpIdx<>+8(SB)/4, $8
DATA grpIdx<>+12(SB)/4, $12
DATA grpIdx<>+16(SB)/4, $1
DATA grpIdx<>+20(SB)/4, $5
DATA grpIdx<>+24(SB)/4, $9
DATA grpIdx<>+28(SB)/4, $13
DATA grpIdx<>+32(SB)/4, $0
DATA grpIdx<>+36(SB)/4, $0
DATA grpIdx<>+40(SB)/4, $0
DATA grpIdx<>+44(SB)/4, $0
DATA grpIdx<>+48(SB)/4, $0
DATA grpIdx<>+52(SB)/4, $0
DATA grpIdx<>+56(SB)/4, $0
DATA grpIdx<>+60(SB)/4, $0
GLOBL grpIdx<>(SB), RODATA|NOPTR, $64
