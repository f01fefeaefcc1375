package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	"forge"
	"forge/internal/progress"
	"forge/internal/table"
)

// SNRCmd is `forge snr`.
type SNRCmd struct {
	Model    string   `xor:"src" required:"" type:"existingdir" help:"Hugging Face checkpoint directory."`
	Gaussian string   `xor:"src" required:"" placeholder:"ROWSxCOLS" help:"Use a standard normal matrix of this shape instead of a model."`
	Formats  []string `required:"" help:"Formats, comma-separated or repeated, e.g. \"LUT4 per-tensor + pcs,vector 2x16 + pcs\"."`
	Tensors  string   `help:"Regexp over tensor names (default: every quantizable matrix)."`
	Seed     uint64   `default:"0" help:"Seed for the Gaussian matrix and k-means."`
	JSON     bool     `name:"json" help:"Print JSON."`
}

func (c *SNRCmd) Run(ctx context.Context) error {
	cfg := forge.SNRConfig{Model: c.Model, Tensors: c.Tensors, Seed: c.Seed, Progress: progress.New("snr", false).Set}
	cfg.Formats = trimList(c.Formats)
	if c.Gaussian != "" {
		r, col, ok := strings.Cut(strings.ToLower(c.Gaussian), "x")
		rows, err1 := strconv.Atoi(r)
		cols, err2 := strconv.Atoi(col)
		if !ok || err1 != nil || err2 != nil {
			return fmt.Errorf("--gaussian %q: want ROWSxCOLS, e.g. 4096x4096", c.Gaussian)
		}
		cfg.Rows, cfg.Cols = rows, cols
	}
	res, err := forge.SNR(ctx, cfg)
	if err != nil {
		return err
	}
	if c.JSON {
		return printJSON(res)
	}
	t := table.New("tensor", "format", "shape", "bpw", "SNR dB").AlignRight(3, 4)
	for _, r := range res {
		t.Row(r.Tensor, r.Format, fmt.Sprintf("%dx%d", r.Shape[0], r.Shape[1]), fmt.Sprintf("%.3f", r.BPW), fmt.Sprintf("%.2f", r.SNRdB))
	}
	return t.Write(os.Stdout)
}
