package compare

import (
	"fmt"
	"io"
	"math"
	"strings"

	"forge/internal/table"
	"forge/internal/units"
)

// column is one column of the comparison table.
type column struct {
	head    string
	numeric bool // right-aligned in Markdown
	cell    func(*Run) string
}

// none marks a value the report does not carry.
const none = "–"

// columns returns the columns of g's table: the run, its size (bytes, bpw)
// and positions, the KL summary, top-1 agreement and perplexities, and the
// ablation's parts and layers when any run of g has them.
func (g *Group) columns() []column {
	cols := []column{
		{"run", false, func(r *Run) string { return r.Name }},
		{"size", true, func(r *Run) string { return formatBytes(r.Bytes) }},
		{"bpw", true, func(r *Run) string { return formatPositive(r.BPW, "%.3f") }},
		{"positions", true, func(r *Run) string { return fmt.Sprint(r.NPositions) }},
		{"mean KL", true, func(r *Run) string { return formatKL(r.MeanKL) }},
		{"median KL", true, func(r *Run) string { return formatKL(r.MedianKL) }},
		{"p99 KL", true, func(r *Run) string { return formatKL(r.P99KL) }},
		{"top-1 %", true, func(r *Run) string { return fmt.Sprintf("%.2f", 100*r.Top1) }},
		{"ppl", true, func(r *Run) string { return formatPositive(r.PPL, "%.4f") }},
		{"ref ppl", true, func(r *Run) string { return formatPositive(r.RefPPL, "%.4f") }},
	}
	var parts, layers bool
	for _, r := range g.Runs {
		parts = parts || r.Parts != ""
		layers = layers || r.Layers != ""
	}
	if parts {
		cols = append(cols, column{"parts", false, func(r *Run) string { return orNone(r.Parts) }})
	}
	if layers {
		cols = append(cols, column{"layers", false, func(r *Run) string { return orNone(r.Layers) }})
	}
	return cols
}

// formatKL formats a KL value in nats with four decimals, or in
// scientific notation below 1e-3 where decimals would hide it.
func formatKL(x float64) string {
	if x != 0 && math.Abs(x) < 1e-3 {
		return fmt.Sprintf("%.2e", x)
	}
	return fmt.Sprintf("%.4f", x)
}

// formatBytes writes n as the eval report does (units.BytesPrecise:
// binary units), "–" for 0 (not reported).
func formatBytes(n int64) string {
	if n <= 0 {
		return none
	}
	return units.BytesPrecise(n)
}

// formatPositive formats x with format, or "–" when x is 0 (not reported).
func formatPositive(x float64, format string) string {
	if x == 0 {
		return none
	}
	return fmt.Sprintf(format, x)
}

// orNone returns s, or "–" when s is empty.
func orNone(s string) string {
	if s == "" {
		return none
	}
	return s
}

// table is a group's runs as a table: one row per run, one column per
// statistic, numbers right-aligned.
func (g *Group) table() *table.Table {
	cols := g.columns()
	t := &table.Table{}
	for j, col := range cols {
		t.Header = append(t.Header, col.head)
		if col.numeric {
			t.AlignRight(j)
		}
	}
	for _, r := range g.Runs {
		row := make([]any, len(cols))
		for j, col := range cols {
			row[j] = col.cell(r)
		}
		t.Row(row...)
	}
	return t
}

// WriteTable writes the comparison as terminal tables, one per definition
// group, preceded by the warnings: numbers right-aligned, KL in nats,
// sizes in binary units, "–" for a value a report does not carry.
func (c *Set) WriteTable(w io.Writer) error {
	ew := &errWriter{w: w}
	for _, msg := range c.Warnings {
		fmt.Fprintf(ew, "warning: %s\n", msg)
	}
	for i := range c.Groups {
		g := &c.Groups[i]
		if i > 0 || len(c.Warnings) > 0 {
			fmt.Fprintln(ew)
		}
		fmt.Fprintf(ew, "definition: %s\n", g.Definition)
		if traces := g.traces(); len(traces) == 1 {
			fmt.Fprintf(ew, "trace: %s\n", traces[0])
		}
		if err := g.table().Write(ew); err != nil {
			return err
		}
	}
	return ew.err
}

// WriteMarkdown writes the comparison as Markdown: the warnings as a
// quote, then one table per definition group under a heading naming the
// definition (and the trace when the group's runs share one).
func (c *Set) WriteMarkdown(w io.Writer) error {
	ew := &errWriter{w: w}
	fmt.Fprintf(ew, "# Evaluation comparison\n\n")
	for _, msg := range c.Warnings {
		fmt.Fprintf(ew, "> **Warning:** %s\n>\n", mdEscape(msg))
	}
	if len(c.Warnings) > 0 {
		fmt.Fprintln(ew)
	}
	for i := range c.Groups {
		g := &c.Groups[i]
		fmt.Fprintf(ew, "## Definition: %s\n\n", mdEscape(g.Definition))
		if traces := g.traces(); len(traces) == 1 {
			fmt.Fprintf(ew, "Trace: `%s`\n\n", strings.ReplaceAll(traces[0], "`", "'"))
		}
		if err := g.table().WriteMarkdown(ew); err != nil {
			return err
		}
		fmt.Fprintln(ew)
	}
	fmt.Fprintf(ew, "KL in nats; top-1 = positions whose argmax agrees with the reference.\n")
	return ew.err
}

// mdEscape escapes the characters that would break a Markdown table cell.
func mdEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, "|", `\|`, "\n", " ", "*", `\*`, "_", `\_`).Replace(s)
}

// errWriter keeps the first write error so a run of Fprintf calls can be
// checked once.
type errWriter struct {
	w   io.Writer
	err error
}

// Write implements io.Writer; after a failure it writes nothing.
func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}
