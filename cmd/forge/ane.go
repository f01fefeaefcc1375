package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"forge"
	"forge/ane/chunk"
	"forge/internal/table"
	"forge/internal/units"
)

// ANEGroup is `forge ane …`: the Apple Neural Engine side.
type ANEGroup struct {
	Plan ANEPlanCmd `cmd:"" help:"Chunk plan and cost model: chunks of layers, where each matrix runs (with reasons), weight, state and KV bytes per chunk and context entry, projected ms per step."`
}

// ANEPlanCmd is `forge ane plan`. Optional flags left out take the
// library's defaults (chunk.Options); given ones must be valid.
type ANEPlanCmd struct {
	Model          string   `required:"" type:"existingdir" help:"Bundle or checkpoint directory."`
	LayersPerChunk *int     `name:"layers-per-chunk" placeholder:"N" help:"Decoder layers per chunk (default 4, the reference's)."`
	T              *int     `name:"T" placeholder:"ROWS" help:"Rows per verify/decode step, 1 to 64 (default 8, the reference's)."`
	Ctx            string   `placeholder:"LIST" help:"Context entries, comma-separated, k = 1024 tokens (default 8k,16k,32k)."`
	Bandwidth      *float64 `placeholder:"GB/S" help:"Bandwidth for weights and state in GB/s, instead of the calibrated one."`
	KVBandwidth    *float64 `name:"kv-bandwidth" placeholder:"GB/S" help:"Bandwidth for KV cache reads in GB/s, instead of the calibrated one."`
	JSON           string   `name:"json" placeholder:"FILE" help:"Also write the plan as JSON."`
	Overwrite      bool     `help:"Replace a JSON file that forge wrote earlier."`
}

func (c *ANEPlanCmd) Run() error {
	opt, err := c.options()
	if err != nil {
		return err
	}
	p, err := forge.ANEPlan(forge.ANEPlanConfig{Model: c.Model, JSON: c.JSON, Overwrite: c.Overwrite, Options: opt})
	if err != nil {
		return err
	}
	if err := writeANEPlan(os.Stdout, p); err != nil {
		return err
	}
	if c.JSON != "" {
		fmt.Printf("wrote %s\n", c.JSON)
	}
	return nil
}

// options maps the flags onto chunk.Options, refusing given values that
// are not positive (a left-out flag is the library's default).
func (c *ANEPlanCmd) options() (chunk.Options, error) {
	var o chunk.Options
	for _, f := range []struct {
		name string
		v    *int
		dst  *int
	}{{"--layers-per-chunk", c.LayersPerChunk, &o.LayersPerChunk}, {"--T", c.T, &o.T}} {
		if f.v != nil && *f.v < 1 {
			return o, fmt.Errorf("%s %d: want at least 1", f.name, *f.v)
		}
		if f.v != nil {
			*f.dst = *f.v
		}
	}
	for _, f := range []struct {
		name string
		v    *float64
		dst  *float64
	}{{"--bandwidth", c.Bandwidth, &o.Bandwidth.Weights}, {"--kv-bandwidth", c.KVBandwidth, &o.Bandwidth.KV}} {
		if f.v != nil && !(*f.v > 0 && *f.v < 1e6) {
			return o, fmt.Errorf("%s %v: want a positive number of GB/s", f.name, *f.v)
		}
		if f.v != nil {
			*f.dst = *f.v
		}
	}
	if c.Ctx != "" {
		ctxs, err := chunk.ParseContexts(c.Ctx)
		if err != nil {
			return o, fmt.Errorf("--ctx: %w", err)
		}
		o.Contexts = ctxs
	}
	return o, nil
}

// writeANEPlan prints the plan: summary, chunks, projected steps, context
// entries, placements, the calibration and the warnings.
func writeANEPlan(w io.Writer, p *chunk.Plan) error {
	tables := []*table.Table{aneSummary(p), aneChunks(p), aneSteps(p), aneEntries(p), anePlacements(p), aneCalibration(p)}
	titles := []string{"", "", fmt.Sprintf("per chunk and context entry: KV bytes and projected ms per T=%d step (KV fp16 / int8-V)", p.T),
		"whole model per context entry (projected times)", "placement (docs/quantization.md §1)",
		"calibration: the reference's measured T=8 verify times on the 27B beside this model's projection"}
	for i, t := range tables {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if titles[i] != "" {
			fmt.Fprintln(w, titles[i]+":")
		}
		if err := t.Write(w); err != nil {
			return err
		}
	}
	fmt.Fprintln(w, aneFit(p))
	fmt.Fprintln(w)
	for _, s := range p.Warnings {
		fmt.Fprintln(w, "warning:", s)
	}
	_, err := fmt.Fprintln(w, aneHeadline(p))
	return err
}

