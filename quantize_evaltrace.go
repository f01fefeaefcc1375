package forge

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"forge/corpus"
	"forge/eval"
)

// ErrCalibOverlap marks calibration rows that overlap the rows of the
// trace the bundle is to be evaluated on (QuantizeConfig.EvalTrace).
var ErrCalibOverlap = errors.New("the calibration data overlaps the evaluation data")

// evalTraceCheck is what Quantize records of the evaluation trace it
// checked the calibration rows against.
type evalTraceCheck struct {
	Path            string `json:"path"`             // absolute
	Fingerprint     string `json:"fingerprint"`      // its reference's (source.Fingerprint)
	DataFingerprint string `json:"data_fingerprint"` // its rows' (corpus.Recipe.Fingerprint), if recorded
	Rows            int    `json:"rows"`
	Window          int    `json:"window"` // tokens per compared window (0: no calibration rows to compare)
}

// checkEvalTrace refuses calibration rows (set, nil when the run has no
// calibration) that share a window of corpus.OverlapWindow tokens — or of
// the shortest row's length, when a row of either side is shorter — with a
// row of the trace at path, outside text both sides repeat (corpus.Overlaps).
// The error names the first calibration row that does (its source file and
// its index among the rows taken from it), the trace row, the windows they
// share, and the totals; it wraps ErrCalibOverlap.
func checkEvalTrace(path string, set *corpus.Set) (*evalTraceCheck, error) {
	tr, err := eval.OpenTrace(path)
	if err != nil {
		return nil, fmt.Errorf("quantize: evaluation trace: %w", err)
	}
	defer tr.Close()
	abs, _ := filepath.Abs(path)
	info := &evalTraceCheck{Path: abs, Fingerprint: tr.Meta.Fingerprint, Rows: tr.Rows(), DataFingerprint: dataFingerprint(tr.Meta)}
	if set == nil {
		return info, nil
	}
	rows := make([][]int, tr.Rows())
	w := corpus.OverlapWindow
	for r := range rows {
		if rows[r], err = tr.Tokens(r); err != nil {
			return nil, fmt.Errorf("quantize: evaluation trace: %w", err)
		}
		w = min(w, len(rows[r]))
	}
	for _, r := range set.Rows {
		w = min(w, len(r))
	}
	info.Window = w
	ov := corpus.Overlaps(set.Rows, rows, w)
	if len(ov) == 0 {
		return info, nil
	}
	calibRows, traceRows, windows := map[int]bool{}, map[int]bool{}, 0
	for _, o := range ov {
		calibRows[o.A], traceRows[o.B] = true, true
		windows += o.Windows
	}
	first := ov[0]
	return nil, fmt.Errorf("quantize: %w: calibration row %d (%s) and row %d of the trace %s (%s) share %s of %d tokens; "+
		"in all, %d calibration rows share %s with %d trace rows",
		ErrCalibOverlap, first.A, calibRowSource(set, first.A), first.B, path, traceRowSource(tr, first.B),
		windowCount(first.Windows), w, len(calibRows), windowCount(windows), len(traceRows))
}

func windowCount(n int) string {
	if n == 1 {
		return "1 window"
	}
	return fmt.Sprintf("%d windows", n)
}

// calibRowSource names row i of set by its source: "row k of those taken
// from FILE".
func calibRowSource(set *corpus.Set, i int) string {
	for _, s := range set.Sources {
		if i < s.Rows {
			return fmt.Sprintf("row %d of those taken from %s", i, s.Path)
		}
		i -= s.Rows
	}
	return "unknown source"
}

// traceRowSource names trace row i by the data file it came from, as the
// trace's recipe records it.
func traceRowSource(tr *eval.Trace, i int) string {
	for _, s := range tr.Sources() {
		if i < s.Rows {
			return fmt.Sprintf("row %d of its data from %s", i, s.Path)
		}
		i -= s.Rows
	}
	return "its data recipe names no source"
}

// dataFingerprint is the rows' fingerprint from a trace's data recipe, or
// "" when it has none.
func dataFingerprint(m eval.Meta) string {
	var r corpus.Recipe
	if len(m.Data) == 0 || json.Unmarshal(m.Data, &r) != nil {
		return ""
	}
	return r.Fingerprint
}
