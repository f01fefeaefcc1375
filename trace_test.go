package forge_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"forge"
	"forge/eval"
)

// TestTraceMetadata: the trace records the reference's kind and
// fingerprint and the data recipe with the file's hash; a bundle
// reference is fingerprinted by its manifest.
func TestTraceMetadata(t *testing.T) {
	trace := traceTiny(t, 0)
	tr, err := eval.OpenTrace(trace)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	m := tr.Meta
	abs, _ := filepath.Abs(evalTiny)
	if m.ModelKind != "checkpoint" || m.Model != abs || m.ForgeVersion != forge.Version || m.Seq != 64 || m.TopK != 0 || m.Vocab != 4160 || m.Rows != 4 {
		t.Errorf("meta %+v", m)
	}
	var rec struct {
		Options struct{ Seq, Seed int }
		Sources []struct {
			Path   string
			Rows   int
			SHA256 string
		}
		Fingerprint string
	}
	if err := json.Unmarshal(m.Data, &rec); err != nil {
		t.Fatal(err)
	}
	if len(rec.Sources) != 1 || rec.Sources[0].Path != evalData || rec.Sources[0].Rows != 4 || len(rec.Sources[0].SHA256) != 64 ||
		rec.Options.Seq != 64 || rec.Options.Seed != 5 || rec.Fingerprint == "" {
		t.Errorf("data recipe %s", m.Data)
	}
	if len(m.Fingerprint) != 64 {
		t.Errorf("fingerprint %q", m.Fingerprint)
	}
}

// TestTraceErrors: bad configurations are refused before any work.
func TestTraceErrors(t *testing.T) {
	out := filepath.Join(t.TempDir(), "t.trace")
	for _, c := range []struct {
		name string
		cfg  forge.TraceConfig
		want string
	}{
		{"no data", forge.TraceConfig{Model: evalTiny, Out: out}, "no evaluation data"},
		{"bad spec", forge.TraceConfig{Model: evalTiny, Out: out, Data: []string{"x.txt:0"}}, "x.txt:0"},
		{"missing file", forge.TraceConfig{Model: evalTiny, Out: out, Data: []string{"none.txt"}}, "none.txt"},
		{"short rows", forge.TraceConfig{Model: evalTiny, Out: out, Data: []string{evalData}, Seq: 1}, "at least 2"},
		{"bad top-K", forge.TraceConfig{Model: evalTiny, Out: out, Data: []string{evalData + ":1"}, Seq: 8, TopK: 5000}, "top-K"},
		{"no tokenizer", forge.TraceConfig{Model: filepath.Join("testdata", "qwen35-tiny-random"), Out: out, Data: []string{evalData}}, "tokenizer"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := forge.Trace(context.Background(), c.cfg)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%v, want a mention of %q", err, c.want)
			}
		})
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a failed trace left its file")
	}
}
