package forge

import (
	"context"
	"fmt"
	"io"
	"strings"

	"forge/bundle"
	"forge/eval"
	"forge/internal/durable"
	"forge/internal/npy"
	"forge/internal/outpath"
	"forge/model"
	"forge/source"
)

// EvalConfig configures Evaluate. Empty output paths write nothing.
type EvalConfig struct {
	Trace    string // trace file written by Trace
	Model    string // candidate: bundle or HF checkpoint directory
	JSON     string // report as JSON
	KLOut    string // per-position KL, float32 1-D .npy
	Markdown string // report as a Markdown table
	// Reference, if set, makes an ablation: the model evaluated is the
	// reference checkpoint with only the matrices of Parts (comma-separated
	// plan parts: mlp, gdn, attn, kv, head; "" = all) in Layers ("24-63",
	// "5", "" = all) taken from Model (the seed's PARTS / QLAYERS; docs/quantization.md §4.1, §4.3).
	Reference     string
	Parts, Layers string
	Overwrite     bool     // replace existing output files that forge wrote
	KV            model.KV // the candidate's KV cache format
	// Act is the candidate's activations: model.ActInt8 scores every row
	// with int8 activations (model.ActInt8All), as decode computes them.
	Act model.Act
	// Progress, if set, is called with tokens done and total.
	Progress func(done, total int64)
	// Log, if set, receives warnings (a candidate made from another
	// checkpoint than the trace's reference).
	Log func(line string)
}

// Evaluate scores the candidate cfg.Model against the reference trace
// cfg.Trace (eval.Score: KL, top-1, perplexities, Δp per position),
// summarizes it (eval.Summarize), adds the size of the candidate's
// quantizable matrices and writes the requested files.
func Evaluate(ctx context.Context, cfg EvalConfig) (*eval.Report, error) {
	if cfg.Reference != "" { // settings first, before any file is read
		if _, err := source.ParseAblation(cfg.Parts, cfg.Layers); err != nil {
			return nil, err
		}
	}
	if err := checkOutputs(cfg.Overwrite, []string{cfg.Trace, cfg.Model, cfg.Reference},
		outpath.Target{Path: cfg.JSON, Owned: outpath.ForgeJSON},
		outpath.Target{Path: cfg.KLOut, Owned: outpath.NPY},
		outpath.Target{Path: cfg.Markdown, Owned: outpath.ForgeMarkdown}); err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	tr, err := eval.OpenTrace(cfg.Trace)
	if err != nil {
		return nil, err
	}
	defer tr.Close()
	c, err := openCandidate(cfg)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if err := tr.CheckVocab(c.m.Config().Vocab); err != nil {
		return nil, err
	}
	if cfg.Log != nil && tr.Meta.ModelKind == "checkpoint" && c.sourceFP != "" && c.sourceFP != tr.Meta.Fingerprint {
		cfg.Log(fmt.Sprintf("warning: %s was not made from the trace's reference %s (fingerprint %.12s…, the trace's %.12s…)",
			cfg.Model, tr.Meta.Model, c.sourceFP, tr.Meta.Fingerprint))
	}
	res, err := eval.Score(ctx, c.m, tr, eval.ScoreOptions{Progress: cfg.Progress, KV: cfg.KV, Act: scoreAct(cfg.Act)})
	if err != nil {
		return nil, err
	}
	rep := eval.Summarize(res)
	rep.Trace, rep.Model, rep.Bytes = cfg.Trace, cfg.Model, c.bytes
	if cfg.KV != model.KVFloat32 {
		rep.KV = cfg.KV.String()
	}
	if cfg.Act != model.ActFloat32 {
		rep.Act = model.ActInt8.String()
	}
	if cfg.Reference != "" {
		rep.Reference, rep.Parts, rep.Layers = cfg.Reference, cfg.Parts, cfg.Layers
	}
	if c.weights > 0 {
		rep.BPW = 8 * float64(c.bytes) / float64(c.weights)
	}
	if c.blockWeights > 0 {
		rep.BlocksBPW = 8 * float64(c.blockBytes) / float64(c.blockWeights)
	}
	return rep, writeReport(cfg, rep)
}

// candidate is the model under evaluation and what the report says of it.
type candidate struct {
	m *model.Model
	io.Closer
	bytes   int64 // stored bytes of the quantizable matrices
	weights int64 // their weights
	// blockBytes and blockWeights are the same for the decoder layers'
	// matrices alone (the head left out).
	blockBytes, blockWeights int64
	sourceFP                 string // fingerprint of the checkpoint it was made from (source.Origin; "" if unknown)
}

// openCandidate loads the candidate: a bundle or a checkpoint, or with
// cfg.Reference the ablation of it (its bytes then count the matrices
// taken from it, the rest at the reference's bf16).
func openCandidate(cfg EvalConfig) (*candidate, error) {
	var m *model.Model
	var src, cand source.Source
	sel := source.Ablation{Hi: -1}
	if cfg.Reference != "" {
		var err error
		if sel, err = source.ParseAblation(cfg.Parts, cfg.Layers); err != nil {
			return nil, err
		}
		a, err := source.OpenAblation(cfg.Reference, cfg.Model, sel)
		if err != nil {
			return nil, err
		}
		if m, err = model.Load(a); err != nil {
			a.Close()
			return nil, fmt.Errorf("ablation of %s in %s: %w", cfg.Model, cfg.Reference, err)
		}
		src, cand = a, a.Candidate()
	} else {
		var err error
		if m, src, err = source.Load(cfg.Model); err != nil {
			return nil, err
		}
		cand = src
	}
	c := &candidate{m: m, Closer: src}
	mc := m.Config()
	for _, s := range model.Tensors(&mc) {
		if !s.Quantizable {
			continue
		}
		n := 2 * s.Elements() // bf16, the reference's precision
		if b, ok := cand.(*bundle.Bundle); ok && sel.Selects(s.Name) {
			n, _ = b.StoredBytes(s.Name)
		}
		c.weights += s.Elements()
		c.bytes += n
		if s.Layer >= 0 {
			c.blockWeights += s.Elements()
			c.blockBytes += n
		}
	}
	var err error
	if c.sourceFP, err = source.Origin(cand); err != nil {
		src.Close()
		return nil, fmt.Errorf("model %s: fingerprint: %w", cfg.Model, err)
	}
	return c, nil
}

// writeReport writes the files cfg asks for, each atomically.
func writeReport(cfg EvalConfig, rep *eval.Report) error {
	if cfg.KLOut != "" {
		if err := npy.WriteFloat32(cfg.KLOut, rep.KL); err != nil {
			return err
		}
	}
	if cfg.JSON != "" {
		raw, err := versionedJSON(rep)
		if err != nil {
			return err
		}
		if err := durable.WriteFile(cfg.JSON, raw); err != nil {
			return fmt.Errorf("eval: JSON report %s: %w", cfg.JSON, err)
		}
	}
	if cfg.Markdown != "" {
		var b strings.Builder
		b.WriteString(outpath.MarkdownHeader)
		rep.WriteMarkdown(&b)
		if err := durable.WriteFile(cfg.Markdown, []byte(b.String())); err != nil {
			return fmt.Errorf("eval: Markdown report %s: %w", cfg.Markdown, err)
		}
	}
	return nil
}

// scoreAct is the precision Score runs a candidate at to measure act: int8
// activations on every row (a trace row is one long prefill, which
// model.ActInt8 would leave in float32).
func scoreAct(act model.Act) model.Act {
	if act == model.ActFloat32 {
		return act
	}
	return model.ActInt8All
}
