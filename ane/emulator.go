package ane

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"forge/model"
)

// Fix names one of the reference's fp16 workarounds (reference-pipeline
// §3.2, docs/ane.md §1.3).
type Fix string

const (
	// FixTanhSiLU computes SiLU as 0.5·x·(1 + tanh(x/2)) instead of the
	// native op, in the DeltaNet conv, its output gate and the MLP.
	FixTanhSiLU Fix = "tanh-silu"
	// FixStableSoftplus computes softplus as relu(x) + ln(1 + e^−|x|).
	FixStableSoftplus Fix = "stable-softplus"
	// FixGDNScale multiplies the DeltaNet q by 16 and v by 64 and the
	// gated-RMSNorm ε by (16·64)², which leaves the output unchanged in
	// real arithmetic and lifts q·S out of fp16's subnormals.
	FixGDNScale Fix = "gdn-scale"
	// FixMLPDownScale multiplies the MLP down-projection input by 64 and
	// divides its output — the variant the reference rejected because it
	// overflows; selectable to show it.
	FixMLPDownScale Fix = "mlp-down-scale"
)

// Fixes lists every Fix, and Recommended the set the reference builds
// with (its manifest: SILU=tanh, MLP_SILU=tanh, GDN_SQ=16, GDN_SV=64,
// MLP_DS=1).
var (
	Fixes       = []Fix{FixTanhSiLU, FixStableSoftplus, FixGDNScale, FixMLPDownScale}
	Recommended = []Fix{FixTanhSiLU, FixStableSoftplus, FixGDNScale}
)

// The reference's scalings (GDN_SQ, GDN_SV, and the rejected ×64 of the
// MLP down input).
const (
	gdnQueryScale = 16
	gdnValueScale = 64
	downScale     = 64
)

// ParseFixes reads a comma-separated list of fixes ("" or "none": none;
// "recommended": Recommended), in the order of Fixes whatever the order
// written (so that a set has one label).
func ParseFixes(s string) ([]Fix, error) {
	s = strings.TrimSpace(s)
	switch s {
	case "", "none":
		return nil, nil
	case "recommended":
		return slices.Clone(Recommended), nil
	}
	var out []Fix
	for _, w := range strings.Split(s, ",") {
		f := Fix(strings.TrimSpace(w))
		if !slices.Contains(Fixes, f) {
			return nil, fmt.Errorf("fix %q: want one of %s, none or recommended", w, joinFixes(Fixes))
		}
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	slices.SortFunc(out, func(a, b Fix) int { return slices.Index(Fixes, a) - slices.Index(Fixes, b) })
	return out, nil
}

// FixLabel names a set of fixes for reports ("none", or the names joined
// by "+").
func FixLabel(fs []Fix) string {
	if len(fs) == 0 {
		return "none"
	}
	return joinFixes(fs)
}

func joinFixes(fs []Fix) string {
	fs = slices.Clone(fs)
	slices.SortFunc(fs, func(a, b Fix) int { return slices.Index(Fixes, a) - slices.Index(Fixes, b) })
	s := make([]string, len(fs))
	for i, f := range fs {
		s[i] = string(f)
	}
	return strings.Join(s, "+")
}

// Options configure an Emulator; the zero value is the naive device graph
// (native SiLU, softplus as written, one attention block, no scaling).
type Options struct {
	Fixes []Fix
	// AttBlock splits attention's keys into blocks of this many, with one
	// global max and combined sums (0: one block).
	AttBlock int
}

func (o Options) has(f Fix) bool { return slices.Contains(o.Fixes, f) }

// Emulator is a model.Numerics for the Neural Engine's fp16: every tensor
// stored is rounded by Round, and counted per layer and Site (Stats). It
// is shared by the Linears of the model it was loaded with (Load) and the
// State that runs it; use one State at a time.
type Emulator struct {
	opt    Options
	layers int
	mu     sync.Mutex
	stats  [][model.NumSites]Stat // [layers+1]: the last slot is outside the layers
}

// NewEmulator returns an Emulator for a model of layers layers.
func NewEmulator(layers int, opt Options) *Emulator {
	return &Emulator{opt: opt, layers: layers, stats: make([][model.NumSites]Stat, layers+1)}
}

// Options returns the emulator's options.
func (e *Emulator) Options() Options { return e.opt }

// Store implements model.Numerics: x is rounded and counted.
func (e *Emulator) Store(site model.Site, li int, x []float32) {
	var st Stat
	roundInto(x, &st)
	e.count(site, li, st)
}

func (e *Emulator) count(site model.Site, li int, st Stat) {
	if li < 0 || li >= e.layers {
		li = e.layers
	}
	e.mu.Lock()
	e.stats[li][site].add(st)
	e.mu.Unlock()
}

// Silu implements model.Numerics: the native model or the tanh form.
func (e *Emulator) Silu(x []float32) {
	f := siluNative
	if e.opt.has(FixTanhSiLU) {
		f = siluTanh
	}
	for i, v := range x {
		x[i] = f(v)
	}
}

// Softplus implements model.Numerics.
func (e *Emulator) Softplus(x float32) float32 {
	if e.opt.has(FixStableSoftplus) {
		return softplusStable(x)
	}
	return softplusNaive(x)
}

// Scaling implements model.Numerics.
func (e *Emulator) Scaling() model.Scaling {
	var s model.Scaling
	if e.opt.has(FixGDNScale) {
		s.GDNQuery, s.GDNValue = gdnQueryScale, gdnValueScale
	}
	if e.opt.has(FixMLPDownScale) {
		s.DownInput = downScale
	}
	s.AttBlock = e.opt.AttBlock
	return s
}

// Stats returns the counts so far of layer li (−1: outside the layers:
// embedding rows, the final norm, the head) and site.
func (e *Emulator) Stats(li int, site model.Site) Stat {
	if li < 0 || li >= e.layers {
		li = e.layers
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.stats[li][site]
}

// Reset clears the counts.
func (e *Emulator) Reset() {
	e.mu.Lock()
	clear(e.stats)
	e.mu.Unlock()
}

// save returns a copy of the counts; restore puts such a copy back.
func (e *Emulator) save() [][model.NumSites]Stat {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.stats)
}

func (e *Emulator) restore(s [][model.NumSites]Stat) {
	e.mu.Lock()
	copy(e.stats, s)
	e.mu.Unlock()
}
