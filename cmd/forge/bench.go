package main

import (
	"context"
	"fmt"
	"os"

	"forge"
	"forge/internal/progress"
	"forge/internal/table"
	"forge/internal/units"
	"forge/model"
)

// BenchCmd is `forge bench`.
type BenchCmd struct {
	Model        string `required:"" type:"existingdir" help:"Checkpoint or bundle directory."`
	PromptTokens int    `name:"prompt-tokens" default:"${bench_prompt}" help:"Prefill test length (ppN)."`
	Gen          int    `default:"${bench_gen}" help:"Decode test length (tgN)."`
	Repeat       int    `default:"${bench_repeat}" help:"Timed repetitions of each test (after one warm-up)."`
	KV           string `name:"kv" default:"f32" enum:"f32,int8" help:"KV cache: f32 or int8."`
	Act          string `name:"act" default:"auto" enum:"auto,f32,int8" help:"Activations times 4-bit LUT weights: int8 (decode steps quantize them in groups of 32, as llama.cpp does; forge eval --act int8 measures the cost), f32 (exact), or auto: int8 where this CPU has int8 kernels (AVX-512 VNNI or AVX2 with GOEXPERIMENT=simd), f32 elsewhere."`
	JSON         bool   `name:"json" help:"Print JSON."`
}

func (c *BenchCmd) Run(ctx context.Context) error {
	if err := positive("--prompt-tokens", c.PromptTokens, "--gen", c.Gen, "--repeat", c.Repeat); err != nil {
		return err
	}
	kv, _ := model.ParseKV(c.KV)    // kong checked the enum
	act, _ := model.ParseAct(c.Act) // and this one
	rep, err := forge.Bench(ctx, forge.BenchConfig{Model: c.Model, PromptTokens: c.PromptTokens, Gen: c.Gen, KV: kv, Act: act,
		Repeat: c.Repeat, Progress: progress.New("bench", false).Set})
	if err != nil {
		return err
	}
	for _, w := range rep.Warnings {
		warn(w)
	}
	if c.JSON {
		return printJSON(rep)
	}
	t := table.New("model", "format", "size", "bpw", "params", "test", "t/s", "% read bw").AlignRight(2, 3, 4, 6, 7)
	size, params := units.Bytes(rep.Bytes), units.Count(rep.Params)
	bpw := fmt.Sprintf("%.2f", rep.BPW)
	t.Row(rep.Model, rep.Format, size, bpw, params, fmt.Sprintf("pp%d", rep.PromptTokens),
		fmt.Sprintf("%.2f ± %.2f", rep.PrefillTPS, rep.PrefillSD), "")
	t.Row(rep.Model, rep.Format, size, bpw, params, fmt.Sprintf("tg%d", rep.Gen),
		fmt.Sprintf("%.2f ± %.2f", rep.DecodeTPS, rep.DecodeSD), fmt.Sprintf("%.1f ± %.1f%%", rep.BandwidthPct, rep.BandwidthPctSD))
	if err := t.Write(os.Stdout); err != nil {
		return err
	}
	fmt.Printf("\ndecode reads %s of weights per token: %.2f GB/s of the %.2f GB/s this machine read between its chunks of %d tokens "+
		"(both cores; %.1f%% of the fastest single pass, %.2f GB/s); %s activations, %s KV cache; %d repetitions after a warm-up\n",
		units.Bytes(rep.WeightBytes), rep.BandwidthGBs, rep.ReadGBs, forge.BenchChunk, rep.BandwidthPctBest, rep.ReadBestGBs, rep.Act, rep.KV, rep.Repeat)
	return nil
}
