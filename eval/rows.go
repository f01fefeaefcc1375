package eval

import (
	"encoding/json"
	"fmt"
)

// RowSource is a run of consecutive trace rows taken from one data file:
// a trace's rows are its sources' rows, source after source, in the order
// of the data recipe (corpus.Recipe).
type RowSource struct {
	Path string `json:"path"` // the file as the recipe names it
	Rows int    `json:"rows"` // rows taken from it
}

// RowPositions returns the scored positions of each row (its tokens − 1),
// in trace order.
func (t *Trace) RowPositions() []int {
	out := make([]int, len(t.lens))
	for r, T := range t.lens {
		out[r] = T - 1
	}
	return out
}

// Sources returns the trace's row sources from its data recipe
// (Meta.Data), or nil when the recipe names none or its sources' rows do
// not add up to the trace's rows.
func (t *Trace) Sources() []RowSource {
	var recipe struct {
		Sources []RowSource `json:"sources"`
	}
	if json.Unmarshal(t.Meta.Data, &recipe) != nil {
		return nil
	}
	if checkRowSources(recipe.Sources, len(t.lens)) != nil {
		return nil
	}
	return recipe.Sources
}

// checkRowSources checks that sources, each of at least one row and a
// non-empty path, hold rows rows in all.
func checkRowSources(sources []RowSource, rows int) error {
	if len(sources) == 0 {
		return fmt.Errorf("no sources")
	}
	n := 0
	for i, s := range sources {
		if s.Rows < 1 || s.Path == "" {
			return fmt.Errorf("source %d (%q) has %d rows", i, s.Path, s.Rows)
		}
		n += s.Rows
	}
	if n != rows {
		return fmt.Errorf("sources hold %d rows, not %d", n, rows)
	}
	return nil
}

// CheckRowLayout checks a report's row layout (Report.RowPositions and
// Report.Sources, as read back from its JSON): positions per row (each
// ≥ 1) adding up to n, the report's positions, and sources, when given,
// adding up to the rows. Reports without positions (older forge) pass;
// they have no layout.
func CheckRowLayout(positions []int, sources []RowSource, n int) error {
	if len(positions) == 0 {
		if len(sources) > 0 {
			return fmt.Errorf("sources without row_positions")
		}
		return nil
	}
	sum := 0
	for r, p := range positions {
		if p < 1 {
			return fmt.Errorf("row_positions[%d] = %d (want ≥ 1)", r, p)
		}
		sum += p
	}
	if sum != n {
		return fmt.Errorf("row_positions add up to %d, n_positions is %d", sum, n)
	}
	if len(sources) > 0 {
		if err := checkRowSources(sources, len(positions)); err != nil {
			return fmt.Errorf("sources: %v", err)
		}
	}
	return nil
}
