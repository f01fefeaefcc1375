package forge

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	"forge/corpus"
	"forge/eval"
	"forge/internal/outpath"
	"forge/source"
	"forge/tokenizer"
)

// DefaultTraceSeq is the row length of a trace when TraceConfig.Seq is 0.
const DefaultTraceSeq = 512

// TraceConfig configures Trace. Zero values are the defaults.
type TraceConfig struct {
	Model string   // reference: HF checkpoint or bundle directory
	Data  []string // token sources "FILE[:ROWS]" (package corpus), tokenized as calibration is
	Out   string   // trace file to write (safetensors)
	Seq   int      // tokens per row (0: DefaultTraceSeq)
	// TopK > 0 stores the K most likely tokens and the tail mass per
	// position instead of the full log-softmax (eval.Definition).
	TopK      int
	Seed      uint64 // sampling of ROWS rows out of a file
	Overwrite bool   // replace an existing trace that forge wrote
	// Progress, if set, is called with tokens done and total.
	Progress func(done, total int64)
}

// TraceReport says what Trace wrote.
type TraceReport struct {
	Out     string
	Meta    eval.Meta
	Tokens  int     // tokens run through the reference
	Seconds float64 // wall time of the forward passes and the writing
}

// Trace tokenizes cfg.Data with the reference's tokenizer exactly as
// calibration does (corpus.Load with Seq and Seed), runs the reference over
// every row from an empty state and writes its next-token distributions to
// cfg.Out (eval.Record; layout in package eval). The metadata records the
// reference (path, kind, source.Fingerprint) and the data recipe with file hashes.
func Trace(ctx context.Context, cfg TraceConfig) (*TraceReport, error) {
	if cfg.Out == "" {
		return nil, fmt.Errorf("trace: no output file")
	}
	seq := cfg.Seq
	if seq == 0 {
		seq = DefaultTraceSeq
	}
	if seq < 2 {
		return nil, fmt.Errorf("trace: rows of %d tokens: a row needs at least 2 tokens to score one", seq)
	}
	if err := checkOutputs(cfg.Overwrite, append([]string{cfg.Model}, dataPaths(cfg.Data)...),
		outpath.Target{Path: cfg.Out, Owned: outpath.ForgeSafetensors}); err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	set, err := loadRows(cfg.Model, cfg.Data, corpus.Options{Seq: seq, Seed: cfg.Seed})
	if err != nil {
		return nil, err
	}
	m, src, err := source.Load(cfg.Model)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	kind, fp, err := source.Fingerprint(src)
	if err != nil {
		return nil, fmt.Errorf("trace: fingerprint of %s: %w", cfg.Model, err)
	}
	recipe, err := json.Marshal(set.Recipe())
	if err != nil {
		return nil, err
	}
	abs, _ := filepath.Abs(cfg.Model)
	meta := eval.Meta{ForgeVersion: Version, Model: abs, ModelKind: kind, Fingerprint: fp, Seq: seq, Data: recipe}
	start := time.Now()
	got, err := eval.Record(ctx, cfg.Out, m, set.Rows, meta, eval.RecordOptions{TopK: cfg.TopK, Progress: cfg.Progress})
	if err != nil {
		return nil, err
	}
	return &TraceReport{Out: cfg.Out, Meta: *got, Tokens: set.Tokens(), Seconds: time.Since(start).Seconds()}, nil
}

// loadRows reads token rows from "FILE[:ROWS]" sources with the tokenizer
// of the model in dir.
func loadRows(dir string, data []string, opt corpus.Options) (*corpus.Set, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("trace: no evaluation data")
	}
	var specs []corpus.Spec
	for _, s := range data {
		sp, err := corpus.ParseSpec(s)
		if err != nil {
			return nil, fmt.Errorf("trace: evaluation data: %w", err)
		}
		specs = append(specs, sp)
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("trace: the data is tokenized with the model's tokenizer: %w", err)
	}
	set, err := corpus.Load(specs, tok, opt)
	if err != nil {
		return nil, fmt.Errorf("trace: evaluation data: %w", err)
	}
	return set, nil
}