func aneSummary(p *chunk.Plan) *table.Table {
	t := &table.Table{}
	kind := p.Kind
	if kind == "checkpoint" {
		kind += ": every matrix is float and runs as fp16"
	}
	t.Row("model", fmt.Sprintf("%s (%s)", p.Model, kind))
	t.Row("layers", fmt.Sprintf("%d: %s (%d Gated DeltaNet, %d gated attention)", p.Layers, p.LayerKinds,
		strings.Count(p.LayerKinds, "L"), strings.Count(p.LayerKinds, "A")))
	t.Row("chunks", fmt.Sprintf("%d of ≤%d layers + the head chunk (final norm, lm_head); the embedding is looked up on the host (fp16 table, %s)",
		p.Totals.Chunks, p.LayersPerChunk, units.BytesPrecise(p.HostBytes)))
	var ctxs []string
	for _, n := range p.Contexts {
		ctxs = append(ctxs, fmt.Sprintf("%s (kv_len %d)", chunk.FormatContext(n), chunk.KVLen(n)))
	}
	t.Row("entries", fmt.Sprintf("T = %d rows per step; %s; kv_len = ctx − %d (the prefill block)", p.T, strings.Join(ctxs, ", "), p.PrefillRows))
	t.Row("KV formats", "fp16 (K and V fp16); int8-V (K fp16, V int8 + one fp16 scale per token per KV head)")
	t.Row("cost model", fmt.Sprintf("a projection: weights and state at %.1f GB/s, KV reads at %.1f GB/s (%s)",
		p.BandwidthGBs, p.KVBandwidthGBs, p.BandwidthSource))
	return t
}

func aneChunks(p *chunk.Plan) *table.Table {
	t := table.New("chunk", "layers", "kinds", "weights (ANE)", "CPU", "state (1 of 2 sets)", "KV/token fp16", "KV/token int8-V").AlignRight(3, 4, 5, 6, 7)
	for _, ch := range p.Chunks {
		t.Row(ch.Name, layerSpan(ch.Layers), ch.Kinds, units.BytesPrecise(ch.WeightBytes), units.BytesPrecise(ch.CPUBytes),
			units.BytesPrecise(ch.StateBytes), units.BytesPrecise(ch.KVBytesPerTokenFP16), units.BytesPrecise(ch.KVBytesPerTokenInt8V))
	}
	s := p.Totals
	t.Row("total", "", "", units.BytesPrecise(s.WeightBytes), units.BytesPrecise(s.CPUBytes), units.BytesPrecise(s.StateBytes),
		units.BytesPrecise(s.KVBytesPerTokenFP16), units.BytesPrecise(s.KVBytesPerTokenInt8V))
	return t
}

func aneSteps(p *chunk.Plan) *table.Table {
	head := []string{"chunk"}
	for _, n := range p.Contexts {
		head = append(head, "KV "+chunk.FormatContext(n), "ms "+chunk.FormatContext(n))
	}
	t := table.New(head...)
	for c := 1; c < len(head); c++ {
		t.AlignRight(c)
	}
	row := func(name string, es []chunk.Entry) {
		cells := []any{name}
		for _, e := range es {
			cells = append(cells, units.Bytes(e.KVBytesFP16)+" / "+units.Bytes(e.KVBytesInt8V),
				ms(e.MSPerStepFP16)+" / "+ms(e.MSPerStepInt8V))
		}
		t.Row(cells...)
	}
	for _, ch := range p.Chunks {
		row(ch.Name, ch.Entries)
	}
	row("total", p.Totals.Entries)
	return t
}

