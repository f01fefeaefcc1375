package forge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"forge/eval/lcpp"
	"forge/internal/outpath"
	"forge/source"
	"forge/tensor"
	"forge/tokenizer"
	"os"
	"strconv"
)

// LCPPTraceConfig configures TraceLCPP.
type LCPPTraceConfig struct {
	Model string // the base model: checkpoint or bundle directory (its tokenizer files are used)
	Data  string // a text file, read whole and tokenized once
	Out   string // the base file to write
	Ctx   int    // window length n_ctx (0: 512, llama-perplexity's default)
	// LlamaCpp writes llama.cpp's own --kl-divergence-base binary layout
	// (which llama-perplexity --kl-divergence can read) instead of forge's
	// safetensors layout with provenance.
	LlamaCpp  bool
	Overwrite bool                    // replace an existing base that forge wrote
	Progress  func(done, total int64) // windows done of total
}

// TraceLCPP records a base for the llama.cpp-compatible KL mode
// (docs/quantization.md §7.3), as `llama-perplexity --kl-divergence-base OUT -f DATA
// -c CTX` does: the text is tokenized once (a BOS token first when the
// tokenizer adds one, see lcpp.BOS), cut into ⌊n_tokens/n_ctx⌋ windows (at
// least 2·n_ctx tokens are needed), each window evaluated from an empty
// state with its first token replaced by BOS when one is added, and the
// logits of positions n_ctx/2 … n_ctx−2 stored compressed to uint16
// (lcpp.Compress). The file is written atomically.
func TraceLCPP(ctx context.Context, cfg LCPPTraceConfig) error {
	nCtx := cfg.Ctx
	if nCtx == 0 {
		nCtx = lcpp.DefaultCtx
	}
	if err := checkOutputs(cfg.Overwrite, []string{cfg.Model, cfg.Data}, outpath.Target{Path: cfg.Out,
		Owned: func(p string) bool { return outpath.ForgeSafetensors(p) || outpath.LlamaCppBase(p) }}); err != nil {
		return fmt.Errorf("lcpp trace: %w", err)
	}
	text, err := os.ReadFile(cfg.Data)
	if err != nil {
		return fmt.Errorf("lcpp trace: %w", err)
	}
	tok, err := tokenizer.Load(cfg.Model)
	if err != nil {
		return err
	}
	bos, err := lcpp.BOS(cfg.Model, tok)
	if err != nil {
		return err
	}
	var tokens []int
	if bos >= 0 {
		tokens = append(tokens, bos)
	}
	tokens = tok.EncodeAppend(tokens, string(text))
	nChunk, err := lcpp.Chunks(len(tokens), nCtx)
	if err != nil {
		return fmt.Errorf("lcpp trace %s: %w", cfg.Data, err)
	}
	tokens = tokens[:nChunk*nCtx]
	m, src, err := source.Load(cfg.Model)
	if err != nil {
		return err
	}
	defer src.Close()
	vocab := m.Config().Vocab
	if err := m.CheckIDs(tokens); err != nil {
		return fmt.Errorf("lcpp trace %s: tokenizer of %s: %w", cfg.Data, cfg.Model, err)
	}
	if err := m.CheckTokens(make([]int, nCtx)); err != nil {
		return fmt.Errorf("lcpp trace: windows of %d tokens: %w", nCtx, err)
	}
	meta, err := lcppMeta(cfg, src, tok, tokens, text)
	if err != nil {
		return err
	}
	format := lcpp.Forge
	if cfg.LlamaCpp {
		format = lcpp.LlamaCpp
	}
	w, err := lcpp.Create(cfg.Out, lcpp.Header{NCtx: nCtx, NVocab: vocab, NChunk: nChunk,
		Tokens: tokens, BOS: bos, Meta: meta}, format)
	if err != nil {
		return err
	}
	defer w.Abort()
	first, scored := lcpp.Scored(nCtx)
	st := m.NewState()
	var win lcpp.BaseWindow
	win.Resize(scored, vocab)
	var window []int
	for i := range nChunk {
		if err := ctx.Err(); err != nil {
			return err
		}
		window = lcpp.Window(window, tokens, nCtx, i, bos)
		lg, err := m.Row(ctx, st, window)
		if err != nil {
			return fmt.Errorf("lcpp trace: window %d: %w", i, err)
		}
		tensor.Parallel(scored, func(lo, hi int) {
			for j := lo; j < hi; j++ {
				win.Compress(j, lg.Row(first+j))
			}
		})
		if err := w.WriteWindow(&win); err != nil {
			return err
		}
		if cfg.Progress != nil {
			cfg.Progress(int64(i+1), int64(nChunk))
		}
	}
	return w.Close()
}

// lcppMeta is a forge base's provenance: the model, its kind and
// fingerprint (source.Fingerprint, as traces record them; read back by
// lcpp.Header.Model), the data file and its SHA-256, the token count, and
// how many special tokens the tokenizer recognized in the text (llama.cpp's perplexity does not
// parse special tokens written in the text, so a nonzero count means its
// tokenization of the same file differs).
func lcppMeta(cfg LCPPTraceConfig, src source.Source, tok *tokenizer.Tokenizer, tokens []int, text []byte) (map[string]string, error) {
	kind, fp, err := source.Fingerprint(src)
	if err != nil {
		return nil, fmt.Errorf("model %s: fingerprint: %w", cfg.Model, err)
	}
	sum := sha256.Sum256(text)
	special := 0
	for _, t := range tokens {
		if tok.IsSpecial(t) {
			special++
		}
	}
	return map[string]string{"model": cfg.Model, "model_kind": kind, "model_fingerprint": fp, "data": cfg.Data,
		"data_sha256": hex.EncodeToString(sum[:]), "n_tokens_used": strconv.Itoa(len(tokens)),
		"special_tokens_in_text": strconv.Itoa(special), "forge_version": Version}, nil
}
