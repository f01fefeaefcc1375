package quant

// linalg is the small set of dense linear-algebra kernels the full
// Hessian, GPTQ and OutputSNR need. Two implementations exist, chosen by
// build tag (doc.go):
//
//   - goLA (la_go.go, always compiled; the default): gonum's pure-Go
//     LAPACK for the float64 factorizations and forge's float32 GEMM
//     (tensor.Dense) for the big float32 products;
//   - blasLA (la_openblas.go, build tag openblas, needs cgo): a direct
//     binding to OpenBLAS (cblas_dsyrk, cblas_sgemm, cblas_dgemm, dpotrf_,
//     dtrtri_).
//
// la is the backend the package uses. All matrices are row-major with
// the leading dimension given or, where none is, contiguous.
type linalg interface {
	// name identifies the backend in test and benchmark output.
	name() string
	// syrk adds the lower triangle (j ≤ i, diagonal included) of xᵀx,
	// x [k][n] float32, into c [n][n] float64. Whether products and partial
	// sums are rounded to float32 or float64 is the backend's (Hessian's
	// doc comment states both).
	syrk(c []float64, x []float32, k, n int)
	// cholInv overwrites the lower triangle of the symmetric positive
	// definite a [n][n] (only its lower triangle is read) with L⁻¹, where
	// a = L·Lᵀ is its Cholesky factorization (LAPACK dpotrf, then dtrtri),
	// in float64, and zeroes the strict upper triangle. It reports false
	// when a is not positive definite (a is then garbage).
	cholInv(a []float64, n int) bool
	// gemmSub sets c[i][j] −= Σ_l a[i][l]·b[l][j] for i < m, j < n, in
	// float32: c [m][n] with row stride ldc, a [m][k] with row stride lda,
	// b [k][n] float64 with row stride ldb (rounded to float32 first).
	gemmSub(c []float32, ldc int, a []float32, lda int, b []float64, ldb, m, n, k int)
	// dgemm sets c = a·b in float64: a [m][k], b [k][n], c [m][n], all
	// contiguous.
	dgemm(c, a, b []float64, m, n, k int)
}
