package quant

import (
	"context"
	"fmt"
	"math"

	"forge/lut"
	"forge/tensor"
)

// Method is how a Spec rounds the weights onto their grid.
type Method int

const (
	// MethodRTN rounds every weight to its nearest entry (Nearest).
	MethodRTN Method = iota
	// MethodGPTQ rounds column by column with error feedback (GPTQ).
	MethodGPTQ
)

// String returns "rtn" or "gptq".
func (m Method) String() string {
	switch m {
	case MethodRTN:
		return "rtn"
	case MethodGPTQ:
		return "gptq"
	}
	return fmt.Sprintf("Method(%d)", int(m))
}

// ParseMethod reads a method name: "rtn" (or "", the default) or "gptq".
func ParseMethod(s string) (Method, error) {
	switch s {
	case "", "rtn":
		return MethodRTN, nil
	case "gptq":
		return MethodGPTQ, nil
	}
	return 0, fmt.Errorf("quant: method %q: want \"rtn\" or \"gptq\"", s)
}

// Stats are the calibration statistics of one matrix's input, H = XᵀX/N
// (Hessian), over the training rows and over rows held out of them.
type Stats struct {
	// Train fits what uses calibration: GPTQ, AW codebooks and the
	// weighted low-rank correction.
	Train *Hessian
	// Held, when it has rows, gives the Report's output SNRs.
	Held *Hessian
}

func (st *Stats) train() *Hessian {
	if st == nil {
		return nil
	}
	return st.Train
}

func (st *Stats) held() *Hessian {
	if st == nil || st.Held == nil || st.Held.Rows() == 0 {
		return nil
	}
	return st.Held
}

// Report holds a matrix's output SNRs in dB on the held-out rows
// (OutputSNR with Stats.Held, in the basis the matrix is stored in; +Inf
// when the error is zero): RTN, nearest rounding onto the method's grid;
// Method, the method's rounding; both before any low-rank correction; and
// Final, the matrix returned (Method when there is no correction).
//
// With Spec.Refit, Refit is the SNR of the refit codebooks and scales
// (NaN when the refit was not tried or changed nothing on the training
// rows) and Refitted says whether they were kept: only when Refit is
// above Method.
type Report struct {
	RTN, Method, Final float64
	Refit              float64
	Refitted           bool
}

// Spec is how one matrix is quantized: the pipeline of Quantize. Its zero
// value (with a Format) is plain nearest rounding.
type Spec struct {
	Format lut.Format
	Method Method
	// AW fits the codebooks with each input column weighted by diag(H) of
	// the training Hessian (activation-weighted; needs Stats.Train).
	AW bool
	// Rotation, if not nil, is the seed of the online block Hadamard
	// rotation of the input (lut.NewHadamard(in, *Rotation)): the weights
	// are quantized in the rotated basis and the matrix carries the
	// rotation. nil: no rotation.
	Rotation *uint64
	// Rank > 0 adds a rank-Rank correction of the quantization error,
	// A·B (docs/quantization.md §5), to a quantized format.
	Rank int
	// Weighted fits the correction weighted by the training Hessian
	// (LowRankOptions.Hessian; needs Stats.Train).
	Weighted bool
	// Refit, for a quantized format with training and held-out
	// statistics, refits the codebooks and scales to the training Hessian
	// with the indices fixed (Refit) after the rounding, and keeps them
	// only when the held-out output SNR rises (Report.Refitted).
	Refit bool
	// Seed makes the codebooks deterministic (Options.Seed).
	Seed uint64
	// LowRankSeed draws the correction's random test matrix
	// (LowRankOptions.Seed).
	LowRankSeed uint64
}

// check refuses a Spec that cannot run on the given statistics.
func (s Spec) check(st *Stats) error {
	switch {
	case s.Method != MethodRTN && s.Method != MethodGPTQ:
		return fmt.Errorf("%w: method %d", ErrInput, int(s.Method))
	case s.Rank < 0:
		return fmt.Errorf("%w: low-rank rank %d is negative", ErrInput, s.Rank)
	case s.Rank > 0 && !s.Format.Quantized():
		return fmt.Errorf("%w: a low-rank correction (rank %d) needs a quantized format, not %s", ErrInput, s.Rank, s.Format)
	case s.Rank > 0 && s.Weighted && (st.train() == nil || st.train().Rows() == 0):
		return fmt.Errorf("%w: a weighted low-rank correction needs the training Hessian", ErrInput)
	}
	return nil
}

