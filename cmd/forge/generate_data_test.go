package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"forge/eval"
	"forge/internal/npy"
)

var (
	examplePrompts = filepath.Join("..", "..", "examples", "prompts.jsonl")
	repoData       = filepath.Join("..", "..", "data")
)

// npyRows reads an int64 (rows, cols) .npy file.
func npyRows(t *testing.T, path string) [][]int {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	a, err := npy.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	if a.Descr != "<i8" || a.Fortran || len(a.Shape) != 2 {
		t.Fatalf("%s: descr %q, fortran %v, shape %v; want a C-order int64 matrix", path, a.Descr, a.Fortran, a.Shape)
	}
	flat, err := a.Ints()
	if err != nil {
		t.Fatal(err)
	}
	cols := int(a.Shape[1])
	rows := make([][]int, a.Shape[0])
	for i := range rows {
		rows[i] = flat[i*cols : (i+1)*cols]
	}
	return rows
}

// mustRun runs forge and fails the test unless it exits 0.
func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	out, err := run(t, args...)
	if err != nil {
		t.Fatalf("forge %v: %v\n%s", args, err, out)
	}
	return out
}

// TestGeneratedData: `forge calib generate` writes int64 rows of --seq
// tokens, the same bytes for the same seed and others for another seed;
// `forge trace --generate` records the same rows with the generation
// settings in its metadata; `forge quantize --eval-trace` refuses
// calibration rows that overlap the trace, naming the overlap, and
// proceeds with disjoint data (the generated .npy against a trace of
// held-out prose, and code training text against it too).
func TestGeneratedData(t *testing.T) {
	dir := t.TempDir()
	a, b, c := filepath.Join(dir, "a.npy"), filepath.Join(dir, "b.npy"), filepath.Join(dir, "c.npy")
	gen := func(out, seed string, extra ...string) string {
		return mustRun(t, append([]string{"calib", "generate", examplePrompts, "--model", tiny, "--out", out,
			"--seq", "64", "--max-tokens", "32", "--seed", seed}, extra...)...)
	}
	out := gen(a, "1")
	rows := npyRows(t, a)
	if !strings.Contains(out, "6 prompts") || len(rows) == 0 || len(rows[0]) != 64 {
		t.Fatalf("%d rows of %d tokens; output:\n%s", len(rows), len(rows[0]), out)
	}
	gen(b, "1")
	gen(c, "2")
	ra, _ := os.ReadFile(a)
	rb, _ := os.ReadFile(b)
	rc, _ := os.ReadFile(c)
	if !bytes.Equal(ra, rb) {
		t.Error("the same seed wrote different files")
	}
	if bytes.Equal(ra, rc) {
		t.Error("seeds 1 and 2 wrote the same file")
	}

	trace := filepath.Join(dir, "gen.trace")
	mustRun(t, "trace", "--generate", examplePrompts, "--model", tiny, "--out", trace, "--ctx", "64", "--max-tokens", "32", "--seed", "1")
	checkGeneratedTrace(t, trace, rows)

	// The generated rows calibrate (a plan of one layer's MLP keeps it short)…
	plan := filepath.Join(dir, "plan.json")
	os.WriteFile(plan, []byte(`{"matrices": {"0.mlp": "LUT4 per-tensor + pcs"}}`), 0o644)
	quantize := func(out, calib, evalTrace string) (string, error) {
		return run(t, "quantize", "--model", tiny, "--out", out, "--plan", plan, "--method", "gptq",
			"--calib", calib, "--ctx", "64", "--eval-trace", evalTrace)
	}
	// …but not a bundle to be evaluated on the trace of the same prompts and answers.
	q := filepath.Join(dir, "q")
	msg, err := quantize(q, a+":12", trace)
	if err == nil {
		t.Fatalf("calibration rows equal to the trace's were accepted:\n%s", msg)
	}
	for _, want := range []string{"overlaps the evaluation data", "calibration row 0 (row 0 of those taken from " + a + ")",
		"row 0 of the trace " + trace, "of 64 tokens", "in all, 12 calibration rows", "--eval-trace"} {
		if !strings.Contains(msg, want) {
			t.Errorf("refusal %q does not say %q", msg, want)
		}
	}
	if _, err := os.Stat(q + ".work"); !os.IsNotExist(err) {
		t.Errorf("the refused run left %s.work: %v", q, err)
	}

	prose := filepath.Join(dir, "prose.trace")
	mustRun(t, "trace", "--data", filepath.Join(repoData, "prose-heldout.txt")+":4", "--model", tiny, "--out", prose, "--ctx", "64")
	mustRun(t, "quantize", "--model", tiny, "--out", q, "--plan", plan, "--method", "gptq", "--calib", a+":12", "--ctx", "64", "--eval-trace", prose)
	checkManifestTrace(t, q, prose)
	mustRun(t, "inspect", "--model", q) // the manifest with the trace recorded still verifies
	if msg, err := quantize(filepath.Join(dir, "q2"), filepath.Join(repoData, "code-train-sample.txt")+":4", prose); err != nil {
		t.Errorf("code training text against held-out prose was refused: %v\n%s", err, msg)
	}
}

