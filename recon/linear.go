package recon

import "fmt"

// Linear is a differentiable product y = x·Wᵀ inside a layer: W [out, in],
// x [T][in], y [T][out], row-major float64.
type Linear interface {
	Dims() (out, in int)
	// Forward sets y [T][out] = x·Wᵀ.
	Forward(y, x []float64, T int)
	// Backward takes the x of a Forward and dL/dy [T][out], adds dL/dθ
	// to the Linear's parameter gradients (if it has trainable ones) and
	// sets dx [T][in] = dL/dx; dx nil: not wanted.
	Backward(dx, x, dy []float64, T int)
}

// Dense is a Linear with plain weights W [Out][In]. Grad, if not nil,
// accumulates dL/dW = Σ_t dyₜᵀ·xₜ; nil: frozen.
type Dense struct {
	Out, In int
	W       []float64 // [Out][In]
	Grad    []float64 // [Out][In] or nil
}

// NewDense returns a Dense of w [out][in] (not copied) with a zero gradient.
func NewDense(out, in int, w []float64) *Dense {
	if len(w) != out*in {
		panic(fmt.Sprintf("recon: %d weights for a %dx%d Dense", len(w), out, in))
	}
	return &Dense{Out: out, In: in, W: w, Grad: make([]float64, out*in)}
}

// Dims returns [Out, In].
func (d *Dense) Dims() (int, int) { return d.Out, d.In }

// Forward sets y = x·Wᵀ.
func (d *Dense) Forward(y, x []float64, T int) { gemm(y, false, x, true, d.W, T, d.Out, d.In, false) }

// Backward adds dyᵀ·x to Grad and sets dx = dy·W.
func (d *Dense) Backward(dx, x, dy []float64, T int) {
	if d.Grad != nil {
		gemm(d.Grad, true, dy, false, x, d.Out, d.In, T, true)
	}
	if dx != nil {
		gemm(dx, false, dy, false, d.W, T, d.In, d.Out, false)
	}
}
