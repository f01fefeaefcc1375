package compare

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"forge/eval"
)

// ErrInput marks a report or KL file that a comparison cannot use:
// malformed JSON, a missing field, a bad NPY file or a length mismatch.
var ErrInput = errors.New("bad comparison input")

// required are the report fields a comparison cannot do without;
// the others (bytes, bpw, ref_ppl, p90_kl, p999_kl, max_kl, mean_delta_p,
// trace, model, parts, layers) are shown as "–" or left out when absent.
var required = []string{"definition", "n_positions", "mean_kl", "median_kl", "p99_kl", "top1", "ppl"}

// Run is one evaluation report (the JSON of forge eval --json)
// loaded for comparison, with its per-position KL when one was given.
type Run struct {
	Path string // the report JSON
	// Name labels the run in tables and legends: the report's file name
	// without ".json", prefixed with its directory's name when two reports
	// share a file name.
	Name string

	Definition string // the KL definition (docs/quantization.md §7); runs are compared only within one
	Trace      string // the reference trace the run was scored on
	Model      string // the candidate the report names
	Parts      string // ablation: the parts quantized (e.g. "mlp,gdn"), "" for a full run
	Layers     string // ablation: the layer band quantized (e.g. "24-31"), "" for all layers

	NPositions int     // scored positions
	MeanKL     float64 // nats
	MedianKL   float64
	P90KL      float64
	P99KL      float64
	P999KL     float64
	MaxKL      float64
	Top1       float64 // fraction of positions whose argmax agrees with the reference, in [0, 1]
	PPL        float64 // the candidate's perplexity on the trace
	RefPPL     float64 // the reference's perplexity on the trace (0: not reported)
	MeanDeltaP float64 // mean of p_candidate(token) − p_reference(token)
	Bytes      int64   // size of the candidate's quantized weights (0: not reported)
	BPW        float64 // bits per weight (0: not reported)
	BlocksBPW  float64 // bits per weight of the decoder layers' matrices alone (0: not reported)

	KLPath string    // the per-position KL .npy, "" when none was given
	KL     []float32 // [NPositions] per-position KL in nats; nil when KLPath is ""

	// RowPositions and Sources are the report's row layout (eval.Report);
	// nil in a report written before forge eval recorded them.
	RowPositions []int
	Sources      []eval.RowSource
}

// Ablation reports whether the run quantized only some parts or layers.
func (r *Run) Ablation() bool { return r.Parts != "" || r.Layers != "" }

// Group holds the runs that share one KL definition.
type Group struct {
	Definition string
	Runs       []*Run
}

// Set is a set of evaluation reports laid side by side.
//
// Results computed with different KL definitions are not compared
// (docs/quantization.md §7). Rather than refuse such a set, a Set splits
// it into groups, one per definition in order of first appearance: every
// table and plot covers one group, and Warnings says that the set was
// split. Runs of one group scored on different traces, or a KL array whose
// mean disagrees with its report's mean_kl, also give a warning.
type Set struct {
	Runs     []*Run // in the order given
	Groups   []Group
	Warnings []string
}

// Load reads the reports (forge eval --json files) and, when kl
// is not empty, one per-position KL file (forge eval --kl-out, a 1-D
// float32 NPY) per report in the same order; an empty entry of kl means
// that report has none. Every problem is an error naming the file.
func Load(reports, kl []string) (*Set, error) {
	if len(reports) == 0 {
		return nil, fmt.Errorf("compare: no reports given: %w", ErrInput)
	}
	if len(kl) != 0 && len(kl) != len(reports) {
		return nil, fmt.Errorf("compare: %d KL files for %d reports (give one per report, in the same order): %w",
			len(kl), len(reports), ErrInput)
	}
	c := &Set{}
	for i, path := range reports {
		r, err := readRun(path)
		if err != nil {
			return nil, err
		}
		if len(kl) != 0 && kl[i] != "" {
			if err := c.attachKL(r, kl[i]); err != nil {
				return nil, err
			}
		}
		c.Runs = append(c.Runs, r)
	}
	nameRuns(c.Runs)
	c.group()
	return c, nil
}

