package chunk

import (
	"slices"

	"forge/lut"
	"forge/model"
)

// referenceT is the reference's verify/decode block: 8 rows
// (docs/reference-pipeline.md §5.1, §8).
const referenceT = 8

// measuredVerify are the reference's measured forward times of one T=8
// verify call on the 27B on the ANE, in ms, by context entry
// (docs/reference-pipeline.md §5.6, from its docs/verifier_len.md). The
// first and last are the calibration's fit, the middle two its checks.
var measuredVerify = []struct {
	ctx int
	ms  float64
}{{8 << 10, 91.5}, {16 << 10, 97.4}, {32 << 10, 108.0}, {64 << 10, 131.5}}

// measuredTokensPerStep is the reference's measured mean of tokens emitted
// per T=8 verify cycle with its drafter on real coding-agent traffic
// (docs/reference-pipeline.md §5.6: 3.31 tokens per cycle over 32,504 cycles).
const measuredTokensPerStep = 3.31

// deployedMix names the export the calibration assumes ran the measured
// steps (the seed's research notes §1: "Deployed export").
const deployedMix = "full_mix25_mixer4_head4 (9.06 GiB): MLP vector 2x16 + pcs, LUT4 per-tensor + pcs in layers 0-6, 8, 9, 28, 34-40; " +
	"DeltaNet qkv/z/out and attention q/o LUT4 per-tensor + pcs; attention k/v INT8 per-channel; lm_head LUT4 per-tensor + pcs; " +
	"in_proj_a/b, norms and conv taps fp16; no low-rank factors"

// deployedMLPLUT4 are the layers whose MLP the deployed export keeps at
// LUT4 (plan_optiq_top48; the rest are vector 2x16).
var deployedMLPLUT4 = []int{0, 1, 2, 3, 4, 5, 6, 8, 9, 28, 34, 35, 36, 37, 38, 39, 40}

// Reference27B returns the Qwen3.5-27B text configuration the reference
// deploys (docs/model.md §12): 64 layers, every 4th gated attention,
// hidden 5120, MLP 17408, 24 q / 4 KV heads of 256, DeltaNet 16 key heads
// and 48 value heads of 128, conv 4, vocabulary 248,320, untied.
func Reference27B() model.Config {
	c := model.Config{Vocab: 248320, Hidden: 5120, Intermediate: 17408, Heads: 24, KVHeads: 4, HeadDim: 256,
		Eps: 1e-6, KeyHeads: 16, ValueHeads: 48, KeyDim: 128, ValueDim: 128, ConvKernel: 4, RopeTheta: 1e7,
		RotaryFactor: 0.25, MaxContext: 262144}
	for i := range 64 {
		k := model.DeltaNet
		if i%4 == 3 {
			k = model.Attention
		}
		c.Layers = append(c.Layers, k)
	}
	return c
}

// deployedWeights are the matrices of the deployed export on c (deployedMix),
// with their exact bytes (lut.Format.Size).
func deployedWeights(c *model.Config) []Weight {
	var ws []Weight
	for _, s := range model.Tensors(c) {
		if !s.Matrix {
			continue
		}
		f := lut.LUT4
		switch {
		case s.Part == model.PartEmbed || s.Role == "a" || s.Role == "b":
			f = lut.BFloat16
		case s.Part == model.PartMLP && !slices.Contains(deployedMLPLUT4, s.Layer):
			f = lut.Vec2x16
		case s.Part == model.PartKV:
			f = lut.INT8
		}
		ws = append(ws, Weight{Name: s.Name, Format: f, Bytes: f.Size(s.Shape[0], s.Shape[1], 0).Total()})
	}
	return ws
}
