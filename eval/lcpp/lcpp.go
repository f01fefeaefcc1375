package lcpp

import (
	"errors"
	"fmt"
	"math"

	"forge/eval"
)

// DefaultCtx is llama-perplexity's default window length (-c 512).
const DefaultCtx = 512

// logProbFloor: base log-probabilities at or below −16 nats are left out
// of the KL sum, and logits more than 16 below the maximum are all stored as
// code 0 (llama.cpp's log_softmax: min_logit = max(min_logit, max_logit − 16)).
const logProbFloor = 16

// Sentinel errors for errors.Is; every error also names the file or input.
var (
	// ErrShort: the text tokenizes to fewer than 2·n_ctx tokens, or
	// n_ctx leaves no scored position.
	ErrShort = errors.New("lcpp: too few tokens for llama.cpp KL windows")
	// ErrBase: a base file is not a complete, valid llama.cpp KL base
	// (wrong magic or metadata, inconsistent sizes, truncated).
	ErrBase = errors.New("lcpp: invalid llama.cpp KL base")
	// ErrMismatch: the base does not fit the candidate (vocabulary size,
	// window length, BOS rule).
	ErrMismatch = errors.New("lcpp: llama.cpp KL base does not match the candidate")
)

// Scored returns the scored positions of a window of nCtx tokens:
// positions first … nCtx−2, n of them, where first = nCtx/2 and
// n = nCtx − 1 − first. Position j's logits predict token j+1 of the window
// (255 positions per window at nCtx = 512).
func Scored(nCtx int) (first, n int) {
	first = nCtx / 2
	return first, nCtx - 1 - first
}

// Chunks returns n_chunk = ⌊nTokens / nCtx⌋, the number of windows of
// nCtx tokens a text of nTokens tokens is cut into. Like llama.cpp it needs at
// least 2·nCtx tokens, and nCtx must leave at least one scored position
// (nCtx ≥ 3); otherwise the error wraps ErrShort.
func Chunks(nTokens, nCtx int) (int, error) {
	if nCtx < 3 {
		return 0, fmt.Errorf("%w: a window of %d tokens has no scored position (need n_ctx ≥ 3)", ErrShort, nCtx)
	}
	if nTokens < 2*nCtx {
		return 0, fmt.Errorf("%w: the text tokenizes to only %d tokens; at least %d (2·n_ctx) are needed with a context of %d",
			ErrShort, nTokens, 2*nCtx, nCtx)
	}
	return nTokens / nCtx, nil
}

// Window copies window i, tokens[i·nCtx : (i+1)·nCtx], into dst (grown
// as needed) and returns it as the model evaluates it: when bos ≥ 0 the
// first token is replaced by bos (llama.cpp does this when the vocabulary
// adds a BOS token; the stored tokens, and the token each scored position
// predicts, are the original ones). Pass bos < 0 for no replacement.
func Window(dst, tokens []int, nCtx, i, bos int) []int {
	dst = append(dst[:0], tokens[i*nCtx:(i+1)*nCtx]...)
	if bos >= 0 {
		dst[0] = bos
	}
	return dst
}

// Compress stores the log-softmax of one row of logits z in 16 bits per
// entry, as llama.cpp's log_softmax(n_vocab, logits, log_prob, tok) does for
// --kl-divergence-base. With max and min the extremes of z and min raised to
// at least max − 16,
//
//	scale        = (max − min) / 65535
//	min_log_prob = min − max − log Σ_i exp(z_i − max)
//	dst[i]       = round((z_i − min) / scale)   (0 when z_i ≤ min, or when scale = 0)
//
// so that scale·dst[i] + min_log_prob (LogProb) is log p_i to within
// scale/2 for every z_i above min, and min_log_prob for the rest. The
// arithmetic follows llama.cpp's float32 steps (round half to even, as its
// nearest_int) so a base written here matches one written there.
// len(dst) must be len(z).
func Compress(dst []uint16, z []float32) (scale, minLogProb float32) {
	if len(dst) != len(z) {
		panic(fmt.Sprintf("lcpp.Compress: %d codes for %d logits", len(dst), len(z)))
	}
	maxZ, minZ := z[0], z[0]
	for _, v := range z[1:] {
		maxZ = max(maxZ, v)
		minZ = min(minZ, v)
	}
	minZ = max(minZ, maxZ-logProbFloor)
	var sum float64
	for _, v := range z {
		sum += math.Exp(float64(v - maxZ))
	}
	logSum := float32(math.Log(sum))
	minLogProb = float32(minZ-maxZ) - logSum
	scale = float32(maxZ-minZ) / 65535
	if scale == 0 {
		clear(dst)
		return scale, minLogProb
	}
	inv := 1 / scale
	for i, v := range z {
		if v <= minZ {
			dst[i] = 0
			continue
		}
		q := math.RoundToEven(float64(float32(inv * float32(v-minZ))))
		dst[i] = uint16(min(q, 65535))
	}
	return scale, minLogProb
}

// LogProb decodes one stored entry: the base log-probability
// scale·q + min_log_prob, in float32 as llama.cpp computes it.
func LogProb(scale, minLogProb float32, q uint16) float32 {
	return float32(scale*float32(q)) + minLogProb
}

// Position is one scored position: the candidate Q's logits against the
// base B's stored distribution, for the observed next token.
type Position struct {
	NLL     float64 // nll_Q = logsumexp(z) − z[tok] (eval.NLL)
	NLLBase float64 // nll_B = −log p_B[tok], from the decoded base
	KLD     float64 // Σ_{i: log p_B,i > −16} p_B,i (log p_B,i − log q_i); may be slightly negative
	DeltaP  float64 // Δp = exp(−nll_Q) − exp(−nll_B)
	SameTop bool    // argmax z = argmax log p_B, each the first index among ties
}

// Score scores one position as llama.cpp's log_softmax(n_vocab, logits,
// base_log_prob, tok, kld) does: z are the candidate's logits [vocab], codes
// with scale and minLogProb the base's stored row (Compress), tok the
// token that follows. Q's log-probabilities are z_i − logsumexp(z); the
// base's are LogProb of each code. The KL sum skips base entries with
// log p_B,i ≤ −16 (those are below the compression's floor), so it is not a
// true divergence and can come out slightly below zero.
func Score(z []float32, codes []uint16, scale, minLogProb float32, tok int) Position {
	if len(codes) != len(z) || tok < 0 || tok >= len(z) {
		panic(fmt.Sprintf("lcpp.Score: %d codes for %d logits, token %d", len(codes), len(z), tok))
	}
	imax := eval.Argmax(z)
	logZ := eval.LogSumExp(z)
	var p Position
	p.NLL = logZ - float64(z[tok])
	p.NLLBase = -float64(LogProb(scale, minLogProb, codes[tok]))
	imaxBase := 0
	var bestBase float32
	for i, q := range codes {
		lpB := LogProb(scale, minLogProb, q)
		if i == 0 || lpB > bestBase {
			bestBase, imaxBase = lpB, i
		}
		if lpB > -logProbFloor {
			lp := float64(lpB)
			p.KLD += math.Exp(lp) * (lp - (float64(z[i]) - logZ))
		}
	}
	p.SameTop = imax == imaxBase
	p.DeltaP = math.Exp(-p.NLL) - math.Exp(-p.NLLBase)
	return p
}
