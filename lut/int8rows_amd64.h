// The group sums shared by the multi-row int8 kernels (int8rows_amd64.s,
// int8rows1_amd64.s); include reduce_amd64.h first.

// GROUPT sums x row t's staged lanes of the group's eight index rows
// (frame t·512 …) by TREE8 and stores them at R13, then moves R13 on by
// the output row stride R11.
#define GROUPT(t) \
	VMOVUPS (t*512)(SP), Z0; \
	VMOVUPS (t*512+64)(SP), Z1; \
	VMOVUPS (t*512+128)(SP), Z2; \
	VMOVUPS (t*512+192)(SP), Z3; \
	VMOVUPS (t*512+256)(SP), Z4; \
	VMOVUPS (t*512+320)(SP), Z5; \
	VMOVUPS (t*512+384)(SP), Z6; \
	VMOVUPS (t*512+448)(SP), Z7; \
	TREE8; \
	VMOVUPS Y0, (R13); \
	ADDQ R11, R13
