package forge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/debug"
	"strings"
	"sync"

	"forge/generate"
	"forge/model"
	"forge/source"
)

// ABConfig configures AB, the draft-against-plain harness of speculative
// decoding (the reference pipeline's §7.1).
type ABConfig struct {
	RunConfig              // model, prompt, sampling, KV, activations; Draft and DraftK name the drafter
	Seeds     []uint64     // one plain and one drafted run per seed
	TF        int          // tokens of the first plain reply scored teacher-forced (0: skip that part)
	Block     int          // rows per verify block in the teacher-forced part (0: 8)
	EndMarker string       // a text whose presence in a reply is recorded (e.g. "</html>"), or ""
	Progress  func(string) // a line per run, or nil
}

// ABRun is one reply of AB (`forge ab --json`: runs).
type ABRun struct {
	Mode       string  `json:"mode"` // plain or draft
	Seed       uint64  `json:"seed"`
	Tokens     int     `json:"tokens"`
	Finish     string  `json:"finish"`
	Loop       int     `json:"loop"`     // the loop guard's period, 0 if it did not fire
	Rep4       float64 `json:"rep4"`     // 1 − distinct/total 4-grams of the re-tokenized text
	TokS       float64 `json:"tok_s"`    // decode tokens per second
	TokCall    float64 `json:"tok_call"` // tokens per target call after prefill (plain: 1)
	AcceptRate float64 `json:"accept_rate,omitempty"`
	AcceptHist []int   `json:"accept_hist,omitempty"`
	ThinkDone  bool    `json:"think_done"`           // "</think>" is in the text
	EndMarker  *bool   `json:"end_marker,omitempty"` // ABConfig.EndMarker is in the text
	DraftFail  string  `json:"draft_failed,omitempty"`
	Build      string  `json:"build"`
	Model      string  `json:"model"`           // kind:fingerprint of the target
	Draft      string  `json:"draft,omitempty"` // kind:fingerprint of the drafter (draft runs)
	Text       string  `json:"text"`
}

// ABRow is the teacher-forced comparison at one row of a verify block
// (Row −1: every row pooled): over N positions, the mean KL(p_step ‖
// p_block) in nats and its standard error, the top-1 agreement, the mean
// entropies and the mean and standard error of H(block) − H(step).
type ABRow struct {
	Row    int     `json:"row"`
	N      int     `json:"n"`
	KL     float64 `json:"kl"`
	KLSE   float64 `json:"kl_se"`
	Top1   float64 `json:"top1"`
	HStep  float64 `json:"h_step"`
	HBlock float64 `json:"h_block"`
	DH     float64 `json:"dh"`
	DHSE   float64 `json:"dh_se"`
}

// ABReport is AB's result (`forge ab --json`).
type ABReport struct {
	Build    string      `json:"build"`
	Model    string      `json:"model"`
	Draft    string      `json:"draft"`
	Settings RunSettings `json:"settings"`
	Runs     []ABRun     `json:"runs"`
	// The teacher-forced part: the first plain reply's first TF tokens
	// scored by decode steps and by verify blocks of Block rows.
	TF    int     `json:"tf"`
	Block int     `json:"block"`
	Rows  []ABRow `json:"rows"`
	All   *ABRow  `json:"all,omitempty"`
}

// Build identifies the forge binary: its version, the commit when it was
// built from a repository with VCS stamping (with "+dirty" for
// uncommitted changes), and the SHA-256 of the executable itself (first
// 12 hex digits), which tells any two builds apart.
func Build() string {
	buildOnce.Do(func() { build = readBuild() })
	return build
}

var (
	buildOnce sync.Once
	build     string
)

