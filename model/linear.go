package model

import "forge/tensor"

// Linear multiplies a batch of rows by a fixed weight W [out, in]:
// dst = x · Wᵀ, x [T, in], dst [T, out]. T = 1 is a decode step, T > 1 a
// prefill, a calibration batch or a verify block. Implementations read their
// weights once per call for all T rows, must not allocate on a T = 1 call,
// and are safe for concurrent use. dst is already shaped [T, out] and does
// not alias x.
//
// Dense weights (tensor.Dense) and quantized matrices (lut.Matrix) both
// satisfy it.
type Linear interface {
	Mul(dst, x *tensor.Matrix)
	Dims() (out, in int)
}

// Source supplies a configuration and weights by checkpoint tensor name
// (names without the HF prefix, e.g. "layers.0.mlp.up_proj.weight").
// checkpoint (HF) and bundle (forge export) implement it; an ablation Source
// mixes the two.
type Source interface {
	Config() (Config, error)
	// Vector returns a 1-D (or squeezable) tensor widened to float32,
	// e.g. norm weights, A_log, conv taps.
	Vector(name string) ([]float32, error)
	// Linear returns a 2-D weight [out, in] as a Linear.
	Linear(name string) (Linear, error)
}
