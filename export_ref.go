package forge

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"forge/ane/layout"
	"forge/bundle"
	"forge/internal/budget"
	"forge/internal/outpath"
	"forge/model"
)

// LayoutReference names the reference builder's layout (package
// ane/layout, docs/ane.md §3), the one layout Export writes.
const LayoutReference = "reference"

// ExportConfig configures Export. The zero value of every field but Model
// and Out is the default.
type ExportConfig struct {
	Model     string // bundle directory (forge quantize's output)
	Layout    string // "reference" ("" means it)
	Out       string // directory to create
	Overwrite bool   // replace an existing Out that forge wrote
	// Progress, if set, is called after each matrix with bytes written and total.
	Progress func(done, total int64)
}

// ExportReport says what Export wrote.
type ExportReport struct {
	Out      string
	Files    []string // the layout's files, in order
	Matrices int      // matrices written
	Bytes    int64    // their tensor bytes
	// Unexported are the quantizable matrices the bundle keeps raw and the
	// layout leaves to the checkpoint (mixer and head matrices).
	Unexported []string
	// Warnings are facts a user of the directory must know, such as the
	// sign generator of online rotations.
	Warnings []string
}

// Export writes a bundle's matrices in the reference ANE builder's layout
// (package ane/layout, docs/ane.md §3): layer_XX.safetensors,
// layer_XX_mixer.safetensors, lm_head.safetensors and forge-export.json,
// which names the bundle and the checkpoint it was quantized from (forge
// import's default --base). Codebooks, scales and factors are written as
// the bundle stores them (fp16), indices one per byte, so nothing is
// rounded. What the layout cannot hold is refused before anything is
// written, naming the matrix (layout.Plan), and so is an output whose
// filesystem lacks the space. The directory is built as
// OUT.partial, checked by layout.Check against the bundle's configuration
// and its plan, and published by one rename; an existing OUT is replaced
// only with Overwrite and only when forge wrote it.
func Export(ctx context.Context, cfg ExportConfig) (*ExportReport, error) {
	if cfg.Layout != "" && cfg.Layout != LayoutReference {
		return nil, fmt.Errorf("export: layout %q: the one layout is %q", cfg.Layout, LayoutReference)
	}
	if err := checkExportPaths(cfg); err != nil {
		return nil, err
	}
	b, err := bundle.Open(cfg.Model)
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	defer b.Close()
	mc, _ := b.Config()
	files, err := layout.Plan(&mc, b)
	if err != nil {
		return nil, fmt.Errorf("export %s: %w", cfg.Model, err)
	}
	rep := exportReport(cfg.Out, &mc, files)
	if err := budget.Disk(cfg.Out, "the export", rep.Bytes); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	stage, err := outpath.Stage(filepath.Clean(cfg.Out), Version)
	if err != nil {
		return nil, fmt.Errorf("export %s: %w", cfg.Out, err)
	}
	defer stage.Abort()
	if err := layout.Write(ctx, stage.Dir, files, b, cfg.Progress); err != nil {
		return nil, fmt.Errorf("export %s → %s: %w", cfg.Model, cfg.Out, err)
	}
	if err := layout.WriteProvenance(stage.Dir, provenance(b, files)); err != nil {
		return nil, fmt.Errorf("export %s: %w", cfg.Out, err)
	}
	if err := checkExported(stage.Dir, &mc, files); err != nil {
		return nil, fmt.Errorf("export %s: internal error: the directory written fails its check: %w", cfg.Out, err)
	}
	if err := stage.Publish("ane-layout"); err != nil {
		return nil, fmt.Errorf("export %s: %w", cfg.Out, err)
	}
	return rep, nil
}

