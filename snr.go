package forge

import (
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"

	"forge/internal/budget"
	"forge/lut"
	"forge/model"
	"forge/quant"
	"forge/source"
	"forge/tensor"
)

// SNRConfig configures SNR: either a checkpoint (Model, optional Tensors
// regexp over tensor names) or a Gaussian matrix (Rows×Cols of N(0,1) drawn
// with Seed).
type SNRConfig struct {
	Model      string
	Tensors    string // regexp; empty = every quantizable matrix
	Formats    []string
	Rows, Cols int // Gaussian mode when > 0
	Seed       uint64
	Progress   func(done, total int64)
}

// SNRResult is the weight SNR of one matrix in one format (RTN).
type SNRResult struct {
	Tensor string  `json:"tensor"`
	Format string  `json:"format"`
	Shape  [2]int  `json:"shape"`
	Bytes  int64   `json:"bytes"`
	BPW    float64 `json:"bpw"`
	SNRdB  float64 `json:"snr_db"`
}

// SNR quantizes each matrix to each format by nearest rounding and reports
// 10·log10(Σw² / Σ(w−ŵ)²) in dB with the packed size and bits per weight.
func SNR(ctx context.Context, cfg SNRConfig) ([]SNRResult, error) {
	var fs []lut.Format
	for _, s := range cfg.Formats {
		f, err := lut.ParseFormat(s)
		if err != nil {
			return nil, fmt.Errorf("snr: formats: %w", err)
		}
		fs = append(fs, f)
	}
	if len(fs) == 0 {
		return nil, fmt.Errorf("snr: no formats given")
	}
	mats, closeSrc, err := snrMatrices(cfg)
	if err != nil {
		return nil, err
	}
	defer closeSrc()
	var out []SNRResult
	total := int64(len(mats) * len(fs))
	for _, nm := range mats {
		w, err := nm.load()
		if err != nil {
			return nil, err
		}
		for _, f := range fs {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			r, err := snrOne(nm.name, w, f, cfg.Seed)
			if err != nil {
				return nil, err
			}
			out = append(out, r)
			if cfg.Progress != nil {
				cfg.Progress(int64(len(out)), total)
			}
		}
	}
	return out, nil
}

// snrBudget refuses a matrix whose SNR needs more memory than is
// available: the float32 weights, their dequantized copy and about one
// byte per weight of codes and working space (9 bytes per weight).
func snrBudget(rows, cols int) error {
	const perWeight = 9
	if rows > model.MaxMatrix || cols > model.MaxMatrix || int64(rows) > model.MaxMatrix/int64(cols) {
		return fmt.Errorf("snr: a %dx%d matrix has more than 2^36 weights: %w", rows, cols, budget.ErrTooLarge)
	}
	return budget.Memory(fmt.Sprintf("snr of a %dx%d matrix", rows, cols), perWeight*int64(rows)*int64(cols))
}

func snrOne(name string, w *tensor.Matrix, f lut.Format, seed uint64) (SNRResult, error) {
	r := SNRResult{Tensor: name, Format: f.String(), Shape: [2]int{w.Rows, w.Cols}}
	if err := f.CheckShape(w.Rows, w.Cols); err != nil {
		return r, fmt.Errorf("snr: %s: %w", name, err)
	}
	q, err := quant.RTN(w, f, quant.Options{Seed: seed})
	if err != nil {
		return r, fmt.Errorf("snr: %s: %w", name, err)
	}
	what := tensor.New(w.Rows, w.Cols)
	q.Dequantize(what)
	r.Bytes, r.BPW, r.SNRdB = q.Bytes(), q.BitsPerWeight(), quant.SNR(w, what)
	return r, nil
}

type namedMatrix struct {
	name string
	load func() (*tensor.Matrix, error)
}

func snrMatrices(cfg SNRConfig) ([]namedMatrix, func(), error) {
	if cfg.Rows > 0 || cfg.Cols > 0 {
		if cfg.Rows <= 0 || cfg.Cols <= 0 {
			return nil, nil, fmt.Errorf("snr: a Gaussian matrix needs ROWSxCOLS with both positive")
		}
		if err := snrBudget(cfg.Rows, cfg.Cols); err != nil {
			return nil, nil, err
		}
		name := fmt.Sprintf("gaussian %dx%d seed %d", cfg.Rows, cfg.Cols, cfg.Seed)
		return []namedMatrix{{name, func() (*tensor.Matrix, error) {
			r := rand.New(rand.NewPCG(cfg.Seed, 0x5eed))
			w := tensor.New(cfg.Rows, cfg.Cols)
			for i := range w.Data {
				w.Data[i] = float32(r.NormFloat64())
			}
			return w, nil
		}}}, func() {}, nil
	}
	var re *regexp.Regexp
	if cfg.Tensors != "" {
		var err error
		if re, err = regexp.Compile(cfg.Tensors); err != nil {
			return nil, nil, fmt.Errorf("snr: tensor pattern: %w", err)
		}
	}
	ck, err := source.OpenCheckpoint(cfg.Model)
	if err != nil {
		return nil, nil, err
	}
	var out []namedMatrix
	for _, t := range ck.Tensors() {
		if !t.Spec.Matrix || (re == nil && !t.Spec.Quantizable) || (re != nil && !re.MatchString(t.Spec.Name)) {
			continue
		}
		spec := t.Spec
		out = append(out, namedMatrix{spec.Name, func() (*tensor.Matrix, error) {
			if err := snrBudget(spec.Shape[0], spec.Shape[1]); err != nil {
				return nil, err
			}
			v, err := ck.Vector(spec.Name)
			if err != nil {
				return nil, err
			}
			return tensor.FromSlice(spec.Shape[0], spec.Shape[1], v), nil
		}})
	}
	if len(out) == 0 {
		ck.Close()
		return nil, nil, fmt.Errorf("snr: no matrix of %s matches %q", cfg.Model, cfg.Tensors)
	}
	return out, func() { ck.Close() }, nil
}
