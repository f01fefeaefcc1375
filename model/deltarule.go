package model

// The gated delta rule of docs/model.md §8 for one value head. S is [dk][dv]
// (row = key dimension), q and k are L2-normalised (q already scaled by
// 1/√dk), g ≤ 0 is the log decay and beta ∈ (0,1) the write strength.

// deltaStep is the recurrent form (docs/model.md §8.1) for one token:
//
//	S ← e^g·S;  u = β(v − Sᵀk);  S ← S + k uᵀ;  o = Sᵀq
//
// w is dv floats of scratch. o is written, not accumulated.
func deltaStep(S, q, k, v []float32, g, beta float32, o, w []float32) {
	deltaStepFrom(S, S, q, k, v, g, beta, o, w)
}

// deltaStepFrom is deltaStep from the state src into S (src = S: in
// place): S ← e^g·src first, then as deltaStep; src is only read (the
// first row of a verify block reads the committed state and writes the
// working one, verify.go).
func deltaStepFrom(S, src, q, k, v []float32, g, beta float32, o, w []float32) {
	alpha := decay(float64(g))
	if deltaStepFast(S, src, q, k, v, alpha, beta, o) {
		return
	}
	deltaStepGo(S, src, q, k, v, alpha, beta, o, w)
}

// deltaStepGo is deltaStepFrom's scalar recurrence, with α = e^g (the
// reference twin of deltaStepFast).
func deltaStepGo(S, src, q, k, v []float32, alpha, beta float32, o, w []float32) {
	dv := len(v)
	clear(w)
	for i, ki := range k {
		row, from := S[i*dv:(i+1)*dv], src[i*dv:(i+1)*dv]
		for j := range row {
			row[j] = from[j] * alpha
			w[j] += ki * row[j]
		}
	}
	betaDiff(w, v, w, beta) // u, in place of w
	clear(o)
	for i, ki := range k {
		row := S[i*dv : (i+1)*dv]
		qi := q[i]
		for j := range row {
			row[j] += ki * w[j]
			o[j] += qi * row[j]
		}
	}
}

// deltaRow is one row of a verify block for one value head: its q and k
// (dk floats), v and output o (dv), log decay g and write strength β.
type deltaRow struct {
	q, k, v, o []float32
	g, beta    float32
}

// deltaRows runs rows in turn, the first from the state src into S, the
// others on S in place, writing each row's o: deltaStepFrom of each, the
// same bits, with fewer passes over the state where deltaRowsFast runs (a
// verify block of T rows: T + 1 passes instead of 2T). w and u are dv
// floats of scratch.
func deltaRows(S, src []float32, rows []deltaRow, w, u []float32) {
	if deltaRowsFast(S, src, rows, w, u) {
		return
	}
	for _, r := range rows {
		deltaStepFrom(S, src, r.q, r.k, r.v, r.g, r.beta, r.o, w)
		src = S
	}
}

// betaDiff sets u = β(v − w), the update's u (u may be w).
func betaDiff(u, v, w []float32, beta float32) {
	for j := range u {
		u[j] = beta * (v[j] - w[j])
	}
}

// chunkScratch holds one worker's buffers for deltaChunk.
type chunkScratch struct {
	C    int          // the longest chunk
	c    []float64    // [C] cumulative log decay c_i
	kk   []float32    // [C][C] β_i (k_i·k_j) e^{c_i−c_j} = A_ij, j < i
	qk   []float32    // [C][C] (q_i·k_j) e^{c_i−c_j}, j ≤ i
	u    []float32    // [C][dv] solved U
	a    []float32    // [C] the coefficients of one row's sum of U rows (rowsAxpy)
	f    []float32    // [dk][C] the final update's coefficients k_i[r]·e^{c_n−c_i}
	dots chunkDotBufs // chunkDots' buffers (none without its vector loops)
}

func newChunkScratch(C, dv int) *chunkScratch {
	return &chunkScratch{
		C: C, c: make([]float64, C), kk: make([]float32, C*C), qk: make([]float32, C*C),
		u: make([]float32, C*dv), a: make([]float32, C),
	}
}