func readBuild() string {
	b := "forge " + Version
	if exe, err := os.Executable(); err == nil {
		if f, err := os.Open(exe); err == nil {
			h := sha256.New()
			if _, err := io.Copy(h, f); err == nil {
				b += " exe:" + hex.EncodeToString(h.Sum(nil))[:12]
			}
			f.Close()
		}
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev != "" {
		b += " " + rev[:min(12, len(rev))]
		if dirty {
			b += "+dirty"
		}
	}
	return b
}

// AB runs, for each seed, a plain reply and a drafted one, each from a
// cold state with the same prompt and settings, and records them; then it
// scores the first plain reply teacher-forced, once by decode steps and
// once by verify blocks, and compares the two distributions row by row of
// the block. cfg.Draft must name the drafter.
func AB(ctx context.Context, cfg ABConfig) (*ABReport, error) {
	if cfg.Draft == "" {
		return nil, errors.New("ab: no drafter")
	}
	if len(cfg.Seeds) == 0 {
		return nil, errors.New("ab: no seeds")
	}
	if cfg.Block == 0 {
		cfg.Block = 8
	}
	if cfg.Block < 1 || cfg.Block > generate.MaxDraftK+1 {
		return nil, fmt.Errorf("ab: block of %d rows: want 1 to %d", cfg.Block, generate.MaxDraftK+1)
	}
	if cfg.TF < 0 {
		return nil, fmt.Errorf("ab: %d teacher-forced tokens", cfg.TF)
	}
	rt, err := OpenRuntime(cfg.Model, generate.Options{KV: cfg.KV, Act: cfg.Act})
	if err != nil {
		return nil, err
	}
	defer rt.Close()
	cfg.Act = rt.Model.ResolveAct(cfg.Act) // what the report's settings say
	if err := rt.AttachDraft(cfg.Draft, cfg.DraftK, cfg.DraftFixed); err != nil {
		return nil, err
	}
	kind, fp, err := source.Fingerprint(rt.src)
	if err != nil {
		return nil, err
	}
	ids, err := rt.Tokens(cfg.Prompt)
	if err != nil {
		return nil, err
	}
	d := rt.Draft
	rep := &ABReport{Build: Build(), Model: kind + ":" + fp, Draft: d.Kind + ":" + d.Fingerprint, Block: cfg.Block}
	for _, seed := range cfg.Seeds {
		for _, mode := range []string{"plain", "draft"} {
			o := generate.Options{KV: cfg.KV, Act: cfg.Act}
			if mode == "draft" {
				o.Draft, o.DraftK, o.DraftFixed = d.Model, d.K, cfg.DraftFixed
			}
			c := cfg.RunConfig
			c.Sample.Seed = seed
			e := generate.New(rt.Model, rt.Tok, o) // a cold state for every run
			res, err := e.Generate(ctx, generate.Request{Prompt: ids, Sample: c.Sample, MaxTokens: c.MaxTokens,
				Stop: c.Stop, ThinkBudget: c.ThinkBudget, LoopGuard: c.LoopGuard}, nil)
			if err != nil {
				return rep, err
			}
			r := abRecord(rt, res, mode, seed, cfg.EndMarker)
			r.Build, r.Model = rep.Build, rep.Model
			if mode == "draft" {
				r.Draft = rep.Draft
			}
			rep.Runs = append(rep.Runs, r)
			if cfg.Progress != nil {
				cfg.Progress(fmt.Sprintf("seed %d %s: %d tokens, %.1f tok/s, %s", seed, mode, r.Tokens, r.TokS, r.Finish))
			}
		}
	}
	if rep.Settings = settingsOf(cfg.RunConfig); cfg.TF > 0 {
		first := rep.Runs[0]
		toks := rt.Tok.Encode(first.Text) // re-encoded, as the reference scores it
		toks = toks[:min(len(toks), cfg.TF)]
		rep.TF = len(toks)
		if err := abForced(ctx, rt.Model, cfg, ids, toks, rep); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

func abRecord(rt *Runtime, res generate.Result, mode string, seed uint64, marker string) ABRun {
	mt := res.Metrics
	r := ABRun{Mode: mode, Seed: seed, Tokens: len(res.Tokens), Finish: string(res.Finish), Loop: mt.LoopPeriod,
		Rep4: rep4(rt.Tok.Encode(res.Text)), TokS: mt.DecodeTPS(), TokCall: 1, Text: res.Text,
		ThinkDone: strings.Contains(res.Text, "</think>")}
	if mt.TargetCalls > 0 {
		r.TokCall = mt.TokensPerCall()
	}
	if mode == "draft" {
		r.AcceptRate, r.AcceptHist, r.DraftFail = mt.AcceptRate(), mt.AcceptHist, mt.DraftFailed
	}
	if marker != "" {
		has := strings.Contains(res.Text, marker)
		r.EndMarker = &has
	}
	return r
}

// rep4 is 1 − distinct/total 4-grams of ids (0 for fewer than 4 ids).
func rep4(ids []int) float64 {
	if len(ids) < 4 {
		return 0
	}
	seen := map[[4]int]bool{}
	for i := 0; i+4 <= len(ids); i++ {
		seen[[4]int(ids[i:i+4])] = true
	}
	return 1 - float64(len(seen))/float64(len(ids)-3)
}

// abForced scores prompt+toks by decode steps and by verify blocks of
// cfg.Block rows (each committed whole) from the same prefill and fills
// rep's Rows and All.
func abForced(ctx context.Context, m *model.Model, cfg ABConfig, prompt, toks []int, rep *ABReport) error {
	steps, blocks := m.NewStateKV(cfg.KV), m.NewStateKV(cfg.KV)
	steps.SetAct(cfg.Act)
	blocks.SetAct(cfg.Act)
	for _, s := range []*model.State{steps, blocks} {
		if _, err := m.PrefillLast(ctx, s, prompt, 0); err != nil {
			return err
		}
	}
	V := m.Config().Vocab
	acc := make([]abAcc, cfg.Block+1) // per row, and pooled last
	ps, pb := make([]float64, V), make([]float64, V)
	for t0 := 0; t0 < len(toks); t0 += cfg.Block {
		if err := ctx.Err(); err != nil {
			return err
		}
		blk := toks[t0:min(t0+cfg.Block, len(toks))]
		lg, err := m.Verify(blocks, blk)
		if err != nil {
			return err
		}
		rows := append([]float32(nil), lg.Data[:len(blk)*V]...)
		blocks.Commit(len(blk))
		for r, tok := range blk {
			step := m.Forward(steps, []int{tok}).Row(0)
			kl, top, hs, hb := compareDist(ps, pb, step, rows[r*V:(r+1)*V])
			acc[r].add(kl, top, hs, hb)
			acc[cfg.Block].add(kl, top, hs, hb)
		}
	}
	for r := range cfg.Block {
		if acc[r].n > 0 {
			rep.Rows = append(rep.Rows, acc[r].row(r))
		}
	}
	all := acc[cfg.Block].row(-1)
	rep.All = &all
	return nil
}

// compareDist returns KL(p‖q) over the whole vocabulary in float64 with
// probabilities clipped at 1e-12 (the reference's), whether the argmaxes
// agree, and the two entropies; p and q are softmaxes of the logits a and
// b, written into ps and pb.
func compareDist(ps, pb []float64, a, b []float32) (kl float64, top bool, hp, hq float64) {
	softmax64(ps, a)
	softmax64(pb, b)
	ia, ib := 0, 0
	for i := range ps {
		p, q := max(ps[i], 1e-12), max(pb[i], 1e-12)
		kl += p * (math.Log(p) - math.Log(q))
		hp -= p * math.Log(p)
		hq -= q * math.Log(q)
		if a[i] > a[ia] {
			ia = i
		}
		if b[i] > b[ib] {
			ib = i
		}
	}
	return kl, ia == ib, hp, hq
}

func softmax64(dst []float64, x []float32) {
	mx := math.Inf(-1)
	for _, v := range x {
		mx = max(mx, float64(v))
	}
	sum := 0.0
	for i, v := range x {
		dst[i] = math.Exp(float64(v) - mx)
		sum += dst[i]
	}
	for i := range dst {
		dst[i] /= sum
	}
}

// abAcc accumulates one row's comparisons.
type abAcc struct {
	n                           int
	kl, kl2, top, hs, hb, d, d2 float64
}

func (a *abAcc) add(kl float64, top bool, hs, hb float64) {
	a.n++
	a.kl += kl
	a.kl2 += kl * kl
	if top {
		a.top++
	}
	a.hs += hs
	a.hb += hb
	a.d += hb - hs
	a.d2 += (hb - hs) * (hb - hs)
}

func (a *abAcc) row(r int) ABRow {
	n := float64(a.n)
	se := func(sum, sum2 float64) float64 {
		if a.n < 2 {
			return 0
		}
		m := sum / n
		return math.Sqrt(max(sum2/n-m*m, 0) * n / (n - 1) / n)
	}
	return ABRow{Row: r, N: a.n, KL: a.kl / n, KLSE: se(a.kl, a.kl2), Top1: a.top / n,
		HStep: a.hs / n, HBlock: a.hb / n, DH: a.d / n, DHSE: se(a.d, a.d2)}
}

// settingsOf is RunSettings of a run configuration.
func settingsOf(cfg RunConfig) RunSettings {
	s := cfg.Sample
	return RunSettings{Temperature: s.Temperature, TopK: s.TopK, TopP: s.TopP, MinP: s.MinP,
		Presence: s.Presence, DRY: s.DRY.Multiplier, DRYBase: s.DRY.Base, DRYAllowed: s.DRY.Allowed,
		Seed: s.Seed, MaxTokens: cfg.MaxTokens, Stop: cfg.Stop, Think: cfg.Prompt.Think, ThinkBudget: cfg.ThinkBudget,
		KV: cfg.KV.String(), Act: cfg.Act.String()}
}
