package forge

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"forge/corpus"
	"forge/internal/outpath"
)

// checkOutputs is every job's guard before it does any work: no output
// may equal, contain or lie inside an input or another output, and an
// existing output is replaced only with overwrite and only when forge
// wrote it (package internal/outpath). Empty paths are skipped.
func checkOutputs(overwrite bool, inputs []string, targets ...outpath.Target) error {
	var outs []string
	for i, t := range targets {
		if t.Path == "" {
			continue
		}
		for _, o := range outs {
			if outpath.Disjoint([]string{t.Path}, []string{o}) != nil {
				return fmt.Errorf("%w: two outputs overlap: %s and %s", outpath.ErrOverlap, o, t.Path)
			}
		}
		if err := outpath.Disjoint([]string{t.Path}, inputs); err != nil {
			return err
		}
		if err := outpath.Check(targets[i], overwrite); err != nil {
			return err
		}
		outs = append(outs, t.Path)
	}
	return nil
}

// checkStagedDir checks an output directory that a job builds as
// OUT.partial and publishes by one rename (outpath.Stage): neither may
// overlap the inputs, and an existing OUT may be replaced only with
// overwrite and only when it passes t's ownership test. It returns the
// cleaned path.
func checkStagedDir(overwrite bool, inputs []string, t outpath.Target) (string, error) {
	t.Path, t.Dir = filepath.Clean(t.Path), true
	if err := outpath.Disjoint([]string{t.Path + ".partial"}, inputs); err != nil {
		return "", err
	}
	return t.Path, checkOutputs(overwrite, inputs, t)
}

// dataPaths returns the files of "FILE[:ROWS]" sources, skipping any that
// do not parse (their error comes later, where they are read).
func dataPaths(specs []string) []string {
	var out []string
	for _, s := range specs {
		if sp, err := corpus.ParseSpec(s); err == nil {
			out = append(out, sp.Path)
		} else {
			out = append(out, s)
		}
	}
	return out
}

// versionedJSON is v (a struct that encodes as a JSON object) as indented
// JSON with "forge_version" first: the version that wrote a report, which
// also marks it as forge's own output (outpath.ForgeJSON).
func versionedJSON(v any) ([]byte, error) {
	raw, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	if len(raw) < 2 || raw[0] != '{' {
		return nil, fmt.Errorf("versionedJSON: %T is not a JSON object", v)
	}
	head := fmt.Sprintf("{\n  \"forge_version\": %q", Version)
	if string(raw) != "{}" {
		head += ","
	}
	return append(append([]byte(head), raw[1:]...), '\n'), nil
}
