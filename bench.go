package forge

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"time"

	"forge/internal/membw"
	"forge/model"
	"forge/source"
)

// Bench defaults: llama-bench's pp512 and tg128, three repetitions.
const (
	BenchDefaultPrompt = 512
	BenchDefaultGen    = 128
	BenchDefaultRepeat = 3
)

// BenchConfig configures Bench. Zero values are the defaults.
type BenchConfig struct {
	Model        string    // checkpoint or bundle directory
	PromptTokens int       // prefill test length (0: BenchDefaultPrompt)
	Gen          int       // decode test length (0: BenchDefaultGen)
	Repeat       int       // timed repetitions of each test after one warm-up (0: BenchDefaultRepeat)
	KV           model.KV  // the KV cache format
	Act          model.Act // the activation precision (model.ActInt8: decode in int8)
	// Progress, if set, is called after each run with runs done and total.
	Progress func(done, total int64)
}

// BenchReport is what `forge bench` prints: llama-bench's columns plus the
// share of this machine's read bandwidth that decode reaches.
type BenchReport struct {
	Model        string    `json:"model"`
	Format       string    `json:"format"`
	Bytes        int64     `json:"size_bytes"`   // every stored weight
	Params       int64     `json:"params"`       // parameters of the model
	BPW          float64   `json:"bpw"`          // 8·Bytes / Params
	WeightBytes  int64     `json:"weight_bytes"` // bytes one decode step reads
	PromptTokens int       `json:"prompt_tokens"`
	Gen          int       `json:"gen_tokens"`
	Repeat       int       `json:"repeat"`
	KV           string    `json:"kv"`
	Act          string    `json:"act"`
	PrefillTPS   float64   `json:"prefill_tps"` // mean over repetitions
	PrefillSD    float64   `json:"prefill_tps_sd"`
	DecodeTPS    float64   `json:"decode_tps"`
	DecodeSD     float64   `json:"decode_tps_sd"`
	Prefill      []float64 `json:"prefill_runs_tps"`
	Decode       []float64 `json:"decode_runs_tps"`
	// BandwidthGBs is decode's weight traffic, WeightBytes · DecodeTPS, in
	// GB/s. Each repetition's decode runs in chunks of BenchChunk tokens
	// with one pass of a read-bandwidth measurement (internal/membw, both
	// cores, BenchReadBytes) before the first chunk and after each one, so
	// that decode is judged against what the memory gave at the same
	// moments on a host whose bandwidth moves from second to second
	// (BENCHMARKS.md saw 25–73 GB/s within one run): a repetition's
	// bandwidth is the mean of the passes on either side of each chunk,
	// weighted by the chunk's time (Read holds one per repetition,
	// ReadGBs their mean); BandwidthPct is the mean (BandwidthPctSD the
	// sample standard deviation) over repetitions of 100 · WeightBytes ·
	// decode tokens/s ÷ that bandwidth. ReadBestGBs is the fastest single
	// pass of the run and BandwidthPctBest decode's traffic as a share of
	// it, the stricter yardstick (STREAM reports the best pass).
	BandwidthGBs     float64   `json:"bandwidth_gbs"`
	BandwidthPct     float64   `json:"bandwidth_pct"`
	BandwidthPctSD   float64   `json:"bandwidth_pct_sd"`
	BandwidthPctBest float64   `json:"bandwidth_pct_best"`
	ReadGBs          float64   `json:"read_gbs"`
	ReadBestGBs      float64   `json:"read_best_gbs"`
	Read             []float64 `json:"read_runs_gbs"`
	Warnings         []string  `json:"warnings,omitempty"` // Runtime.Warnings of the model
}

// The read-bandwidth measurement beside decode: one pass over 512 MiB
// (16× the 32 MiB last-level caches of the hosts measured in
// BENCHMARKS.md, ~10 ms) before and after every BenchChunk decode steps.
const (
	BenchReadBytes = 512 << 20
	BenchChunk     = 16
	// benchSettle is the pause before each pass, longer than the 0.5 ms
	// the worker pool's idle goroutines poll before they block (tensor's
	// spinFor), so that the pass has both cores to itself.
	benchSettle = 2 * time.Millisecond
)

