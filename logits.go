package forge

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"time"

	"forge/corpus"
	"forge/eval"
	"forge/internal/budget"
	"forge/internal/outpath"
	"forge/safetensors"
	"forge/source"
	"forge/tensor"
)

// LogitsConfig configures Logits.
type LogitsConfig struct {
	Model     string // checkpoint or bundle directory
	Tokens    string // JSON file: a list of token ids, or a list of such lists
	Out       string // output .safetensors
	Decode    bool   // one token at a time (recurrent form) instead of chunked prefill
	Overwrite bool   // replace an existing output that forge wrote
	// Progress, if set, is called as tokens are done with tokens done and total.
	Progress func(done, total int64)
}

// LogitsReport says what Logits computed, per sequence.
type LogitsReport struct {
	Out       string
	Vocab     int
	Mode      string // "prefill" or "decode"
	Sequences []SequenceReport
}

// SequenceReport is one sequence's size, time and most likely next token.
type SequenceReport struct {
	Tokens  int
	Seconds float64
	NextID  int     // argmax of the last position's logits
	NextP   float64 // its softmax probability
}

// Logits runs the model over each token sequence from an empty state and
// writes F32 logits [T, vocab] and the I32 tokens [T] to cfg.Out: named
// logits/tokens for a single list, logits_i/tokens_i for a list of lists.
// Sequences run in calls of model.DefaultChunk tokens (one token per call
// with Decode), whose logits are streamed to the file as they come, so
// memory stays one chunk's logits whatever the length; the file is renamed
// into place only when complete. Everything is checked before the first
// token runs: the output (no input overwritten, nothing replaced but a
// forge output with Overwrite), token ids, the context length and the free
// disk space.
func Logits(ctx context.Context, cfg LogitsConfig) (*LogitsReport, error) {
	if err := checkOutputs(cfg.Overwrite, []string{cfg.Model, cfg.Tokens},
		outpath.Target{Path: cfg.Out, Owned: outpath.ForgeSafetensors}); err != nil {
		return nil, fmt.Errorf("logits: %w", err)
	}
	seqs, nested, err := corpus.ReadTokenLists(cfg.Tokens)
	if err != nil {
		return nil, err
	}
	m, src, err := source.Load(cfg.Model)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	vocab := m.Config().Vocab
	var infos []safetensors.TensorInfo
	var total, bytes int64
	for i, s := range seqs {
		if err := m.CheckTokens(s); err != nil {
			return nil, fmt.Errorf("%s: sequence %d: %w", cfg.Tokens, i, err)
		}
		sfx := ""
		if nested {
			sfx = "_" + strconv.Itoa(i)
		}
		infos = append(infos,
			safetensors.TensorInfo{Name: "logits" + sfx, DType: safetensors.F32, Shape: []int{len(s), vocab}},
			safetensors.TensorInfo{Name: "tokens" + sfx, DType: safetensors.I32, Shape: []int{len(s)}})
		total += int64(len(s))
		bytes += int64(len(s)) * int64(vocab+1) * 4
	}
	if err := budget.Disk(cfg.Out, "logits", bytes); err != nil {
		return nil, err
	}
	mode, chunk := "prefill", 0
	if cfg.Decode {
		mode, chunk = "decode", 1
	}
	w, err := safetensors.Create(cfg.Out, infos, map[string]string{"forge_version": Version, "model": cfg.Model, "mode": mode})
	if err != nil {
		return nil, err
	}
	defer w.Abort()
	rep := &LogitsReport{Out: cfg.Out, Vocab: vocab, Mode: mode}
	st := m.NewState()
	var done int64
	for i, s := range seqs {
		st.Reset()
		start := time.Now()
		var last []float32
		var buf []byte
		err := m.Prefill(ctx, st, s, chunk, func(_ int, lg *tensor.Matrix) error {
			buf = appendF32(buf[:0], lg.Data[:lg.Rows*lg.Cols])
			if _, err := w.Write(buf); err != nil {
				return err
			}
			last = append(last[:0], lg.Row(lg.Rows-1)...)
			if done += int64(lg.Rows); cfg.Progress != nil {
				cfg.Progress(done, total)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("logits: sequence %d: %w", i, err)
		}
		sr := SequenceReport{Tokens: len(s), Seconds: time.Since(start).Seconds()}
		sr.NextID = eval.Argmax(last)
		sr.NextP = math.Exp(-eval.NLL(last, sr.NextID))
		rep.Sequences = append(rep.Sequences, sr)
		if err := w.WriteTensor(infos[2*i+1].Name, int32Bytes(s)); err != nil {
			return nil, err
		}
	}
	return rep, w.Close()
}

// appendF32 appends v as little-endian float32 bytes.
func appendF32(b []byte, v []float32) []byte {
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

func int32Bytes(s []int) []byte {
	b := make([]byte, 0, 4*len(s))
	for _, v := range s {
		b = binary.LittleEndian.AppendUint32(b, uint32(int32(v)))
	}
	return b
}
