package forge

import (
	"context"
	"fmt"
	"forge/eval/lcpp"
	"forge/internal/durable"
	"forge/internal/outpath"
	"forge/model"
	"forge/source"
	"forge/tensor"
	"forge/tokenizer"
	"io"
	"strconv"
)

// LCPPEvalConfig configures EvalLCPP.
type LCPPEvalConfig struct {
	Trace string // the base file: TraceLCPP's, or llama.cpp's --kl-divergence-base output
	Model string // the candidate: checkpoint or bundle directory
	Ctx   int    // if not 0, the window length the base must have
	Out   io.Writer
	JSON  string // if set, the report is also written there as JSON
	// Overwrite replaces an existing JSON report that forge wrote.
	Overwrite bool
	// Progress is called with windows done of total.
	Progress func(done, total int64)
}

// EvalLCPP scores a candidate against a base (TraceLCPP's or llama.cpp's)
// as `llama-perplexity --kl-divergence --kl-divergence-base TRACE` does:
// each stored window, its first token replaced by BOS when the candidate's
// tokenizer adds one, is evaluated from an empty state, and every scored
// position is compared with the stored base distribution
// (lcpp.Score). It refuses a base whose vocabulary size differs from
// the candidate's, whose n_ctx differs from cfg.Ctx (when set), whose
// recorded BOS rule differs from the candidate's, or which is incomplete.
// The report is printed to cfg.Out as llama.cpp prints it and, with
// cfg.JSON, written there as JSON.
func EvalLCPP(ctx context.Context, cfg LCPPEvalConfig) (*lcpp.Report, error) {
	if err := checkOutputs(cfg.Overwrite, []string{cfg.Trace, cfg.Model}, outpath.Target{Path: cfg.JSON, Owned: outpath.ForgeJSON}); err != nil {
		return nil, fmt.Errorf("lcpp eval: %w", err)
	}
	base, err := lcpp.Open(cfg.Trace)
	if err != nil {
		return nil, err
	}
	defer base.Close()
	if cfg.Ctx != 0 && cfg.Ctx != base.NCtx {
		return nil, fmt.Errorf("%w: %s was computed with n_ctx %d, not the requested %d",
			lcpp.ErrMismatch, cfg.Trace, base.NCtx, cfg.Ctx)
	}
	tok, err := tokenizer.Load(cfg.Model)
	if err != nil {
		return nil, err
	}
	bos, err := lcpp.BOS(cfg.Model, tok)
	if err != nil {
		return nil, err
	}
	if base.BOS != lcpp.BOSUnknown && base.BOS != bos {
		return nil, fmt.Errorf("%w: %s began each window with %s, the tokenizer of %s with %s",
			lcpp.ErrMismatch, cfg.Trace, bosText(base.BOS), cfg.Model, bosText(bos))
	}
	m, src, err := source.Load(cfg.Model)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	if v := m.Config().Vocab; v != base.NVocab {
		return nil, fmt.Errorf("%w: inconsistent vocabulary: %s has n_vocab %d, the model %s %d",
			lcpp.ErrMismatch, cfg.Trace, base.NVocab, cfg.Model, v)
	}
	var stats lcpp.Stats
	if err := lcppScore(ctx, m, base, bos, &stats, cfg.Progress); err != nil {
		return nil, err
	}
	rep := stats.Report(base.NCtx, base.NVocab, base.NChunk)
	rep.Model, rep.Base = cfg.Model, cfg.Trace
	if cfg.Out != nil {
		if err := rep.Print(cfg.Out); err != nil {
			return nil, err
		}
	}
	if cfg.JSON != "" {
		data, err := versionedJSON(rep)
		if err != nil {
			return nil, err
		}
		if err := durable.WriteFile(cfg.JSON, data); err != nil {
			return nil, fmt.Errorf("lcpp report %s: %w", cfg.JSON, err)
		}
	}
	return rep, nil
}

// lcppScore evaluates every window of base and adds its scored positions
// to stats, one chunk row per window.
func lcppScore(ctx context.Context, m *model.Model, base *lcpp.Base, bos int, stats *lcpp.Stats,
	progress func(done, total int64)) error {
	first, scored := lcpp.Scored(base.NCtx)
	st := m.NewState()
	var win lcpp.BaseWindow
	var window []int
	pos := make([]lcpp.Position, scored)
	for i := range base.NChunk {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := base.ReadWindow(i, &win); err != nil {
			return err
		}
		window = lcpp.Window(window, base.Tokens, base.NCtx, i, bos)
		lg, err := m.Row(ctx, st, window)
		if err != nil {
			return fmt.Errorf("lcpp eval: window %d: %w", i, err)
		}
		next := base.Tokens[i*base.NCtx+first+1:]
		tensor.Parallel(scored, func(lo, hi int) {
			for j := lo; j < hi; j++ {
				codes, scale, mlp := win.Row(j)
				pos[j] = lcpp.Score(lg.Row(first+j), codes, scale, mlp, next[j])
			}
		})
		for _, p := range pos {
			stats.Add(p)
		}
		stats.EndChunk()
		if progress != nil {
			progress(int64(i+1), int64(base.NChunk))
		}
	}
	return nil
}

func bosText(id int) string {
	if id < 0 {
		return "no BOS"
	}
	return "BOS " + strconv.Itoa(id)
}
