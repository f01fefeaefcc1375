package forge

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	"forge/corpus"
	"forge/eval"
	"forge/generate"
	"forge/internal/outpath"
	"forge/model"
	"forge/source"
	"forge/tokenizer"
)

// DefaultTraceSeq is the row length of a trace when TraceConfig.Seq is 0.
const DefaultTraceSeq = 512

// TraceConfig configures Trace. Zero values are the defaults.
type TraceConfig struct {
	Model string   // reference: HF checkpoint or bundle directory
	Data  []string // token sources "FILE[:ROWS]" (package corpus), tokenized as calibration is
	// Generate, instead of Data, is a .jsonl of chat prompts that the
	// reference answers (GenerateRows with Seq and Gen): the rows are the
	// prompts and answers.
	Generate string
	Gen      GenerateOptions
	Out      string // trace file to write (safetensors)
	Seq      int    // tokens per row (0: DefaultTraceSeq)
	// TopK > 0 stores the K most likely tokens and the tail mass per
	// position instead of the full log-softmax (eval.Definition).
	TopK      int
	Seed      uint64 // sampling of ROWS rows out of a file
	Overwrite bool   // replace an existing trace that forge wrote
	// Progress, if set, is called with tokens done and total.
	Progress func(done, total int64)
	// GenerateProgress, if set, follows the answers of Generate
	// (GenerateRowsConfig.Progress).
	GenerateProgress func(done, total int64)
}

// TraceReport says what Trace wrote.
type TraceReport struct {
	Out        string
	Meta       eval.Meta
	Generation *Generation // how the rows were generated (TraceConfig.Generate), else nil
	Tokens     int         // tokens run through the reference
	Seconds    float64     // wall time of the forward passes and the writing
}

// Trace tokenizes cfg.Data with the reference's tokenizer exactly as
// calibration does (corpus.Load with Seq and Seed), or has the reference
// answer cfg.Generate's prompts (GenerateRows), runs the reference over
// every row from an empty state and writes its next-token distributions to
// cfg.Out (eval.Record; layout in package eval). The metadata records the
// reference (path, kind, source.Fingerprint) and the data recipe with file
// hashes: a corpus.Recipe, or a GeneratedRecipe with the generation
// settings.
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
	if cfg.Generate != "" && len(cfg.Data) > 0 {
		return nil, fmt.Errorf("trace: the rows come from the data files or from generated answers, not both")
	}
	inputs := append([]string{cfg.Model}, dataPaths(cfg.Data)...)
	if cfg.Generate != "" {
		inputs = append(inputs, cfg.Generate)
	}
	if err := checkOutputs(cfg.Overwrite, inputs,
		outpath.Target{Path: cfg.Out, Owned: outpath.ForgeSafetensors}); err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	if cfg.Generate != "" {
		return traceGenerated(ctx, cfg, seq)
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
	return recordTrace(ctx, cfg, m, src, seq, set.Rows, set.Recipe())
}

// traceGenerated records the trace of the reference's answers to
// cfg.Generate's prompts.
func traceGenerated(ctx context.Context, cfg TraceConfig, seq int) (*TraceReport, error) {
	rt, err := OpenRuntime(cfg.Model, generate.Options{})
	if err != nil {
		return nil, err
	}
	defer rt.Close()
	g, err := rt.generateRows(ctx, GenerateRowsConfig{Prompts: cfg.Generate, Seq: seq,
		GenerateOptions: cfg.Gen, Progress: cfg.GenerateProgress})
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	rep, err := recordTrace(ctx, cfg, rt.Model, rt.src, seq, g.Set.Rows, g.Recipe())
	if rep != nil {
		rep.Generation = &g.Generation
	}
	return rep, err
}

// recordTrace records the reference's trace of rows, whose recipe goes
// into the metadata.
func recordTrace(ctx context.Context, cfg TraceConfig, m *model.Model, src source.Source, seq int, rows [][]int, recipe any) (*TraceReport, error) {
	kind, fp, err := source.Fingerprint(src)
	if err != nil {
		return nil, fmt.Errorf("trace: fingerprint of %s: %w", cfg.Model, err)
	}
	data, err := json.Marshal(recipe)
	if err != nil {
		return nil, err
	}
	abs, _ := filepath.Abs(cfg.Model)
	meta := eval.Meta{ForgeVersion: Version, Model: abs, ModelKind: kind, Fingerprint: fp, Seq: seq, Data: data}
	start := time.Now()
	got, err := eval.Record(ctx, cfg.Out, m, rows, meta, eval.RecordOptions{TopK: cfg.TopK, Progress: cfg.Progress})
	if err != nil {
		return nil, err
	}
	tokens := 0
	for _, r := range rows {
		tokens += len(r)
	}
	return &TraceReport{Out: cfg.Out, Meta: *got, Tokens: tokens, Seconds: time.Since(start).Seconds()}, nil
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
