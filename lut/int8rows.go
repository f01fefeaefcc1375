package lut

// Several rows of x at once (int8rows_amd64.s, int8rows1_amd64.s,
// vec2rows_amd64.s; the AVX2 kernels in int8_avx2_amd64.s): a verify
// block of speculative decoding, or the decode steps of several
// sequences, reads each weight once for up to int8Chunk rows of x instead
// of once per row. The kernels take x interleaved by step, so that each
// looked-up step of codes meets every row at fixed offsets; every row
// gets the one-row kernels' bits (TestInt8RowsMatchOneRow).

// int8Chunk is the most rows of x the multi-row kernel takes at once.
const int8Chunk = 8

// interleaveRow lays row t of q out for the multi-row kernel, by chunks
// of int8Chunk rows: chunk c (rows t0 = c·int8Chunk …, T of them) holds
// step s of its row r at qi[t0·steps·128 + (s·T + r)·128] and block b's
// scales at di[t0·nb + (b·T + r)·16]. PrepareInput makes room for it
// only for several rows and where the kernel runs.
func (q *Int8Input) interleaveRow(t, steps, nb int) {
	t0 := t / int8Chunk * int8Chunk
	T, r := min(int8Chunk, q.rows-t0), t-t0
	qc, dc := q.qi[t0*steps*int8Step:], q.di[t0*nb:]
	src, ds := q.q[t*steps*int8Step:], q.d[t*nb:]
	for s := range steps {
		copy(qc[(s*T+r)*int8Step:][:int8Step], src[s*int8Step:][:int8Step])
	}
	for b := range nb / 16 {
		copy(dc[(b*T+r)*16:][:16], ds[b*16:][:16])
	}
}
