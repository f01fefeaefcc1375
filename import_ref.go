package forge

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"forge/ane/layout"
	"forge/bundle"
	"forge/checkpoint"
	"forge/internal/outpath"
	"forge/source"
)

// ImportConfig configures Import. The zero value of every field but Dir
// and Out is the default.
type ImportConfig struct {
	Dir string // directory in the reference layout (forge export's or the reference's)
	// Base is the Hugging Face checkpoint that holds what the layout does
	// not: embeddings, norms, conv taps, A_log, dt_bias, in_proj_a/b, and
	// the matrices the layout leaves out. "" means the one Dir's
	// forge-export.json names (the exported bundle's source).
	Base      string
	Out       string // bundle directory to create
	Overwrite bool   // replace an existing bundle that forge wrote
	ShardSize int64  // bytes per bundle shard (0: bundle's default, 2 GiB)
	// Progress, if set, is called after each tensor with tensors done and total.
	Progress func(done, total int64)
}

// ImportReport says what Import wrote.
type ImportReport struct {
	Out, Base string
	Matrices  int // matrices taken from the layout
	// FromBase are the quantizable matrices the layout does not hold, taken
	// unquantized from the checkpoint.
	FromBase []string
}

// Import reads a directory in the reference layout (package ane/layout,
// docs/ane.md §3) into a forge bundle, so that forge can inspect,
// evaluate and serve it: every matrix the layout holds keeps its format,
// fp16 codebook, scales, low-rank factors and (MLP) online rotation, its
// indices packed as a bundle stores them; every other tensor is copied
// from Base in its stored dtype, with config.json and the tokenizer files.
// The whole directory is checked (layout.Open) before anything is
// written. An online rotation keeps the generator of its signs: numpy's
// default_rng(seed).choice for the reference's own exports (no sign_rng)
// and numpy-default-rng-choice, forge's PCG for forge-pcg-v1 (the bundle
// records it, bundle.RotationEntry.Signs); another sign_rng is refused.
// When Dir was written by
// forge export from bundle B and Base is B's source checkpoint, the
// bundle's matrices equal B's array for array, so its logits are B's bit
// for bit. Base must have the fingerprint forge-export.json records, when
// it records one.
func Import(ctx context.Context, cfg ImportConfig) (*ImportReport, error) {
	base, err := importBase(cfg)
	if err != nil {
		return nil, err
	}
	out, err := checkStagedDir(cfg.Overwrite, []string{cfg.Dir, base}, outpath.Target{Path: cfg.Out, Owned: bundle.IsBundle})
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	ck, err := source.OpenCheckpoint(base)
	if err != nil {
		return nil, fmt.Errorf("import: base: %w", err)
	}
	defer ck.Close()
	fp, err := ck.Fingerprint()
	if err != nil {
		return nil, fmt.Errorf("import: base %s: %w", base, err)
	}
	if p, ok, err := layout.ReadProvenance(cfg.Dir); err != nil {
		return nil, fmt.Errorf("import: %w", err)
	} else if ok && p.Base.Fingerprint != "" && p.Base.Fingerprint != fp {
		return nil, fmt.Errorf("import: base %s has fingerprint %s, but %s was exported from a bundle of the checkpoint %s (fingerprint %s): give that one as --base",
			base, fp, cfg.Dir, p.Base.Path, p.Base.Fingerprint)
	}
	mc, _ := ck.Config()
	l, err := layout.Open(cfg.Dir, &mc)
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	defer l.Close()
	items, rep := importItems(ck, l)
	rep.Out, rep.Base = cfg.Out, base
	absDir, _ := filepath.Abs(cfg.Dir)
	absBase, _ := filepath.Abs(base)
	w, err := bundle.Create(out, items, bundle.WriteOptions{ShardSize: cfg.ShardSize, Overwrite: cfg.Overwrite, SourceDir: base,
		Manifest: bundle.Manifest{ForgeVersion: Version, Source: bundle.SourceInfo{Path: absBase, Fingerprint: fp},
			Quant: bundle.QuantInfo{Method: "import", Recipe: map[string]any{"layout": LayoutReference, "dir": absDir}}}})
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	defer w.Abort()
	for i, it := range items {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := importItem(w, ck, l, it); err != nil {
			return nil, fmt.Errorf("import %s → %s: %w", cfg.Dir, cfg.Out, err)
		}
		if cfg.Progress != nil {
			cfg.Progress(int64(i+1), int64(len(items)))
		}
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("import %s → %s: %w", cfg.Dir, cfg.Out, err)
	}
	return rep, nil
}

// importBase is the checkpoint to take the rest of the model from:
// cfg.Base, else the one Dir's forge-export.json names.
func importBase(cfg ImportConfig) (string, error) {
	if cfg.Dir == "" || cfg.Out == "" {
		return "", fmt.Errorf("import: a layout directory and an output bundle are required")
	}
	if st, err := os.Stat(cfg.Dir); errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("import: %s does not exist: %w", cfg.Dir, fs.ErrNotExist)
	} else if err != nil {
		return "", fmt.Errorf("import: %w", err)
	} else if !st.IsDir() {
		return "", fmt.Errorf("import: %s is not a directory", cfg.Dir)
	}
	if cfg.Base != "" {
		return cfg.Base, nil
	}
	p, ok, err := layout.ReadProvenance(cfg.Dir)
	switch {
	case err != nil:
		return "", fmt.Errorf("import: %w", err)
	case !ok || p.Base.Path == "":
		return "", fmt.Errorf("import: %s has no %s naming its checkpoint: give the checkpoint that holds the embeddings, norms and other tensors the layout does not (--base)", cfg.Dir, layout.ProvenanceName)
	}
	if _, err := os.Stat(p.Base.Path); err != nil {
		return "", fmt.Errorf("import: the checkpoint %s that %s names is not there (%v): give it with --base", p.Base.Path, layout.ProvenanceName, err)
	}
	return p.Base.Path, nil
}

// importItems declares the bundle's tensors in checkpoint order: the
// layout's matrices in their formats, everything else raw from the base.
func importItems(ck *checkpoint.Checkpoint, l *layout.Layout) ([]bundle.Item, *ImportReport) {
	rep := &ImportReport{}
	var items []bundle.Item
	for _, t := range ck.Tensors() {
		it := bundle.Item{Name: t.Spec.Name, Shape: t.Spec.Shape, DType: t.DType, Matrix: t.Spec.Matrix}
		if e, ok := l.Entry(t.Spec.Name); ok {
			it.Format, it.Rank = e.Format, e.Rank
			if r := e.Rotation; r != nil {
				it.Rotation = bundle.NewRotationEntry(r.Seed, r.Block, r.Signs)
			}
			rep.Matrices++
		} else if t.Spec.Quantizable {
			rep.FromBase = append(rep.FromBase, t.Spec.Name)
		}
		items = append(items, it)
	}
	return items, rep
}

// importItem writes one declared tensor: a layout matrix built by
// layout.Matrix, or the base's raw bytes.
func importItem(w *bundle.Writer, ck *checkpoint.Checkpoint, l *layout.Layout, it bundle.Item) error {
	if it.Format.Kind == 0 {
		raw, err := ck.Raw(it.Name)
		if err != nil {
			return err
		}
		return w.Raw(it.Name, raw)
	}
	m, err := l.Matrix(it.Name)
	if err != nil {
		return err
	}
	return w.Matrix(it.Name, m)
}