// deltaChunk applies the chunked form (docs/model.md §8.2) to n ≤ C tokens whose q, k, v
// rows are Q [n][dk], K [n][dk], V [n][dv]; it writes O [n][dv] and advances
// S in place from S₀ to S_C:
//
//	(I + A) U = BV − BEK S₀,  A_ij = β_i (k_i·k_j) e^{c_i−c_j} (j < i)
//	O   = E Q S₀ + ((Q Kᵀ) ⊙ Γ) U
//	S_C = e^{c_n} S₀ + (diag(e^{c_n−c_i}) K)ᵀ U
//
// Every exponent is a difference c_i − c_j with j ≤ i formed before
// exponentiating (§11.2), so each factor lies in (0, 1].
func deltaChunk(S, Q, K, V []float32, g, beta []float32, O []float32, sc *chunkScratch) {
	n := len(g)
	dk := len(S) / (len(V) / n)
	dv := len(V) / n
	c := sc.c[:n]
	acc := 0.0
	for i := range n {
		acc += float64(g[i])
		c[i] = acc
	}
	np := (n + 15) &^ 15
	dkk, dqk, fast := chunkDots(&sc.dots, sc.C, K, Q, n, dk) // [n][np] each
	for i := range n {
		ki, qi := K[i*dk:(i+1)*dk], Q[i*dk:(i+1)*dk]
		for j := 0; j <= i; j++ {
			var kdot, qdot float32
			if fast {
				kdot, qdot = dkk[i*np+j], dqk[i*np+j]
			} else {
				kj := K[j*dk : (j+1)*dk]
				kdot, qdot = dot(ki, kj), dot(qi, kj)
			}
			gamma := decay(c[i] - c[j]) // Γ_ij, exponent ≤ 0
			sc.kk[i*n+j] = beta[i] * kdot * gamma
			sc.qk[i*n+j] = qdot * gamma
		}
	}
	U := sc.u[:n*dv]
	a := sc.a[:n]
	for i := range n {
		ui, oi := U[i*dv:(i+1)*dv], O[i*dv:(i+1)*dv]
		ki, qi := K[i*dk:(i+1)*dk], Q[i*dk:(i+1)*dk]
		// ui = S₀ᵀk_i, oi = S₀ᵀq_i (one pass over S₀).
		if !s0Dots(ui, oi, S, ki, qi) {
			clear(ui)
			clear(oi)
			for r := range dk {
				row := S[r*dv : (r+1)*dv]
				axpy(ui, ki[r], row)
				axpy(oi, qi[r], row)
			}
		}
		ec := decay(c[i])
		bi := beta[i]
		vi := V[i*dv : (i+1)*dv]
		for j := range ui {
			ui[j] = bi * (vi[j] - ec*ui[j])
			oi[j] *= ec
		}
		// Forward substitution: u_i −= Σ_{j<i} A_ij u_j.
		for j := range i {
			a[j] = -sc.kk[i*n+j]
		}
		rowsAxpy(ui, a[:i], U)
		// o_i += Σ_{j≤i} (q_i·k_j) e^{c_i−c_j} u_j.
		rowsAxpy(oi, sc.qk[i*n:i*n+i+1], U)
	}
	last := c[n-1]
	eLast := decay(last)
	for i := range n {
		a[i] = decay(last - c[i])
	}
	if cap(sc.f) < dk*n {
		sc.f = make([]float32, dk*len(sc.a))
	}
	f := sc.f[:dk*n]
	for r := range dk {
		for i := range n {
			f[r*n+i] = K[i*dk+r] * a[i]
		}
	}
	if stateUpdate(S, eLast, f, U, n) {
		return
	}
	for r := range dk {
		row := S[r*dv : (r+1)*dv]
		for j := range row {
			row[j] *= eLast
		}
		rowsAxpy(row, f[r*n:(r+1)*n], U)
	}
}

// rowsAxpy adds Σ_j a[j]·X_j to y, X_j the rows of X [·][len(y)], each
// term a product and a sum in j order: axpy's bits, one call after
// another (rowsAxpyFast keeps y in registers meanwhile).
func rowsAxpy(y, a, X []float32) {
	if rowsAxpyFast(y, a, X) {
		return
	}
	dv := len(y)
	for j, aj := range a {
		axpy(y, aj, X[j*dv:(j+1)*dv])
	}
}
