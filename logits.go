package forge

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"time"

	"forge/model"
	"forge/safetensors"
)

// LogitsConfig configures Logits.
type LogitsConfig struct {
	Model  string // checkpoint or bundle directory
	Tokens string // JSON file: a list of token ids, or a list of such lists
	Out    string // output .safetensors
	Decode bool   // one token at a time (recurrent form) instead of one prefill
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
// The file is streamed one sequence at a time and renamed into place only
// when complete.
func Logits(ctx context.Context, cfg LogitsConfig) (*LogitsReport, error) {
	seqs, nested, err := ReadTokens(cfg.Tokens)
	if err != nil {
		return nil, err
	}
	m, src, err := loadModel(cfg.Model)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	for i, s := range seqs {
		if err := m.CheckTokens(s); err != nil {
			return nil, fmt.Errorf("%s: sequence %d: %w", cfg.Tokens, i, err)
		}
	}
	vocab := m.Config().Vocab
	var infos []safetensors.TensorInfo
	for i, s := range seqs {
		sfx := ""
		if nested {
			sfx = "_" + strconv.Itoa(i)
		}
		infos = append(infos,
			safetensors.TensorInfo{Name: "logits" + sfx, DType: safetensors.F32, Shape: []int{len(s), vocab}},
			safetensors.TensorInfo{Name: "tokens" + sfx, DType: safetensors.I32, Shape: []int{len(s)}})
	}
	mode := "prefill"
	if cfg.Decode {
		mode = "decode"
	}
	w, err := safetensors.Create(cfg.Out, infos, map[string]string{"forge_version": Version, "model": cfg.Model, "mode": mode})
	if err != nil {
		return nil, err
	}
	defer w.Abort()
	rep := &LogitsReport{Out: cfg.Out, Vocab: vocab, Mode: mode}
	st := m.NewState()
	for i, s := range seqs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		st.Reset()
		start := time.Now()
		last, err := runSequence(m, st, s, cfg.Decode, w, infos[2*i].Name)
		if err != nil {
			return nil, err
		}
		sr := SequenceReport{Tokens: len(s), Seconds: time.Since(start).Seconds()}
		sr.NextID, sr.NextP = argmaxProb(last)
		rep.Sequences = append(rep.Sequences, sr)
		if err := w.WriteTensor(infos[2*i+1].Name, int32Bytes(s)); err != nil {
			return nil, err
		}
	}
	return rep, w.Close()
}

// argmaxProb returns the argmax of logits and its softmax probability.
func argmaxProb(logits []float32) (int, float64) {
	best := 0
	for i, v := range logits {
		if v > logits[best] {
			best = i
		}
	}
	var z float64
	for _, v := range logits {
		z += math.Exp(float64(v - logits[best]))
	}
	return best, 1 / z
}

// runSequence computes one sequence's logits, streams them row by row and
// returns a copy of the last row.
func runSequence(m *model.Model, st *model.State, toks []int, decode bool, w *safetensors.Writer, name string) ([]float32, error) {
	var buf []byte
	emit := func(row []float32) error {
		buf = buf[:0]
		for _, v := range row {
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
		}
		_, err := w.Write(buf)
		return err
	}
	if !decode {
		lg := m.Forward(st, toks)
		for t := range lg.Rows {
			if err := emit(lg.Row(t)); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
		}
		return slices.Clone(lg.Row(lg.Rows - 1)), nil
	}
	var last []float32
	for _, tok := range toks {
		lg := m.Forward(st, []int{tok})
		if err := emit(lg.Row(0)); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		last = lg.Row(0)
	}
	return slices.Clone(last), nil
}

func int32Bytes(s []int) []byte {
	b := make([]byte, 0, 4*len(s))
	for _, v := range s {
		b = binary.LittleEndian.AppendUint32(b, uint32(int32(v)))
	}
	return b
}

// ReadTokens reads a JSON list of token ids or a list of such lists.
// nested reports which; every sequence must be non-empty.
func ReadTokens(path string) (seqs [][]int, nested bool, err error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, false, err
	}
	raw = bytes.TrimSpace(raw)
	var flat []int
	if err := json.Unmarshal(raw, &flat); err == nil {
		seqs = [][]int{flat}
	} else if err2 := json.Unmarshal(raw, &seqs); err2 == nil {
		nested = true
	} else {
		return nil, false, fmt.Errorf("%s: want a JSON list of token ids or a list of such lists: %w", path, err)
	}
	if len(seqs) == 0 {
		return nil, false, fmt.Errorf("%s: no sequences", path)
	}
	for i, s := range seqs {
		if len(s) == 0 {
			return nil, false, fmt.Errorf("%s: sequence %d is empty", path, i)
		}
	}
	return seqs, nested, nil
}
