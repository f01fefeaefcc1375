package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
	"gopkg.in/yaml.v3"

	"forge"
)

// parseSweep parses a forge sweep command line with forge's own flags
// and returns the sweep it describes.
func parseSweep(t *testing.T, args []string) forge.SweepConfig {
	t.Helper()
	var c cli
	parser, err := kong.New(&c, kong.Name("forge"), kong.Vars{"version": forge.Version}, defaults())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parser.Parse(args); err != nil {
		t.Fatalf("forge %q: %v", args, err)
	}
	return c.Sweep.Measure.config()
}

// TestEmitArgsRoundTrip: the command line sweepArgs writes (the one
// emitted jobs run) parses back, with forge sweep's own flags, into the
// same sweep: every setting, a path starting with '-' or holding spaces,
// quotes and ',' (which --calib splits on), candidates with ';' and ','.
func TestEmitArgsRoundTrip(t *testing.T) {
	dir := t.TempDir()
	model, _ := filepath.Abs(tiny)
	trace := filepath.Join(dir, `it's a "trace", really.trace`)
	os.WriteFile(trace, nil, 0o644)
	all := forge.SweepConfig{Model: model, Trace: trace, Out: "-odd; out, name.json",
		Candidates: "LUT4 per-tensor + pcs;vector 2x16 + pcs, rank 8;bf16", Unit: "band:2", Head: true, Rows: 16,
		Method: "gptq", AW: true, Hadamard: true, LowRankWeighted: true,
		Calib: []string{filepath.Join(dir, "a, b.txt:64"), "-c.jsonl"}, Seq: 512, HoldOut: 3, Seed: 42,
		Shard: "3/8", Resume: true, Overwrite: true}
	if got := parseSweep(t, sweepArgs(all)[1:]); !reflect.DeepEqual(got, all) {
		t.Errorf("every setting:\n%+v\nparses back as\n%+v", all, got)
	}
	// The defaults the flags fill in survive too.
	plain := parseSweep(t, []string{"sweep", "--model", model, "--trace", trace, "--out", "s.json"})
	if got := parseSweep(t, sweepArgs(plain)[1:]); !reflect.DeepEqual(got, plain) {
		t.Errorf("the defaults:\n%+v\nparse back as\n%+v", plain, got)
	}
}

// emitFixture is a trace of the tiny model and a data directory holding
// it and (a link to) the model under names with spaces.
func emitFixture(t *testing.T) (data, model, trace string) {
	t.Helper()
	data = filepath.Join(t.TempDir(), "shared data")
	os.MkdirAll(data, 0o755)
	abs, _ := filepath.Abs(tiny)
	model = filepath.Join(data, "forge tiny")
	if err := os.Symlink(abs, model); err != nil {
		t.Fatal(err)
	}
	trace = filepath.Join(data, "code's trace.trace")
	if out, err := run(t, "trace", "--model", tiny, "--data", filepath.Join("..", "..", "data", "code-heldout.txt")+":2",
		"--ctx", "32", "--out", trace); err != nil {
		t.Fatalf("trace: %v\n%s", err, out)
	}
	return data, model, trace
}

// sweepFlags are a small sweep's flags: two units, two candidates.
func sweepFlags(model, trace, out string) []string {
	return []string{"sweep", "--model", model, "--trace", trace, "--out", out,
		"--unit", "band:4", "--rows", "2", "--formats", "INT8 per-channel; bf16"}
}

// TestEmitSlurm: forge sweep --emit slurm prints the script and writes
// nothing; run as array tasks 0 and 1 with the real forge on the PATH, it
// measures the two shards, each into its own file, and the merge command
// in its header merges them.
func TestEmitSlurm(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	data, model, trace := emitFixture(t)
	out := filepath.Join(data, "sweeps", "s.json")
	script, err := run(t, append(sweepFlags(model, trace, out), "--emit", "slurm", "--shards", "2", "--cpus", "2",
		"--memory", "4GiB", "--time", "30", "--job-name", "tiny-sweep")...)
	if err != nil || !strings.HasPrefix(script, "#!/bin/bash\n") {
		t.Fatalf("emit: %v\n%s", err, script)
	}
	for _, want := range []string{"#SBATCH --array=0-1\n", "#SBATCH --cpus-per-task=2\n", "#SBATCH --mem=4G\n", "#SBATCH --time=30\n"} {
		if !strings.Contains(script, want) {
			t.Errorf("no %q in\n%s", want, script)
		}
	}
	if _, err := os.Stat(filepath.Dir(out)); err == nil {
		t.Fatal("emitting wrote into the output's directory")
	}
	file := filepath.Join(t.TempDir(), "sweep.sbatch")
	os.WriteFile(file, []byte(script), 0o644)
	path := "PATH=" + filepath.Dir(forgeBin) + string(os.PathListSeparator) + os.Getenv("PATH")
	os.MkdirAll(filepath.Dir(out), 0o755)
	for _, task := range []string{"0", "1"} {
		cmd := exec.Command(bash, file)
		cmd.Env = append(os.Environ(), path, "SLURM_ARRAY_TASK_ID="+task)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("task %s: %v\n%s", task, err, b)
		}
		if _, err := os.Stat(filepath.Join(data, "sweeps", "s.shard-"+task+".json")); err != nil {
			t.Fatalf("task %s wrote no shard: %v", task, err)
		}
	}
	_, merge, _ := strings.Cut(script, "\n#   forge sweep merge ")
	merge, _, _ = strings.Cut(merge, "\n")
	cmd := exec.Command(bash, "-c", "forge sweep merge "+merge)
	cmd.Env = append(os.Environ(), path)
	if b, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(b), "merged 2 shards") {
		t.Fatalf("the header's merge: %v\n%s", err, b)
	}
	if _, err := os.Stat(out); err != nil {
		t.Errorf("no merged file: %v", err)
	}
}

