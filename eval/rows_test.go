package eval_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"forge/eval"
)

// TestReportRowLayout: Score takes the rows' positions from the trace and
// their sources from its data recipe, and the report's JSON carries both
// (row_positions, sources) for forge eval compare; a recipe whose sources
// do not add up to the rows gives none.
func TestReportRowLayout(t *testing.T) {
	m := loadModel(t, tinyDir)
	rows := randomRows(m.Config().Vocab, 33, 20, 33)
	for _, c := range []struct {
		data string
		want []eval.RowSource
	}{
		{`{"sources":[{"path":"d/code.txt","kind":"text","rows":2},{"path":"d/chat.jsonl","rows":1}],"rows":3}`,
			[]eval.RowSource{{Path: "d/code.txt", Rows: 2}, {Path: "d/chat.jsonl", Rows: 1}}},
		{`{"sources":[{"path":"d/code.txt","rows":2}],"rows":2}`, nil},
		{`{"rows":3}`, nil},
	} {
		path := filepath.Join(t.TempDir(), "trace.safetensors")
		if _, err := eval.Record(context.Background(), path, m, rows, eval.Meta{Data: []byte(c.data)}, eval.RecordOptions{TopK: 4}); err != nil {
			t.Fatal(err)
		}
		rep := eval.Summarize(score(t, m, path))
		raw, err := json.Marshal(rep)
		if err != nil {
			t.Fatal(err)
		}
		var back struct {
			RowPositions []int            `json:"row_positions"`
			Sources      []eval.RowSource `json:"sources"`
		}
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(back.RowPositions, []int{32, 19, 32}) || !slices.Equal(back.Sources, c.want) {
			t.Errorf("recipe %s: row_positions %v, sources %v; want [32 19 32], %v", c.data, back.RowPositions, back.Sources, c.want)
		}
	}
	tr, err := eval.OpenTrace(v1Trace)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if s, p := tr.Sources(), tr.RowPositions(); !slices.Equal(s, []eval.RowSource{{Path: "data/code-heldout.txt", Rows: 2}}) || !slices.Equal(p, []int{63, 63}) {
		t.Errorf("v1 trace: sources %v, positions %v", s, p)
	}
}
