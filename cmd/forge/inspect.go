package main

import (
	"encoding/json"
	"fmt"
	"forge/internal/table"
	"forge/internal/units"
	"io"
	"os"
	"slices"
	"strings"

	"forge"
)

// InspectCmd is `forge inspect --model DIR` (or `forge inspect DIR`).
type InspectCmd struct {
	Model string `type:"existingdir" help:"Checkpoint or bundle directory."`
	Dir   string `arg:"" optional:"" type:"existingdir" name:"dir" help:"The same, given as an argument."`
	JSON  bool   `name:"json" help:"Print JSON instead of a table."`
}

func (c *InspectCmd) Run() error {
	dir, err := modelDir(c.Model, c.Dir)
	if err != nil {
		return err
	}
	in, err := forge.Inspect(dir)
	if err != nil {
		return err
	}
	if c.JSON {
		return printJSON(in)
	}
	return writeInspection(os.Stdout, in)
}

// writeInspection prints the summary and the size tables.
func writeInspection(w io.Writer, in *forge.Inspection) error {
	head := &table.Table{}
	head.Row("model", in.Path)
	head.Row("layers", fmt.Sprintf("%d (%d Gated DeltaNet, %d gated attention): %s", in.Layers, in.DeltaNet, in.Attention, forge.LayerPattern(in.LayerKinds)))
	head.Row("hidden / MLP / vocab", fmt.Sprintf("%d / %d / %d", in.Hidden, in.Intermediate, in.Vocab))
	head.Row("attention", fmt.Sprintf("%d q heads, %d kv heads, head_dim %d, rotary %d, theta %g", in.Heads, in.KVHeads, in.HeadDim, in.RotaryDim, in.RopeTheta))
	head.Row("deltanet", fmt.Sprintf("%d key heads × %d, %d value heads × %d, conv %d", in.KeyHeads, in.KeyDim, in.ValueHeads, in.ValueDim, in.ConvKernel))
	head.Row("context", in.Context)
	head.Row("tied embeddings", in.Tied)
	if in.Bundle {
		head.Row("quantization", fmt.Sprintf("%s, default format %s", in.Method, in.Format))
		if in.Refit != "" {
			head.Row("codebook refit", in.Refit)
		}
		if in.Reconstruction != "" {
			head.Row("block reconstruction", in.Reconstruction)
		}
	} else {
		head.Row("dtypes", strings.Join(in.DTypes, ", "))
	}
	parts := table.New("part", "params", "bytes", "bpw", "share", "ANE").AlignRight(1, 2, 3, 4)
	if !in.Bundle {
		parts = table.New("part", "params", "bytes", "bpw", "share").AlignRight(1, 2, 3, 4)
	}
	for _, p := range in.Parts {
		row := []any{p.Part, p.Params, units.BytesPrecise(p.Bytes), fmt.Sprintf("%.3f", p.BPW),
			fmt.Sprintf("%.1f%%", 100*float64(p.Bytes)/float64(max(in.Bytes, 1)))}
		if in.Bundle {
			row = append(row, p.ANE)
		}
		parts.Row(row...)
	}
	parts.Row("total", in.Params, units.BytesPrecise(in.Bytes), fmt.Sprintf("%.3f", 8*float64(in.Bytes)/float64(max(in.Params, 1))), "100.0%")
	tables := []*table.Table{head, parts}
	if len(in.Matrices) > 0 {
		rotated := slices.ContainsFunc(in.Matrices, func(m forge.MatrixStats) bool { return m.Rotation != "" })
		cols := []string{"matrix", "format", "shape", "bytes", "bpw", "ANE"}
		if rotated { // the input rotation, before ANE
			cols = slices.Insert(cols, 5, "rotation")
		}
		ms := table.New(cols...).AlignRight(3, 4)
		for _, m := range in.Matrices {
			row := []any{m.Name, m.Format, fmt.Sprintf("%dx%d", m.Shape[0], m.Shape[1]), units.BytesPrecise(m.Bytes), fmt.Sprintf("%.3f", m.BPW), m.Placement}
			if rotated {
				row = slices.Insert(row, 5, any(m.Rotation))
			}
			ms.Row(row...)
		}
		tables = append(tables, ms)
	}
	for i, t := range tables {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if err := t.Write(w); err != nil {
			return err
		}
	}
	return nil
}

// printJSON prints v as indented JSON on stdout.
func printJSON(v any) error {
	e := json.NewEncoder(os.Stdout)
	e.SetIndent("", "  ")
	e.SetEscapeHTML(false) // generated text keeps its <think> tags as they are
	return e.Encode(v)
}
