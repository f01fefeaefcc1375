//go:build openblas && cgo

package quant

/*
#cgo LDFLAGS: -lopenblas
#include <stddef.h>
#include <cblas.h>

// LAPACK's Fortran entry points, exported by Debian's libopenblas (which
// ships no lapacke.h). LP64: Fortran INTEGER is int. The trailing size_t
// arguments are the hidden lengths of the CHARACTER arguments that
// gfortran-compiled LAPACK expects; OpenBLAS's own C implementations of
// these two routines ignore them.
void dpotrf_(const char *uplo, const int *n, double *a, const int *lda, int *info, size_t);
void dtrtri_(const char *uplo, const char *diag, const int *n, double *a, const int *lda, int *info, size_t, size_t);

static int forge_dpotrf_u(int n, double *a) {
	int info = 0;
	dpotrf_("U", &n, a, &n, &info, 1);
	return info;
}

static int forge_dtrtri_un(int n, double *a) {
	int info = 0;
	dtrtri_("U", "N", &n, a, &n, &info, 1, 1);
	return info;
}
*/
import "C"

import (
	"fmt"
	"math"
	"unsafe"
)

// la is OpenBLAS in builds with the openblas tag.
var la linalg = blasLA{}

// blasLA is the OpenBLAS backend: float64 throughout except gemmSub
// (cblas_sgemm, as the pure-Go backend's float32 GEMM).
type blasLA struct{}

func (blasLA) name() string { return "openblas" }

// cint converts a dimension to a C int, panicking past int32 (programmer
// error: LP64 BLAS cannot address it).
func cint(v int) C.int {
	if v < 0 || v > math.MaxInt32 {
		panic(fmt.Sprintf("quant: dimension %d does not fit a BLAS int", v))
	}
	return C.int(v)
}

// syrk widens x to float64 and calls cblas_dsyrk (row-major, lower,
// c += xᵀx): exact products (24-bit significands) and float64 sums.
func (blasLA) syrk(c []float64, x []float32, k, n int) {
	if k == 0 || n == 0 {
		return
	}
	w := make([]float64, k*n) // [k][n]
	for i, v := range x[:k*n] {
		w[i] = float64(v)
	}
	C.cblas_dsyrk(C.CblasRowMajor, C.CblasLower, C.CblasTrans, cint(n), cint(k),
		1, (*C.double)(unsafe.Pointer(&w[0])), cint(n),
		1, (*C.double)(unsafe.Pointer(&c[0])), cint(n))
}

// cholInv: a row-major lower triangle is LAPACK's (column-major) upper
// one, and row-major L = (column-major U)ᵀ; so dpotrf("U") gives a = L·Lᵀ
// and dtrtri("U", "N") inverts it in place to L⁻¹.
func (blasLA) cholInv(a []float64, n int) bool {
	if n == 0 {
		return true
	}
	zeroUpper(a, n)
	p := (*C.double)(unsafe.Pointer(&a[0]))
	return C.forge_dpotrf_u(cint(n), p) == 0 && C.forge_dtrtri_un(cint(n), p) == 0
}

// gemmSub rounds b to float32 and calls cblas_sgemm with α = −1, β = 1.
func (blasLA) gemmSub(c []float32, ldc int, a []float32, lda int, b []float64, ldb, m, n, k int) {
	if m == 0 || n == 0 || k == 0 {
		return
	}
	b32 := make([]float32, k*n) // [k][n]
	for l := range k {
		for j, v := range b[l*ldb : l*ldb+n] {
			b32[l*n+j] = float32(v)
		}
	}
	C.cblas_sgemm(C.CblasRowMajor, C.CblasNoTrans, C.CblasNoTrans, cint(m), cint(n), cint(k),
		-1, (*C.float)(unsafe.Pointer(&a[0])), cint(lda),
		(*C.float)(unsafe.Pointer(&b32[0])), cint(n),
		1, (*C.float)(unsafe.Pointer(&c[0])), cint(ldc))
}

// dgemm is cblas_dgemm.
func (blasLA) dgemm(c, a, b []float64, m, n, k int) {
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		clear(c[:m*n])
		return
	}
	C.cblas_dgemm(C.CblasRowMajor, C.CblasNoTrans, C.CblasNoTrans, cint(m), cint(n), cint(k),
		1, (*C.double)(unsafe.Pointer(&a[0])), cint(k),
		(*C.double)(unsafe.Pointer(&b[0])), cint(n),
		0, (*C.double)(unsafe.Pointer(&c[0])), cint(n))
}
