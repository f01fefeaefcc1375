// Package calib runs a model layer by layer over calibration rows (package corpus makes them)
// to collect each Linear's input statistics for the quantizer: true-sequential calibration
// (docs/quantization.md §3).
//
// # Layer-by-layer calibration
//
// Runner (layerwise.go) embeds every row, then for each layer ℓ and each of its Groups in
// order — the mixer input projections, the mixer output projection, MLP gate/up, MLP down —
// runs the rows through layer ℓ alone (model.ForwardLayer) with a recorder in the group's
// first slot that adds the input rows (rotated by the group's Rotation, if any) to two
// quant.Hessians, one over the training rows and one over the held-out rows, and hands them to
// a GroupFunc that returns the quantized Linears to put in the slots. The next group therefore
// sees this one quantized, and once the layer's groups are done the rows are run through the
// quantized layer to become layer ℓ+1's input. The head comes last (its input is the final
// norm). Inputs that are a norm of the residual stream (the first group, the head) are
// computed directly (model.Norm) without running the mixer. Memory: one layer's hidden states
// for every row plus one group's Hessians.
//
// With Runner.Reconstruct set, once a layer's groups are quantized its input rows and their
// targets — the Reference model's hidden states after the layer (advanced beside the quantized
// stream) or, with LocalTarget, the Reference layer on the quantized rows — go to the hook
// (block reconstruction, package recon), whose Linears replace the layer's before the rows
// move on; that holds a second set of hidden states.
package calib
