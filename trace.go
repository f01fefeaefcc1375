package forge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"forge/bundle"
	"forge/calib"
	"forge/checkpoint"
	"forge/eval"
	"forge/internal/outpath"
	"forge/tokenizer"
)

// DefaultTraceSeq is the row length of a trace when TraceConfig.Seq is 0.
const DefaultTraceSeq = 512

// TraceConfig configures Trace. Zero values are the defaults.
type TraceConfig struct {
	Model string   // reference: HF checkpoint or bundle directory
	Data  []string // token sources "FILE[:ROWS]" (package calib), tokenized as calibration is
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
// calibration does (calib.Load with Seq and Seed), runs the reference over
// every row from an empty state and writes its next-token distributions to
// cfg.Out (eval.Record; layout in package eval). The metadata records the
// reference (path, kind, fingerprint) and the data recipe with file hashes.
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
	set, err := loadRows(cfg.Model, cfg.Data, calib.Options{Seq: seq, Seed: cfg.Seed})
	if err != nil {
		return nil, err
	}
	m, src, err := loadModel(cfg.Model)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	kind, fp, err := fingerprint(src)
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
func loadRows(dir string, data []string, opt calib.Options) (*calib.Set, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("trace: no evaluation data")
	}
	var specs []calib.Spec
	for _, s := range data {
		sp, err := calib.ParseSpec(s)
		if err != nil {
			return nil, fmt.Errorf("trace: evaluation data: %w", err)
		}
		specs = append(specs, sp)
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("trace: the data is tokenized with the model's tokenizer: %w", err)
	}
	set, err := calib.Load(specs, tok, opt)
	if err != nil {
		return nil, fmt.Errorf("trace: evaluation data: %w", err)
	}
	return set, nil
}

// fingerprint identifies a reference or candidate: a checkpoint by
// checkpoint.Fingerprint (config and tensor layout), a bundle by the
// SHA-256 of its forge.json, which lists the SHA-256 of every shard.
func fingerprint(src source) (kind, fp string, err error) {
	switch s := src.(type) {
	case *checkpoint.Checkpoint:
		fp, err := s.Fingerprint()
		return "checkpoint", fp, err
	case *bundle.Bundle:
		raw, err := os.ReadFile(filepath.Join(s.Dir(), bundle.ManifestName))
		if err != nil {
			return "", "", err
		}
		sum := sha256.Sum256(raw)
		return "bundle", hex.EncodeToString(sum[:]), nil
	}
	return "", "", fmt.Errorf("unknown source %T", src)
}