// reportJSON is the subset of a report that a comparison reads.
type reportJSON struct {
	NPositions int         `json:"n_positions"`
	MeanKL     float64     `json:"mean_kl"`
	MedianKL   float64     `json:"median_kl"`
	P90KL      float64     `json:"p90_kl"`
	P99KL      float64     `json:"p99_kl"`
	P999KL     float64     `json:"p999_kl"`
	MaxKL      float64     `json:"max_kl"`
	Top1       float64     `json:"top1"`
	PPL        float64     `json:"ppl"`
	RefPPL     float64     `json:"ref_ppl"`
	MeanDeltaP float64     `json:"mean_delta_p"`
	Bytes      int64       `json:"bytes"`
	BPW        float64     `json:"bpw"`
	BlocksBPW  float64     `json:"blocks_bpw"`
	Definition looseString `json:"definition"`
	Trace      looseString `json:"trace"`
	Model      looseString `json:"model"`
	Parts      looseString `json:"parts"`
	Layers     looseString `json:"layers"`

	RowPositions []int            `json:"row_positions"`
	Sources      []eval.RowSource `json:"sources"`
}

// looseString reads a JSON string as itself, an array of strings or
// numbers joined by commas ("mlp,gdn"), a number as its text, and any
// other value as its compact JSON, so a field written in another shape
// still labels and groups runs.
type looseString string

