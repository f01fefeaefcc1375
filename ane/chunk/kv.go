package chunk

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"forge/model"
)

// PrefillRows is the row count of the reference's prefill entries
// (p64_<N>k). A context entry of ctx tokens holds kv_len = ctx −
// PrefillRows KV rows, so that a 64-row prefill block still fits
// (docs/reference-pipeline.md §5.4, §8: 65536 → 65472).
const PrefillRows = 64

// MaxContext is the largest context entry ParseContexts accepts (the
// longest sequence a model.Config may declare).
const MaxContext = model.MaxContext

// ErrOptions is wrapped by every error about plan options or a context
// list (errors.Is(err, chunk.ErrOptions)).
var ErrOptions = errors.New("invalid ANE plan options")

// KVLen is the KV rows a context entry of ctx tokens holds: ctx − PrefillRows.
func KVLen(ctx int) int { return ctx - PrefillRows }

// KVBytesPerTokenFP16 is the KV cache of one attention layer per position
// with K and V in fp16: 2·Hkv·D·2 bytes (docs/reference-pipeline.md §8,
// format fp16).
func KVBytesPerTokenFP16(c *model.Config) int64 {
	return 2 * int64(c.KVHeads) * int64(c.HeadDim) * 2
}

// KVBytesPerTokenInt8V is the KV cache of one attention layer per position
// in the reference's v8 format: K fp16 (Hkv·D·2), V int8 (Hkv·D) and one
// fp16 scale per token per KV head (2·Hkv) (docs/reference-pipeline.md §8:
// 64 → 48.125 KiB per position on the 27B's 16 attention layers).
func KVBytesPerTokenInt8V(c *model.Config) int64 {
	hd := int64(c.KVHeads) * int64(c.HeadDim)
	return 2*hd + hd + 2*int64(c.KVHeads)
}

// StateBytes is the fp16 state of one DeltaNet layer in one buffer set of
// the reference's lazy-commit graph with P = t pending rows
// (docs/reference-pipeline.md §5.2): the recurrent state Hv·dk·dv, the
// conv history (t+K−1)·conv_dim (the K−1 = 3 stored rows and the t new
// ones) and the pending rows Hv·(3t+1)·dv, each 2 bytes. The reference
// holds two sets (ping-pong, §8): a step reads one and writes the other.
func StateBytes(c *model.Config, t int) int64 {
	rec := int64(c.ValueHeads) * int64(c.KeyDim) * int64(c.ValueDim)
	conv := int64(t+c.ConvKernel-1) * int64(c.ConvDim())
	pend := int64(c.ValueHeads) * int64(3*t+1) * int64(c.ValueDim)
	return 2 * (rec + conv + pend)
}

// ParseContexts parses a list of context entries such as "8k,16k,32k":
// comma-separated sizes in tokens, each a plain number or a number of
// thousands with the suffix k or K (k = 1024 tokens). Every entry must
// leave KV rows after the prefill block (more than PrefillRows tokens) and
// be at most MaxContext; entries are returned in ascending order, and a
// repeated one is an error.
func ParseContexts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		n, err := parseContext(f)
		if err != nil {
			return nil, fmt.Errorf("%w: context %q: %w", ErrOptions, f, err)
		}
		if slices.Contains(out, n) {
			return nil, fmt.Errorf("%w: context %q is given twice", ErrOptions, f)
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return out, nil
}

func parseContext(f string) (int, error) {
	num, mult := f, 1
	if strings.HasSuffix(strings.ToLower(f), "k") {
		num, mult = f[:len(f)-1], 1024
	}
	if num == "" || strings.Trim(num, "0123456789") != "" || len(num) > 9 {
		return 0, errors.New("not a number of tokens (want e.g. 8k, 16K or 8192)")
	}
	n, _ := strconv.Atoi(num)
	return n * mult, checkContext(n * mult)
}

// checkContext refuses a context entry without KV rows or above MaxContext.
func checkContext(n int) error {
	switch {
	case n <= PrefillRows:
		return fmt.Errorf("%d tokens leave no KV rows after the %d-row prefill block (want more than %d)", n, PrefillRows, PrefillRows)
	case n > MaxContext:
		return fmt.Errorf("%d tokens is more than %d", n, MaxContext)
	}
	return nil
}

// FormatContext writes a context size as the reference names its entries:
// "8K" for a multiple of 1024, else the plain number.
func FormatContext(n int) string {
	if n > 0 && n%1024 == 0 {
		return strconv.Itoa(n/1024) + "K"
	}
	return strconv.Itoa(n)
}