// checkGeneratedTrace: the trace opens with package eval, holds rows (the
// ones calib generate wrote with the same settings) and records the
// generation settings and the prompts file's hash.
func checkGeneratedTrace(t *testing.T, path string, rows [][]int) {
	t.Helper()
	tr, err := eval.OpenTrace(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if tr.Rows() != len(rows) || tr.Meta.Seq != 64 {
		t.Fatalf("trace of %d rows (seq %d), calib generate wrote %d", tr.Rows(), tr.Meta.Seq, len(rows))
	}
	for r := range rows {
		got, err := tr.Tokens(r)
		if err != nil || !slices.Equal(got, rows[r]) {
			t.Fatalf("trace row %d differs from the generated rows (%v)", r, err)
		}
	}
	var rec struct {
		Sources []struct {
			Path, Kind string
			Rows       int
		}
		Generation struct {
			Prompts       string  `json:"prompts"`
			PromptsSHA256 string  `json:"prompts_sha256"`
			PromptCount   int     `json:"prompt_count"`
			Temperature   float64 `json:"temperature"`
			TopP          float64 `json:"top_p"`
			TopK          int     `json:"top_k"`
			MaxTokens     int     `json:"max_tokens"`
			Think         bool    `json:"think"`
			Seed          uint64  `json:"seed"`
		}
	}
	if err := json.Unmarshal(tr.Meta.Data, &rec); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(examplePrompts)
	sum := sha256.Sum256(raw)
	abs, _ := filepath.Abs(examplePrompts) // kong makes an existing file's path absolute
	g := rec.Generation
	if g.Prompts != abs || g.PromptsSHA256 != hex.EncodeToString(sum[:]) || g.PromptCount != 6 ||
		g.Temperature != 0.6 || g.TopP != 0.95 || g.TopK != 20 || g.MaxTokens != 32 || !g.Think || g.Seed != 1 {
		t.Errorf("generation settings %s", tr.Meta.Data)
	}
	if len(rec.Sources) != 1 || rec.Sources[0].Kind != "generated" || rec.Sources[0].Rows != len(rows) {
		t.Errorf("sources %+v", rec.Sources)
	}
}

// checkManifestTrace: the bundle's manifest names the evaluation trace.
func checkManifestTrace(t *testing.T, bundle, trace string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(bundle, "forge.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Quant struct {
			Recipe struct {
				EvalTrace struct {
					Path   string `json:"path"`
					Rows   int    `json:"rows"`
					Window int    `json:"window"`
				} `json:"eval_trace"`
			} `json:"recipe"`
		} `json:"quantization"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(trace)
	if e := m.Quant.Recipe.EvalTrace; e.Path != abs || e.Rows != 4 || e.Window != 64 {
		t.Errorf("manifest's eval_trace %+v", e)
	}
}

// TestGeneratedDataRefusals: what calib generate and trace --generate
// refuse before generating anything.
func TestGeneratedDataRefusals(t *testing.T) {
	dir := t.TempDir()
	mine := filepath.Join(dir, "mine.npy")
	os.WriteFile(mine, []byte("not numpy"), 0o644)
	inside := filepath.Join(tiny, "rows.npy")
	prose := filepath.Join(repoData, "prose-heldout.txt")
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"exists", []string{"calib", "generate", examplePrompts, "--model", tiny, "--out", mine}, "already exists"},
		{"not forge's", []string{"calib", "generate", examplePrompts, "--model", tiny, "--out", mine, "--overwrite"}, "mine.npy"},
		{"inside the model", []string{"calib", "generate", examplePrompts, "--model", tiny, "--out", inside}, "inside"},
		{"not .npy", []string{"calib", "generate", examplePrompts, "--model", tiny, "--out", filepath.Join(dir, "rows.json")}, ".npy"},
		{"bad max tokens", []string{"calib", "generate", examplePrompts, "--model", tiny, "--out", filepath.Join(dir, "r.npy"), "--max-tokens", "0"}, "--max-tokens"},
		{"bad top-p", []string{"calib", "generate", examplePrompts, "--model", tiny, "--out", filepath.Join(dir, "r.npy"), "--top-p", "2"}, "top_p"},
		{"data and generate", []string{"trace", "--model", tiny, "--data", prose, "--generate", examplePrompts, "--out", filepath.Join(dir, "t")}, "--generate"},
		{"generation flag with data", []string{"trace", "--model", tiny, "--data", prose, "--max-tokens", "8", "--out", filepath.Join(dir, "t")}, "--max-tokens applies to --generate only"},
		{"neither", []string{"trace", "--model", tiny, "--out", filepath.Join(dir, "t")}, "--data"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := run(t, c.args...)
			if err == nil || !strings.Contains(out, c.want) {
				t.Errorf("%v, output %q lacks %q", err, out, c.want)
			}
		})
	}
	if raw, _ := os.ReadFile(mine); string(raw) != "not numpy" {
		t.Errorf("%s was changed", mine)
	}
	if _, err := os.Stat(inside); !os.IsNotExist(err) {
		t.Errorf("%s was written", inside)
	}
}
