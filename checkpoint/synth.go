package checkpoint

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"forge/internal/budget"
	"forge/internal/durable"
	"forge/internal/outpath"
	"forge/model"
	"forge/safetensors"
	"forge/tensor"
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
// dir in the real HF layout: config.json (as given), bf16 safetensors
// shards named model-0000k-of-0000n.safetensors with
// model.safetensors.index.json, names under model.language_model. plus
// lm_head.weight. dir must not exist; everything is written to a temporary
// sibling directory that is renamed into place at the end.
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
	if err := outpath.Check(outpath.Target{Path: dir, Dir: true}, false); err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	if err := budget.Disk(dir, "synth", 2*model.ParamCount(&cfg)); err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	tmp, err := durable.MkdirTemp(dir)
	if err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil { // MkdirTemp makes 0700; a checkpoint is for everyone to read
		return fmt.Errorf("synth: %w", err)
	}
	if err := writeSynth(ctx, &cfg, cfgJSON, tmp, opt); err != nil {
		return fmt.Errorf("synth %s: %w", dir, err)
	}
	if err := outpath.Seal(tmp, "checkpoint", opt.Version); err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	if err := outpath.ReplaceDir(tmp, dir); err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	return nil
}

func writeSynth(ctx context.Context, cfg *model.Config, cfgJSON []byte, dir string, opt SynthOptions) error {
	shardSize := opt.ShardSize
	if shardSize <= 0 {
		shardSize = 2 << 30
	}
	specs := model.Tensors(cfg)
	var shards [][]int // spec indices per shard
	var total, cur int64
	for i, s := range specs {
		b := 2 * s.Elements()
		if len(shards) == 0 || (cur > 0 && cur+b > shardSize) {
			shards = append(shards, nil)
			cur = 0
		}
		shards[len(shards)-1] = append(shards[len(shards)-1], i)
		cur += b
		total += b
	}
	weightMap := map[string]string{}
	var done int64
	for k, idx := range shards {
		name := fmt.Sprintf("model-%05d-of-%05d.safetensors", k+1, len(shards))
		infos := make([]safetensors.TensorInfo, len(idx))
		for j, i := range idx {
			infos[j] = safetensors.TensorInfo{Name: hfName(specs[i].Name), DType: safetensors.BF16, Shape: specs[i].Shape}
			weightMap[infos[j].Name] = name
		}
		w, err := safetensors.Create(filepath.Join(dir, name), infos, map[string]string{"format": "pt"})
		if err != nil {
			return err
		}
		for _, i := range idx {
			if err := ctx.Err(); err != nil {
				w.Abort()
				return err
			}
			if err := writeSynthTensor(w, specs[i], opt.Seed, uint64(i)); err != nil {
				w.Abort()
				return err
			}
			done += 2 * specs[i].Elements()
			if opt.Progress != nil {
				opt.Progress(done, total)
			}
		}
		if err := w.Close(); err != nil {
			return err
		}
	}
	index, _ := json.MarshalIndent(map[string]any{"metadata": map[string]int64{"total_size": total}, "weight_map": weightMap}, "", "  ")
	if err := durable.WriteFile(filepath.Join(dir, "model.safetensors.index.json"), index); err != nil {
		return err
	}
	return durable.WriteFile(filepath.Join(dir, "config.json"), cfgJSON)
}

// hfName is the on-disk name of a text tensor in the VLM layout.
func hfName(name string) string {
	if name == "lm_head.weight" {
		return name
	}
	return "model.language_model." + name
}

const synthBlock = 1 << 20

// writeSynthTensor generates one tensor block by block (two blocks in
// parallel) and streams it as bf16.
func writeSynthTensor(w *safetensors.Writer, s model.TensorSpec, seed, ti uint64) error {
	n := int(s.Elements())
	vals := make([]float32, min(n, 2*synthBlock))
	raw := make([]byte, 2*len(vals))
	halves := make([]uint16, len(vals))
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
		tensor.F32ToBF16Slice(halves[:m], vals[:m])
		for i, h := range halves[:m] {
			raw[2*i], raw[2*i+1] = byte(h), byte(h>>8)
		}
		if _, err := w.Write(raw[:2*m]); err != nil {
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