// UnmarshalJSON implements json.Unmarshaler.
func (s *looseString) UnmarshalJSON(b []byte) error {
	var str string
	if err := json.Unmarshal(b, &str); err == nil {
		*s = looseString(str)
		return nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(b, &list); err == nil {
		parts := make([]string, len(list))
		for i, item := range list {
			var p looseString
			if err := p.UnmarshalJSON(item); err != nil {
				return err
			}
			parts[i] = string(p)
		}
		*s = looseString(strings.Join(parts, ","))
		return nil
	}
	if string(bytes.TrimSpace(b)) == "null" {
		*s = ""
		return nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return err
	}
	*s = looseString(buf.String())
	return nil
}

// readRun reads and checks one report JSON.
func readRun(path string) (*Run, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("compare: report %s: %w", path, err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return nil, fmt.Errorf("compare: report %s: not a JSON object: %v: %w", path, err, ErrInput)
	}
	var missing []string
	for _, k := range required {
		if v, ok := fields[k]; !ok || string(bytes.TrimSpace(v)) == "null" {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("compare: report %s: missing field(s) %s (is it a JSON report of forge eval?): %w",
			path, strings.Join(missing, ", "), ErrInput)
	}
	var j reportJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, fmt.Errorf("compare: report %s: %v: %w", path, err, ErrInput)
	}
	r := &Run{
		Path: path, Definition: string(j.Definition), Trace: string(j.Trace), Model: string(j.Model),
		Parts: string(j.Parts), Layers: string(j.Layers),
		NPositions: j.NPositions, MeanKL: j.MeanKL, MedianKL: j.MedianKL, P90KL: j.P90KL, P99KL: j.P99KL,
		P999KL: j.P999KL, MaxKL: j.MaxKL, Top1: j.Top1, PPL: j.PPL, RefPPL: j.RefPPL,
		MeanDeltaP: j.MeanDeltaP, Bytes: j.Bytes, BPW: j.BPW, BlocksBPW: j.BlocksBPW, RowPositions: j.RowPositions, Sources: j.Sources,
	}
	if err := r.check(); err != nil {
		return nil, fmt.Errorf("compare: report %s: %v: %w", path, err, ErrInput)
	}
	return r, nil
}

// check refuses values no evaluation produces.
func (r *Run) check() error {
	switch {
	case r.Definition == "":
		return errors.New("empty definition")
	case r.NPositions <= 0:
		return fmt.Errorf("n_positions %d (want > 0)", r.NPositions)
	case r.Top1 < 0 || r.Top1 > 1:
		return fmt.Errorf("top1 %g is not a fraction in [0, 1]", r.Top1)
	case r.PPL < 0 || r.RefPPL < 0:
		return fmt.Errorf("negative perplexity (ppl %g, ref_ppl %g)", r.PPL, r.RefPPL)
	case r.Bytes < 0 || r.BPW < 0 || r.BlocksBPW < 0:
		return fmt.Errorf("negative size (bytes %d, bpw %g, blocks bpw %g)", r.Bytes, r.BPW, r.BlocksBPW)
	}
	return eval.CheckRowLayout(r.RowPositions, r.Sources, r.NPositions)
}

// attachKL reads r's per-position KL from path and checks that it matches
// the report: the same number of positions (an error) and, up to float32
// rounding, the same mean (a warning: the files may be in the wrong order).
func (c *Set) attachKL(r *Run, path string) error {
	kl, err := ReadKL(path)
	if err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	if len(kl) != r.NPositions {
		return fmt.Errorf("compare: KL file %s has %d positions but report %s has n_positions %d (files in the wrong order?): %w",
			path, len(kl), r.Path, r.NPositions, ErrInput)
	}
	var sum float64
	for _, v := range kl {
		sum += float64(v)
	}
	mean := sum / float64(len(kl))
	// float32 storage and summation order move the mean by far less than
	// 1e-4 relative; anything larger means a different run.
	if math.Abs(mean-r.MeanKL) > 1e-4*math.Max(math.Abs(r.MeanKL), 1e-3) {
		c.Warnings = append(c.Warnings, fmt.Sprintf("KL file %s has mean %.6g but report %s has mean_kl %.6g (files in the wrong order?)",
			path, mean, r.Path, r.MeanKL))
	}
	r.KLPath, r.KL = path, kl
	return nil
}

// nameRuns names each run after its report file, adding the directory's
// name where file names repeat and a counter where even that repeats.
func nameRuns(runs []*Run) {
	count := map[string]int{}
	for _, r := range runs {
		r.Name = strings.TrimSuffix(filepath.Base(r.Path), filepath.Ext(r.Path))
		count[r.Name]++
	}
	seen := map[string]int{}
	for _, r := range runs {
		if count[r.Name] > 1 {
			r.Name = filepath.Base(filepath.Dir(r.Path)) + "/" + r.Name
		}
		seen[r.Name]++
		if seen[r.Name] > 1 {
			r.Name = fmt.Sprintf("%s (%d)", r.Name, seen[r.Name])
		}
	}
}

// group splits the runs by definition and records the warnings.
func (c *Set) group() {
	index := map[string]int{}
	for _, r := range c.Runs {
		i, ok := index[r.Definition]
		if !ok {
			i = len(c.Groups)
			index[r.Definition] = i
			c.Groups = append(c.Groups, Group{Definition: r.Definition})
		}
		c.Groups[i].Runs = append(c.Groups[i].Runs, r)
	}
	if len(c.Groups) > 1 {
		c.Warnings = append(c.Warnings, fmt.Sprintf(
			"the reports use %d different KL definitions; results with different definitions are not compared, so each is shown on its own",
			len(c.Groups)))
	}
	for _, g := range c.Groups {
		if traces := g.traces(); len(traces) > 1 {
			c.Warnings = append(c.Warnings, fmt.Sprintf("definition %q: runs were scored on %d different traces (%s); their numbers are not strictly comparable",
				g.Definition, len(traces), strings.Join(traces, ", ")))
		}
	}
}

// traces lists the distinct non-empty traces of g's runs in order.
func (g *Group) traces() []string {
	var out []string
	for _, r := range g.Runs {
		if r.Trace != "" && !slices.Contains(out, r.Trace) {
			out = append(out, r.Trace)
		}
	}
	return out
}