// checkExportPaths refuses a missing bundle, a checkpoint given as the
// bundle, an output overlapping it and an existing output.
func checkExportPaths(cfg ExportConfig) error {
	if cfg.Model == "" || cfg.Out == "" {
		return fmt.Errorf("export: a bundle and an output directory are required")
	}
	if st, err := os.Stat(cfg.Model); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("export: bundle %s does not exist: %w", cfg.Model, fs.ErrNotExist)
	} else if err != nil {
		return fmt.Errorf("export: bundle %w", err)
	} else if !st.IsDir() || !bundle.IsBundle(cfg.Model) {
		return fmt.Errorf("export: %s has no %s: not a forge bundle (quantize a checkpoint first: forge quantize)", cfg.Model, bundle.ManifestName)
	}
	if _, err := checkStagedDir(cfg.Overwrite, []string{cfg.Model}, outpath.Target{Path: cfg.Out}); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}

// provenance is forge-export.json for the bundle b written as files. Its
// sign_rng is the one the layer files with basis online name (forge's when
// there are none; "per-layer" when they differ).
func provenance(b *bundle.Bundle, files []layout.File) layout.Provenance {
	p := layout.Provenance{Layout: LayoutReference, ForgeVersion: Version}
	for _, f := range files {
		switch rng := f.Meta["sign_rng"]; {
		case rng == "" || rng == p.SignRNG:
		case p.SignRNG == "":
			p.SignRNG = rng
		default:
			p.SignRNG = "per-layer"
		}
	}
	if p.SignRNG == "" {
		p.SignRNG = layout.SignRNGForge
	}
	p.Bundle.Path, _ = filepath.Abs(b.Dir())
	p.Bundle.ContentSHA256 = b.Manifest().ContentSHA256
	p.Base.Path, p.Base.Fingerprint = b.Manifest().Source.Path, b.Manifest().Source.Fingerprint
	return p
}

// exportReport lists the files, the matrices written, the quantizable
// matrices left out, and the warning online rotations with forge's signs
// call for (those with numpy's, from an imported reference export, are
// the reference builder's own).
func exportReport(out string, mc *model.Config, files []layout.File) *ExportReport {
	rep := &ExportReport{Out: out, Bytes: layout.Bytes(files)}
	stored := map[string]bool{}
	online := 0
	for _, f := range files {
		rep.Files = append(rep.Files, f.Name)
		rep.Matrices += len(f.Entries)
		for _, e := range f.Entries {
			stored[e.Name] = true
		}
		if f.Meta["basis"] == layout.BasisOnline && f.Meta["sign_rng"] == layout.SignRNGForge {
			online++
		}
	}
	for _, s := range model.Tensors(mc) {
		if s.Quantizable && !stored[s.Name] {
			rep.Unexported = append(rep.Unexported, s.Name)
		}
	}
	if online > 0 {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf(
			"%d layers have basis online with forge's Hadamard signs (sign_rng %s, lut.NewHadamard); a builder must draw them so: "+
				"the reference's draws numpy's default_rng(seed) signs and would compute wrong MLPs", online, layout.SignRNGForge))
	}
	return rep
}

// checkExported checks the written directory (layout.Check's rules) and
// that it reads back as planned.
func checkExported(dir string, mc *model.Config, files []layout.File) error {
	l, err := layout.Open(dir, mc)
	if err != nil {
		return err
	}
	defer l.Close()
	var planned []layout.Entry
	for _, f := range files {
		planned = append(planned, f.Entries...)
	}
	got := l.Entries()
	if len(got) != len(planned) {
		return fmt.Errorf("%d matrices read back, %d written", len(got), len(planned))
	}
	for i := range got {
		if !reflect.DeepEqual(got[i], planned[i]) {
			return fmt.Errorf("matrix %q reads back as %+v, written as %+v", planned[i].Name, got[i], planned[i])
		}
	}
	return nil
}

// String is the one-line summary forge export prints.
func (r *ExportReport) String() string {
	return fmt.Sprintf("wrote %s: %d files (%s), %d matrices", r.Out, len(r.Files), strings.Join(shortList(r.Files, 4), ", "), r.Matrices)
}

// shortList keeps the first n items and says how many more there are.
func shortList(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(append([]string(nil), s[:n]...), fmt.Sprintf("… %d more", len(s)-n))
}
