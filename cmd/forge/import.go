package main

import (
	"context"
	"fmt"

	"forge"
	"forge/internal/progress"
)

// ImportCmd is `forge import DIR --out BUNDLE [--base CHECKPOINT]`.
type ImportCmd struct {
	Dir       string `arg:"" name:"dir" help:"Directory in the reference layout (forge export's, or the reference pipeline's)."`
	Base      string `help:"Hugging Face checkpoint holding what the layout does not (embeddings, norms, conv taps, unexported matrices); default: the one the directory's forge-export.json names."`
	Out       string `required:"" help:"Bundle directory to create."`
	Overwrite bool   `help:"Replace an existing bundle at --out that forge wrote."`
}

func (c *ImportCmd) Run(ctx context.Context) error {
	rep, err := forge.Import(ctx, forge.ImportConfig{Dir: c.Dir, Base: c.Base, Out: c.Out, Overwrite: c.Overwrite,
		Progress: progress.New("import", false).Set})
	if err != nil {
		return err
	}
	fmt.Printf("wrote %s: %d matrices from %s, the rest from %s\n", rep.Out, rep.Matrices, c.Dir, rep.Base)
	if n := len(rep.FromBase); n > 0 {
		fmt.Printf("%d quantizable matrices are not in the layout and were copied unquantized from the checkpoint\n", n)
	}
	return nil
}