// Quantize runs the pipeline on W [out, in] (not modified):
//
//  1. Rotation: W' = W·M (Rotated), else W' = W;
//  2. rounding of W' into Format by Method (Nearest, or GPTQ with the
//     training Hessian), AW as set, codebooks seeded by Seed, with ctx
//     stopping long work (Options.Context);
//  3. with held-out statistics, the SNRs of nearest rounding and of the
//     method (DequantOutputSNR against W'); with Refit, the codebooks and
//     scales refit to the training Hessian (Refit), kept only when the
//     held-out SNR rises;
//  4. Rank > 0: the correction of E = W' − Ŵ' (Correction, weighted by
//     the training Hessian when Weighted, seeded by LowRankSeed), and the
//     Final SNR of Ŵ' + A·B;
//  5. the rotation M attached (lut.Parts.Rotation).
//
// The Report is nil without held-out rows (st nil, or Held nil or empty).
// The result depends only on W, the Spec and st (not on GOMAXPROCS). Errors
// wrap ErrInput for a Spec the statistics cannot serve (GPTQ, AW or
// Weighted without training rows), else they are the pieces' errors, or
// ctx's.
func (s Spec) Quantize(ctx context.Context, w *tensor.Matrix, st *Stats) (*lut.Matrix, *Report, error) {
	if err := s.check(st); err != nil {
		return nil, nil, fmt.Errorf("quant: %s %dx%d: %w", s.Format, w.Rows, w.Cols, err)
	}
	var rot *lut.Hadamard
	if s.Rotation != nil {
		w, rot = Rotated(w, *s.Rotation)
	}
	m, rm, err := s.round(ctx, w, st.train())
	if err != nil {
		return nil, nil, err
	}
	var rep *Report
	if h := st.held(); h != nil {
		rep = &Report{Method: DequantOutputSNR(w, m, h)}
		rep.RTN = rep.Method
		if rm != m {
			rep.RTN = DequantOutputSNR(w, rm, h)
		}
		rep.Final = rep.Method
		rep.Refit = math.NaN()
		if s.Refit && s.Format.Quantized() && st.train() != nil && st.train().Rows() > 0 {
			fit, rr, err := Refit(w, m, st.Train, RefitOptions{Context: ctx})
			if err != nil {
				return nil, nil, err
			}
			if rr.Applied {
				rep.Refit = DequantOutputSNR(w, fit, h)
				if rep.Refit > rep.Method {
					m, rep.Refitted, rep.Final = fit, true, rep.Refit
				}
			}
		}
	}
	if s.Rank > 0 {
		opt := LowRankOptions{Seed: s.LowRankSeed}
		if s.Weighted {
			opt.Hessian = st.Train.Matrix()
		}
		a, b, err := Correction(w, m, s.Rank, opt)
		if err != nil {
			return nil, nil, err
		}
		if m, err = rebuild(m, func(p *lut.Parts) { p.LowRankA, p.LowRankB = a, b }); err != nil {
			return nil, nil, err
		}
		if rep != nil {
			rep.Final = DequantOutputSNR(w, m, st.Held)
		}
	}
	if rot != nil {
		if m, err = rebuild(m, func(p *lut.Parts) { p.Rotation = rot }); err != nil {
			return nil, nil, err
		}
	}
	return m, rep, nil
}

// round is step 2 of Quantize: the method's matrix and nearest rounding
// onto the same grid (the same matrix for MethodRTN).
func (s Spec) round(ctx context.Context, w *tensor.Matrix, h *Hessian) (m, rtn *lut.Matrix, err error) {
	opt := Options{Seed: s.Seed, Context: ctx}
	if s.Method == MethodGPTQ {
		return GPTQ{Format: s.Format, AW: s.AW, Options: opt}.QuantizeWithRTN(w, h)
	}
	m, err = Nearest{Format: s.Format, AW: s.AW, Options: opt}.Quantize(w, h)
	return m, m, err
}
