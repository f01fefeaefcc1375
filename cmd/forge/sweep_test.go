package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestSweepShards: three shards of a sweep, run as separate processes at
// once (one finding its index in JOB_COMPLETION_INDEX as a Kubernetes
// Indexed Job would give it), merged, give the same measurement file as
// one whole run, byte for byte; a merge missing a shard, or given one
// twice, fails naming it.
func TestSweepShards(t *testing.T) {
	dir := t.TempDir()
	tr := filepath.Join(dir, "t.trace")
	if out, err := run(t, "trace", "--model", tiny, "--data", filepath.Join("..", "..", "data", "code-heldout.txt")+":3",
		"--ctx", "48", "--out", tr); err != nil {
		t.Fatalf("trace: %v\n%s", err, out)
	}
	common := []string{"sweep", "--model", tiny, "--trace", tr, "--unit", "band:3", "--rows", "3",
		"--formats", "LUT4 + pcs;INT8;bf16"}
	whole := filepath.Join(dir, "whole.json")
	if out, err := run(t, append(common, "--out", whole)...); err != nil {
		t.Fatalf("whole sweep: %v\n%s", err, out)
	}
	shards := make([]string, 3)
	errs := make([]error, 3)
	outs := make([]string, 3)
	var wg sync.WaitGroup
	for i := range shards {
		shards[i] = filepath.Join(dir, "shard"+string(rune('0'+i))+".json")
		wg.Go(func() {
			args := append(append([]string(nil), common...), "--out", shards[i], "--shard", string(rune('0'+i))+"/3")
			cmd := exec.Command(forgeBin, args...)
			if i == 2 {
				args[len(args)-1] = "auto/3"
				cmd = exec.Command(forgeBin, args...)
				cmd.Env = append(os.Environ(), "JOB_COMPLETION_INDEX=2")
			}
			b, err := cmd.CombinedOutput()
			outs[i], errs[i] = string(b), err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("shard %d: %v\n%s", i, err, outs[i])
		}
	}
	merged := filepath.Join(dir, "merged.json")
	if out, err := run(t, "sweep", "merge", "--out", merged, shards[2], shards[0], shards[1]); err != nil {
		t.Fatalf("merge: %v\n%s", err, out)
	}
	a, _ := os.ReadFile(whole)
	b, _ := os.ReadFile(merged)
	if len(a) == 0 || string(a) != string(b) {
		t.Errorf("the merged shards differ from the whole sweep")
	}
	for _, c := range []struct {
		files []string
		want  string
	}{
		{[]string{shards[0], shards[1]}, "shard 2/3 is missing"},
		{[]string{shards[0], shards[1], shards[2], shards[1]}, "shard 1/3 is given twice"},
		{[]string{shards[0], whole}, "another split"},
	} {
		out, err := run(t, append([]string{"sweep", "merge", "--out", filepath.Join(dir, "bad.json")}, c.files...)...)
		if err == nil || !strings.Contains(out, c.want) {
			t.Errorf("merge %v: %v, want an error saying %q:\n%s", c.files, err, c.want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "bad.json")); err == nil {
		t.Error("a failed merge wrote its output")
	}
}
