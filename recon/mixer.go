package recon

// Params are the weights a layer (or its mixer) is built from, by role
// (model.TensorSpec.Role): products as Linears ("qkv", "z", "a", "b",
// "out"; "q", "k", "v", "o"; "gate", "up", "down") and vectors widened to
// float64 exactly as the checkpoint stores them ("input_norm",
// "post_norm", "q_norm", "k_norm" zero-centred — the constructors apply
// 1+w where the model does; "conv" [convDim][1][K]; "A_log"; "dt_bias";
// "gated_norm").
type Params struct {
	Linears map[string]Linear
	Vectors map[string][]float64
}

// Mixer is a layer's token mixer (DeltaNet or Attention) on one sequence
// at positions 0…T−1 from an empty state.
type Mixer interface {
	// Forward returns y [T][H] for the normed input u [T][H] and what
	// Backward needs (u is kept, not copied: do not modify it before
	// Backward).
	Forward(u []float64, T int) (y []float64, tape any)
	// Backward returns dL/du [T][H] for dL/dy [T][H], adding the
	// gradients of the mixer's Linears (Linear.Backward).
	Backward(tape any, dy []float64) (du []float64)
}
