package checkpoint

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"

	"forge/model"
	"forge/safetensors"
)

// SynthOptions configures Synth. The zero value writes seed 0 in 2 GiB shards.
type SynthOptions struct {
	Seed      uint64
	ShardSize int64  // bytes per shard before a new one starts; 0 = 2 GiB
	Version   string // forge's version, recorded in the output's marker
	// Progress, if set, is called after each tensor with bytes written and total.
	Progress func(done, total int64)
}

// Synth writes a random-init checkpoint for the config JSON cfgJSON into
// dir in the layout of the sharded Hugging Face releases (Writer):
// config.json (as given), bf16 tensors in model.Tensors order in shards
// named model-0000k-of-0000n.safetensors (even when one suffices) with
// model.safetensors.index.json, names under the config's prefix
// (model.language_model. for the nested config) plus lm_head.weight.
// dir must not exist (or be empty) and its filesystem must have room for
// the data; everything is written to dir.partial, which is renamed into
// place at the end. A failure or a cancelled ctx leaves neither.
//
// Initialisation (chosen so activations stay O(1) through any depth, like
// the qwen35-tiny-random fixture): linear weights N(0, 1/fan_in), ×0.5 for
// the projections that write the residual (o_proj, out_proj, down_proj);
// embeddings N(0, 1); offset norm weights U(−0.1, 0.1); gated-norm weight
// U(0.9, 1.1); conv taps N(0, 1/4) with +0.5 on the newest tap;
// A_log = ln U(0.05, 4); dt_bias U(−2, 0.5). Each block of 2^20 values draws
// from its own PCG stream keyed by (seed, tensor, block), so the output is
// byte-identical for a seed whatever the core count.
func Synth(ctx context.Context, cfgJSON []byte, dir string, opt SynthOptions) error {
	cfg, err := ParseConfig(cfgJSON)
	if err != nil {
		return fmt.Errorf("synth: config: %w", err)
	}
	shardSize := opt.ShardSize
	if shardSize <= 0 {
		shardSize = 2 << 30
	}
	specs := model.Tensors(&cfg)
	tensors := make([]Tensor, len(specs))
	for i, s := range specs {
		tensors[i] = Tensor{Name: s.Name, DType: safetensors.BF16, Shape: s.Shape}
	}
	w, err := Create(ctx, dir, cfgJSON, tensors, WriterOptions{ShardSize: shardSize, Indexed: true, Version: opt.Version, Progress: opt.Progress})
	if err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	defer w.Abort()
	for i, s := range specs {
		if err := writeSynthTensor(w, s, opt.Seed, uint64(i)); err != nil {
			return fmt.Errorf("synth %s: %w", dir, err)
		}
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("synth %s: %w", dir, err)
	}
	return nil
}

const synthBlock = 1 << 20

// writeSynthTensor generates one tensor block by block (two blocks in
// parallel) and streams it to w (rounded to bf16 there).
func writeSynthTensor(w *Writer, s model.TensorSpec, seed, ti uint64) error {
	n := int(s.Elements())
	vals := make([]float32, min(n, 2*synthBlock))
	for off := 0; off < n; off += len(vals) {
		m := min(len(vals), n-off)
		var wg sync.WaitGroup
		for b := 0; b*synthBlock < m; b++ {
			wg.Add(1)
			go func(b int) {
				defer wg.Done()
				lo, hi := b*synthBlock, min(m, (b+1)*synthBlock)
				r := rand.New(rand.NewPCG(seed, ti<<32|uint64((off+lo)/synthBlock)))
				synthFill(vals[lo:hi], off+lo, s, r)
			}(b)
		}
		wg.Wait()
		if err := w.WriteFloat32(vals[:m]); err != nil {
			return err
		}
	}
	return nil
}

// synthFill draws values [base, base+len(dst)) of tensor s.
func synthFill(dst []float32, base int, s model.TensorSpec, r *rand.Rand) {
	name := s.Name
	switch {
	case s.Matrix && s.Part == model.PartEmbed:
		for i := range dst {
			dst[i] = float32(r.NormFloat64())
		}
	case s.Matrix:
		std := 1 / math.Sqrt(float64(s.Shape[1]))
		if strings.HasSuffix(name, "o_proj.weight") || strings.HasSuffix(name, "out_proj.weight") || strings.HasSuffix(name, "down_proj.weight") {
			std *= 0.5
		}
		for i := range dst {
			dst[i] = float32(std * r.NormFloat64())
		}
	case strings.HasSuffix(name, "conv1d.weight"):
		K := s.Shape[2]
		for i := range dst {
			v := 0.5 * r.NormFloat64()
			if (base+i)%K == K-1 {
				v += 0.5
			}
			dst[i] = float32(v)
		}
	case strings.HasSuffix(name, "A_log"):
		for i := range dst {
			dst[i] = float32(math.Log(0.05 + 3.95*r.Float64()))
		}
	case strings.HasSuffix(name, "dt_bias"):
		for i := range dst {
			dst[i] = float32(-2 + 2.5*r.Float64())
		}
	case strings.HasSuffix(name, "linear_attn.norm.weight"):
		for i := range dst {
			dst[i] = float32(0.9 + 0.2*r.Float64())
		}
	default: // offset norms: scale 1+w
		for i := range dst {
			dst[i] = float32(-0.1 + 0.2*r.Float64())
		}
	}
}
