package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"forge/ane/chunk"
)

// TestANEPlanCLI: `forge ane plan` on forge-tiny (a checkpoint: every
// matrix bf16) prints the chunks, the per-entry table, the placement, the
// calibration and a one-line answer, and writes the same facts as JSON;
// --bandwidth replaces only the weight bandwidth.
func TestANEPlanCLI(t *testing.T) {
	js := filepath.Join(t.TempDir(), "ane.json")
	out, err := run(t, "ane", "plan", "--model", tiny, "--ctx", "8k,64k", "--json", js)
	if err != nil {
		t.Fatal(err, out)
	}
	for _, want := range []string{"LLLA", "0–3", "4–7", "head", "65472", "runs on the ANE: bf16 weights run as fp16",
		"91.5", "fitted", "check", "exceed the model's max_position_embeddings 4096", "2 chunks + head", "wrote " + js} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	var v struct {
		Chunks []struct {
			Layers  []int `json:"layers"`
			Entries []struct {
				KVLen int `json:"kv_len"`
			} `json:"entries"`
		} `json:"chunks"`
		Bandwidth   float64  `json:"bandwidth_gbs"`
		KVBandwidth float64  `json:"kv_bandwidth_gbs"`
		Warnings    []string `json:"warnings"`
	}
	raw, _ := os.ReadFile(js)
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Chunks) != 3 || fmt.Sprint(v.Chunks[1].Layers) != "[4 7]" || v.Chunks[0].Entries[1].KVLen != 65472 || v.Bandwidth <= 0 || len(v.Warnings) != 1 {
		t.Errorf("JSON: %s", raw)
	}
	out, err = run(t, "ane", "plan", "--model", tiny, "--bandwidth", "50", "--json", js, "--overwrite")
	if err != nil {
		t.Fatal(err, out)
	}
	kv := v.KVBandwidth
	raw, _ = os.ReadFile(js)
	json.Unmarshal(raw, &v)
	if v.Bandwidth != 50 || v.KVBandwidth != kv || !strings.Contains(out, "weights and state given, KV calibrated") {
		t.Errorf("--bandwidth 50: %v and %v GB/s\n%s", v.Bandwidth, v.KVBandwidth, out)
	}
}

// TestANEPlanCLIErrors: bad flags exit non-zero naming the problem, and
// the defaults the help states are the library's.
func TestANEPlanCLIErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--layers-per-chunk", "0"}, "--layers-per-chunk 0"},
		{[]string{"--T", "0"}, "--T 0"},
		{[]string{"--T", "65"}, "T = 65"},
		{[]string{"--ctx", "0"}, `context "0"`},
		{[]string{"--ctx", "abc"}, `context "abc"`},
		{[]string{"--ctx", "8k,8k"}, "given twice"},
		{[]string{"--bandwidth", "0"}, "--bandwidth 0"},
		{[]string{"--model", filepath.Join(dir, "none")}, "none"},
	} {
		args := []string{"ane", "plan", "--model", tiny}
		if c.args[0] == "--model" {
			args = args[:2]
		}
		out, err := run(t, append(args, c.args...)...)
		if err == nil || !strings.Contains(out, c.want) {
			t.Errorf("%q: %v, output %q does not mention %q", c.args, err, out, c.want)
		}
	}
	help, _ := run(t, "ane", "plan", "--help")
	help = strings.Join(strings.Fields(help), " ") // unwrap the help's lines
	for _, want := range []string{fmt.Sprintf("default %d, the reference's", chunk.DefaultLayersPerChunk),
		fmt.Sprintf("default %d, the reference's", chunk.DefaultT), "default 8k,16k,32k"} {
		if !strings.Contains(help, want) {
			t.Errorf("help lacks %q:\n%s", want, help)
		}
	}
	var ctxs []string
	for _, n := range chunk.DefaultContexts() {
		ctxs = append(ctxs, strings.ToLower(chunk.FormatContext(n)))
	}
	if strings.Join(ctxs, ",") != "8k,16k,32k" {
		t.Errorf("the help's default contexts are not the library's %v", chunk.DefaultContexts())
	}
}
