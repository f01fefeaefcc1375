package main

import (
	"encoding/json"
	"os"

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
	return in.WriteTable(os.Stdout)
}

// printJSON prints v as indented JSON on stdout.
func printJSON(v any) error {
	e := json.NewEncoder(os.Stdout)
	e.SetIndent("", "  ")
	return e.Encode(v)
}
