package quant

import (
	"fmt"

	"forge/tensor"
)

// Hessian accumulates the input statistics of one Linear: H = XᵀX/N over
// the N calibration rows X [N, in] it has seen (quantization.md §3). For
// now it keeps only the diagonal, which AW codebooks need; the GPTQ issue
// extends it with the full matrix. The zero value is an empty Hessian
// ready for Add.
type Hessian struct {
	sum []float64 // [in] Σ_t x[t][j]²
	n   int       // rows added
}

// DiagHessian returns a Hessian whose diagonal is d (copied), as if from
// one row: for statistics computed elsewhere and for tests.
func DiagHessian(d []float64) *Hessian {
	return &Hessian{sum: append([]float64(nil), d...), n: 1}
}

// Add accumulates the rows of x [T, in]. It panics if in differs from
// earlier calls (programmer error).
func (h *Hessian) Add(x *tensor.Matrix) {
	if h.sum == nil {
		h.sum = make([]float64, x.Cols)
	}
	if x.Cols != len(h.sum) {
		panic(fmt.Sprintf("quant.Hessian.Add: %d columns, want %d", x.Cols, len(h.sum)))
	}
	for t := range x.Rows {
		for j, v := range x.Row(t) {
			h.sum[j] += float64(v) * float64(v)
		}
	}
	h.n += x.Rows
}

// Rows returns the number of rows accumulated.
func (h *Hessian) Rows() int { return h.n }

// Diag returns diag(H)[j] = Σ_t x[t][j]² / N (a new slice; nil when no
// rows have been added).
func (h *Hessian) Diag() []float64 {
	if h.n == 0 {
		return nil
	}
	d := make([]float64, len(h.sum))
	for j, s := range h.sum {
		d[j] = s / float64(h.n)
	}
	return d
}
