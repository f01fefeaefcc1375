// Package tinylut loads a checkpoint with every quantizable matrix rounded
// to `LUT4 per-tensor + pcs` in memory (round to nearest, no bundle on
// disk): the quantized model the tests and benchmarks of the runtime run
// on, so that they exercise the LUT kernels and int8 activations without a
// quantization step of their own. It is for tests only.
package tinylut
