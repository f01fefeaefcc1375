package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"forge"
	"forge/internal/progress"
)

// QuantizeCmd is `forge quantize`.
type QuantizeCmd struct {
	Model     string `required:"" type:"existingdir" help:"Hugging Face checkpoint directory."`
	Out       string `required:"" help:"Bundle directory to create."`
	Format    string `required:"" help:"Format of every quantizable matrix, e.g. \"LUT4 per-tensor + pcs\", \"vector 2x16 + pcs\", \"LUT4 g128 + pcs\", \"INT8 per-channel\", \"bf16\"."`
	Method    string `default:"rtn" enum:"rtn" help:"Quantization method: rtn (nearest rounding)."`
	Seed      uint64 `default:"0" help:"Seed for codebook fitting (k-means)."`
	Overwrite bool   `help:"Replace an existing bundle at --out."`
}

func (c *QuantizeCmd) Run(ctx context.Context) error {
	err := forge.Quantize(ctx, forge.QuantizeConfig{
		Model: c.Model, Out: c.Out, Format: c.Format, Method: c.Method, Seed: c.Seed,
		Overwrite: c.Overwrite, Progress: progress.New("quantize", false).Set,
	})
	if err != nil {
		return err
	}
	fmt.Printf("wrote %s\n", c.Out)
	return nil
}

// SNRCmd is `forge snr`.
type SNRCmd struct {
	Model    string `xor:"src" required:"" type:"existingdir" help:"Hugging Face checkpoint directory."`
	Gaussian string `xor:"src" required:"" placeholder:"ROWSxCOLS" help:"Use a standard normal matrix of this shape instead of a model."`
	Formats  string `required:"" help:"Comma-separated formats, e.g. \"LUT4 per-tensor + pcs,vector 2x16 + pcs\"."`
	Tensors  string `help:"Regexp over tensor names (default: every quantizable matrix)."`
	Seed     uint64 `default:"0" help:"Seed for the Gaussian matrix and k-means."`
	JSON     bool   `name:"json" help:"Print JSON."`
}

func (c *SNRCmd) Run(ctx context.Context) error {
	cfg := forge.SNRConfig{Model: c.Model, Tensors: c.Tensors, Seed: c.Seed, Progress: progress.New("snr", false).Set}
	for _, f := range strings.Split(c.Formats, ",") {
		if f = strings.TrimSpace(f); f != "" {
			cfg.Formats = append(cfg.Formats, f)
		}
	}
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
		e := json.NewEncoder(os.Stdout)
		e.SetIndent("", "  ")
		return e.Encode(res)
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "tensor\tformat\tshape\tbpw\tSNR dB\t\n")
	for _, r := range res {
		fmt.Fprintf(tw, "%s\t%s\t%dx%d\t%.3f\t%.2f\t\n", r.Tensor, r.Format, r.Shape[0], r.Shape[1], r.BPW, r.SNRdB)
	}
	return tw.Flush()
}