// Bench measures prefill (PromptTokens tokens from an empty state, head on
// the last row, as generation runs it) and decode (Gen single-token steps
// from an empty state, the tokens fixed, no sampling) after one warm-up of
// each, Repeat times, and the machine's read bandwidth between decode's
// chunks of BenchChunk steps.
func Bench(ctx context.Context, cfg BenchConfig) (*BenchReport, error) {
	if cfg.PromptTokens == 0 {
		cfg.PromptTokens = BenchDefaultPrompt
	}
	if cfg.Gen == 0 {
		cfg.Gen = BenchDefaultGen
	}
	if cfg.Repeat == 0 {
		cfg.Repeat = BenchDefaultRepeat
	}
	if cfg.PromptTokens < 1 || cfg.Gen < 1 || cfg.Repeat < 1 {
		return nil, fmt.Errorf("bench: prompt %d, gen %d, repeat %d: each must be positive", cfg.PromptTokens, cfg.Gen, cfg.Repeat)
	}
	in, err := Inspect(cfg.Model)
	if err != nil {
		return nil, err
	}
	m, src, err := source.Load(cfg.Model) // no tokenizer needed: the tests feed fixed ids
	if err != nil {
		return nil, err
	}
	defer src.Close()
	if c := m.Config().MaxContext; c > 0 && max(cfg.PromptTokens, cfg.Gen) > c {
		return nil, fmt.Errorf("bench: %d tokens do not fit the context of %d", max(cfg.PromptTokens, cfg.Gen), c)
	}
	rep := &BenchReport{Model: filepath.Base(filepath.Clean(cfg.Model)), Format: in.Format, Bytes: in.Bytes, Params: in.Params,
		WeightBytes: m.WeightBytes(), PromptTokens: cfg.PromptTokens, Gen: cfg.Gen, Repeat: cfg.Repeat, KV: cfg.KV.String(), Act: m.ResolveAct(cfg.Act).String()}
	if rep.Format == "" {
		rep.Format = strings.ToLower(strings.Join(in.DTypes, "+")) // a checkpoint: its dtypes
	}
	rep.BPW = 8 * float64(rep.Bytes) / float64(max(rep.Params, 1))
	rep.Warnings = layoutWarnings(cfg.Model, src)
	toks := make([]int, max(cfg.PromptTokens, cfg.Gen))
	for i := range toks {
		toks[i] = (i*7919 + 13) % m.Config().Vocab
	}
	total, done := int64(2*(cfg.Repeat+1)), int64(0)
	s := m.NewStateKV(cfg.KV)
	s.SetAct(cfg.Act)
	s.Reserve(max(cfg.PromptTokens, cfg.Gen))
	bw := membw.NewBuffer(BenchReadBytes)
	membw.ReadPass(bw, 0) // warm-up: page tables, goroutine start
	var pct []float64
	for r := 0; r <= cfg.Repeat; r++ {
		s.Reset()
		t0 := time.Now()
		if _, err := m.PrefillLast(ctx, s, toks[:cfg.PromptTokens], 0); err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		if r > 0 {
			rep.Prefill = append(rep.Prefill, float64(cfg.PromptTokens)/time.Since(t0).Seconds())
		}
		s.Reset()
		tps, read, best, err := benchDecode(ctx, m, s, toks[:cfg.Gen], bw)
		if err != nil {
			return nil, err
		}
		if r > 0 {
			rep.Decode = append(rep.Decode, tps)
			rep.Read = append(rep.Read, read)
			rep.ReadBestGBs = max(rep.ReadBestGBs, best)
			pct = append(pct, 100*float64(rep.WeightBytes)*tps/1e9/read)
		}
		if done += 2; cfg.Progress != nil {
			cfg.Progress(done, total)
		}
	}
	rep.PrefillTPS, rep.PrefillSD = meanSD(rep.Prefill)
	rep.DecodeTPS, rep.DecodeSD = meanSD(rep.Decode)
	rep.ReadGBs, _ = meanSD(rep.Read)
	rep.BandwidthGBs = float64(rep.WeightBytes) * rep.DecodeTPS / 1e9
	rep.BandwidthPct, rep.BandwidthPctSD = meanSD(pct)
	rep.BandwidthPctBest = 100 * rep.BandwidthGBs / rep.ReadBestGBs
	return rep, nil
}

// benchDecode runs one decode step for each of toks on s, in chunks of
// BenchChunk with a pass over bw before the first chunk and after each,
// and returns decode tokens/s (the chunks' time only), the read
// bandwidth beside it (the mean of the passes on either side of each
// chunk, weighted by the chunk's time) and the fastest pass, in GB/s.
func benchDecode(ctx context.Context, m *model.Model, s *model.State, toks []int, bw []uint64) (tps, read, best float64, err error) {
	gbs := func() float64 {
		time.Sleep(benchSettle)
		g := float64(len(bw)*8) / membw.ReadPass(bw, 0).Seconds() / 1e9
		best = max(best, g)
		return g
	}
	var busy time.Duration
	var weighted float64 // Σ chunk seconds · GB/s beside it
	before := gbs()
	for lo := 0; lo < len(toks); lo += BenchChunk {
		if err := ctx.Err(); err != nil {
			return 0, 0, 0, err
		}
		t0 := time.Now()
		for i := lo; i < min(lo+BenchChunk, len(toks)); i++ {
			m.Forward(s, toks[i:i+1])
		}
		d := time.Since(t0)
		after := gbs()
		busy += d
		weighted += d.Seconds() * (before + after) / 2
		before = after
	}
	return float64(len(toks)) / busy.Seconds(), weighted / busy.Seconds(), best, nil
}

// meanSD returns the mean and the sample standard deviation (0 for one value).
func meanSD(xs []float64) (mean, sd float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if len(xs) < 2 {
		return mean, 0
	}
	for _, x := range xs {
		sd += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(sd / float64(len(xs)-1))
}