// TestEmitK8sJob: forge sweep --emit k8s-job prints a Job whose pods,
// started as the kubelet starts them (the index in the environment and
// $(JOB_COMPLETION_INDEX) expanded in args; '$$' is its escape, and no
// path here has a '$'), measure the shards into their own files.
func TestEmitK8sJob(t *testing.T) {
	data, model, trace := emitFixture(t)
	out := filepath.Join(data, "sweeps", "s.json")
	text, err := run(t, append(sweepFlags(model, trace, out), "--emit", "k8s-job", "--shards", "2", "--image", "forge:test",
		"--mount", data, "--volume-claim", "tiny-data")...)
	if err != nil {
		t.Fatalf("emit: %v\n%s", err, text)
	}
	var job struct {
		Spec struct {
			Completions int `yaml:"completions"`
			Template    struct {
				Spec struct {
					Containers []struct {
						Command []string `yaml:"command"`
						Args    []string `yaml:"args"`
					} `yaml:"containers"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	if err := yaml.Unmarshal([]byte(text), &job); err != nil || job.Spec.Completions != 2 || len(job.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("manifest: %v\n%s", err, text)
	}
	c := job.Spec.Template.Spec.Containers[0]
	os.MkdirAll(filepath.Dir(out), 0o755)
	for _, index := range []string{"0", "1"} {
		var args []string
		for _, a := range c.Args {
			args = append(args, strings.ReplaceAll(a, "$(JOB_COMPLETION_INDEX)", index))
		}
		if !slices.Equal(c.Command, []string{"forge"}) || strings.Contains(strings.Join(args, ""), "$") {
			t.Fatalf("command %q args %q", c.Command, args)
		}
		cmd := exec.Command(forgeBin, args...)
		cmd.Env = append(os.Environ(), "JOB_COMPLETION_INDEX="+index)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("pod %s: %v\n%s", index, err, b)
		}
	}
	shards := []string{filepath.Join(data, "sweeps", "s.shard-0.json"), filepath.Join(data, "sweeps", "s.shard-1.json")}
	if b, err := run(t, append([]string{"sweep", "merge", "--out", out}, shards...)...); err != nil {
		t.Fatalf("merge: %v\n%s", err, b)
	}
}

// TestEmitErrors: bad --emit input exits non-zero with a message naming
// the problem, and prints no job.
func TestEmitErrors(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "t.trace")
	os.WriteFile(trace, nil, 0o644)
	model, _ := filepath.Abs(tiny)
	base := sweepFlags(model, trace, filepath.Join(dir, "s.json"))
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"k8s without image", []string{"--emit", "k8s-job", "--shards", "4", "--mount", dir}, "needs the container image"},
		{"no shards", []string{"--emit", "slurm", "--shards", "0"}, "--emit needs --shards N"},
		{"unknown kind", []string{"--emit", "nomad", "--shards", "4"}, `kind "nomad": want k8s-job or slurm`},
		{"outside the mount", []string{"--emit", "k8s-job", "--shards", "4", "--image", "forge:1"}, "is not under /data"},
		{"shard and emit", []string{"--emit", "slurm", "--shards", "4", "--shard", "1/4"}, "leave --shard out"},
		{"bad memory", []string{"--emit", "slurm", "--shards", "4", "--memory", "lots"}, "--memory"},
		{"bad candidate", []string{"--emit", "slurm", "--shards", "4", "--formats", "LUT5 per-tensor + pcs"}, "LUT5"},
		{"job flags without emit", []string{"--shards", "4"}, "describe the job that --emit prints"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := run(t, append(slices.Clone(base), c.args...)...)
			if err == nil || !strings.Contains(out, c.want) || strings.Contains(out, "apiVersion") || strings.Contains(out, "#SBATCH") {
				t.Errorf("%v, want an error saying %q:\n%s", err, c.want, out)
			}
		})
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the failed emits left %d files", len(entries)-1)
	}
}