func aneEntries(p *chunk.Plan) *table.Table {
	t := table.New("entry", "kv_len", "KV fp16", "KV int8-V", "memory fp16", "memory int8-V", "ms/step fp16", "ms/step int8-V").AlignRight(1, 2, 3, 4, 5, 6, 7)
	for _, e := range p.Totals.Entries {
		t.Row(chunk.FormatContext(e.Ctx), e.KVLen, units.BytesPrecise(e.KVBytesFP16), units.BytesPrecise(e.KVBytesInt8V),
			units.BytesPrecise(e.MemoryBytesFP16), units.BytesPrecise(e.MemoryBytesInt8V),
			ms(e.MSPerStepFP16), ms(e.MSPerStepInt8V))
	}
	return t
}

func anePlacements(p *chunk.Plan) *table.Table {
	t := table.New("matrix", "layers", "count", "format", "bytes", "where").AlignRight(2, 4)
	for _, g := range p.Placement {
		f := g.Format
		if g.Rank > 0 {
			f += fmt.Sprintf(", rank %d", g.Rank)
		}
		t.Row(g.Role, layerList(g.Layers), g.Count, f, units.BytesPrecise(g.Bytes), g.Placement)
	}
	return t
}

func aneCalibration(p *chunk.Plan) *table.Table {
	t := table.New("entry", "kv_len", "measured ms", "projected ms", "use").AlignRight(1, 2, 3)
	for _, pt := range p.Calibration.Points {
		use := "check"
		if pt.Fitted {
			use = "fitted"
		}
		t.Row(chunk.FormatContext(pt.Ctx), pt.KVLen, fmt.Sprintf("%.1f", pt.MeasuredMS), fmt.Sprintf("%.1f", pt.ProjectedMS), use)
	}
	return t
}

// aneFit says what the calibration fitted, on what.
func aneFit(p *chunk.Plan) string {
	c := p.Calibration
	return fmt.Sprintf("fit: %.1f GB/s for weights and state, %.1f GB/s for KV reads; the 27B with the deployed mix holds %s of matrices on the ANE, KV %s",
		c.Bandwidth.Weights, c.Bandwidth.KV, units.BytesPrecise(c.MatrixBytes), c.KV)
}

// aneHeadline is the one-line answer: chunks, bytes, ms per step and per token.
func aneHeadline(p *chunk.Plan) string {
	first, last := p.Totals.Entries[0], p.Totals.Entries[len(p.Totals.Entries)-1]
	s := fmt.Sprintf("%d chunks + head, %s of weights on the ANE; projected %s ms per T=%d step at %s, %s ms at %s (int8-V KV)",
		p.Totals.Chunks, units.BytesPrecise(p.Totals.WeightBytes), ms(first.MSPerStepInt8V), p.T, chunk.FormatContext(first.Ctx),
		ms(last.MSPerStepInt8V), chunk.FormatContext(last.Ctx))
	if c := p.Calibration; p.T == c.T {
		s += fmt.Sprintf("; at %s ≈ %s ms of verify per token at the reference's measured %.2f tokens per step with its drafter (drafter time not included), %s ms without drafting",
			chunk.FormatContext(first.Ctx), ms(first.MSPerStepInt8V/c.TokensPerStep), c.TokensPerStep, ms(first.MSPerStepInt8V))
	}
	return s + "."
}

// ms writes a time in ms with at least three significant digits and one
// decimal: "131.5", "91.5", "0.0850".
func ms(v float64) string {
	d := 1
	if v > 0 {
		d = max(1, 2-int(math.Floor(math.Log10(v))))
	}
	return strconv.FormatFloat(v, 'f', d, 64)
}

// layerSpan writes [first, last] as "0–3" ("—" when empty).
func layerSpan(l []int) string {
	switch {
	case len(l) == 0:
		return "—"
	case l[0] == l[1]:
		return strconv.Itoa(l[0])
	}
	return fmt.Sprintf("%d–%d", l[0], l[1])
}

// layerList writes ascending layers compactly: "0–2, 4, 6–7" ("—" when empty).
func layerList(l []int) string {
	if len(l) == 0 {
		return "—"
	}
	var parts []string
	for i := 0; i < len(l); {
		j := i
		for j+1 < len(l) && l[j+1] == l[j]+1 {
			j++
		}
		parts = append(parts, layerSpan([]int{l[i], l[j]}))
		i = j + 1
	}
	return strings.Join(parts, ", ")
}
