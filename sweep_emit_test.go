package forge

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// emitTestArgs stands in for forge's CLI (which names the flags): every
// setting of the sweep becomes one argument, so a setting lost or
// mangled on the way through a job file shows in the comparison.
func emitTestArgs(s SweepConfig) []string {
	a := []string{"forge", "sweep", "--model=" + s.Model, "--trace=" + s.Trace, "--out=" + s.Out,
		"--formats=" + s.Candidates, "--unit=" + s.Unit, "--rows=" + strconv.Itoa(s.Rows), "--method=" + s.Method}
	for _, c := range s.Calib {
		a = append(a, "--calib="+c)
	}
	a = append(a, "--ctx="+strconv.Itoa(s.Seq), "--holdout="+strconv.Itoa(s.HoldOut),
		"--seed="+strconv.FormatUint(s.Seed, 10), "--shard="+s.Shard)
	for _, f := range []struct {
		flag string
		on   bool
	}{{"--head", s.Head}, {"--aw", s.AW}, {"--hadamard", s.Hadamard}, {"--lowrank-weighted", s.LowRankWeighted},
		{"--resume", s.Resume}, {"--overwrite", s.Overwrite}} {
		if f.on {
			a = append(a, f.flag)
		}
	}
	return a
}

// emitTestSweep is a sweep whose paths and settings hold what quoting
// gets wrong: spaces, quotes, '$', "$(…)" (the kubelet's own syntax), a
// backslash, a leading '-', ';' and ',' in the candidates.
func emitTestSweep(root string) SweepConfig {
	return SweepConfig{
		Model:      root + "/models/Qwen 3.5 $HOME $$ $(JOB_COMPLETION_INDEX)",
		Trace:      root + `/traces/it's "code" ${x}.trace`,
		Out:        root + "/sweeps/run $(HOME) 1/-s.json",
		Candidates: "LUT4 per-tensor + pcs; vector 2x16 + pcs, rank 8;INT8 per-channel;bf16",
		Unit:       "band:2", Head: true, Rows: 16, Method: "gptq", AW: true, Hadamard: true, LowRankWeighted: true,
		Calib: []string{root + `/calib/a\b.txt:64`, root + "/calib/chat.jsonl"}, Seq: 512, HoldOut: 3, Seed: 42,
	}
}

// emitWant is the command line that task i of n must run.
func emitWant(s SweepConfig, i, n int) []string {
	s.Out = SweepShardOut(s.Out, i)
	s.Shard = strconv.Itoa(i) + "/" + strconv.Itoa(n)
	s.Resume = true
	return emitTestArgs(s)
}

// kubeletExpand is the kubelet's expansion of command and args
// (Kubernetes' third_party/forked/golang/expansion): $(VAR) is VAR's
// value when VAR is set, else left as it is; $$ is one '$'; any other '$'
// stays.
func kubeletExpand(in string, env map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(in); i++ {
		if in[i] != '$' || i+1 == len(in) {
			b.WriteByte(in[i])
			continue
		}
		switch rest := in[i+1:]; {
		case rest[0] == '$':
			b.WriteByte('$')
			i++
		case rest[0] == '(' && strings.IndexByte(rest, ')') > 0:
			name := rest[1:strings.IndexByte(rest, ')')]
			if v, ok := env[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString("$(" + name + ")")
			}
			i += len(name) + 2
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

func TestEmitKubeletTwin(t *testing.T) {
	env := map[string]string{"I": "7"}
	for in, want := range map[string]string{
		"a-$(I).json": "a-7.json", "$$(I)": "$(I)", "$(J)": "$(J)", "a$": "a$", "$$$$": "$$", "$x": "$x", "$(I": "$(I",
	} {
		if got := kubeletExpand(in, env); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}

// k8sManifest is the part of a batch/v1 Job that EmitSweep writes; the
// decoder refuses any other field.
type k8sManifest struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Spec struct {
		CompletionMode       string `yaml:"completionMode"`
		Completions          int    `yaml:"completions"`
		Parallelism          int    `yaml:"parallelism"`
		BackoffLimitPerIndex int    `yaml:"backoffLimitPerIndex"`
		Template             struct {
			Spec struct {
				RestartPolicy string `yaml:"restartPolicy"`
				Containers    []struct {
					Name    string   `yaml:"name"`
					Image   string   `yaml:"image"`
					Command []string `yaml:"command"`
					Args    []string `yaml:"args"`
					Env     []struct {
						Name      string `yaml:"name"`
						ValueFrom struct {
							FieldRef struct {
								FieldPath string `yaml:"fieldPath"`
							} `yaml:"fieldRef"`
						} `yaml:"valueFrom"`
					} `yaml:"env"`
					Resources struct {
						Requests map[string]string `yaml:"requests"`
						Limits   map[string]string `yaml:"limits"`
					} `yaml:"resources"`
					VolumeMounts []struct {
						Name      string `yaml:"name"`
						MountPath string `yaml:"mountPath"`
					} `yaml:"volumeMounts"`
				} `yaml:"containers"`
				Volumes []struct {
					Name                  string `yaml:"name"`
					PersistentVolumeClaim struct {
						ClaimName string `yaml:"claimName"`
					} `yaml:"persistentVolumeClaim"`
				} `yaml:"volumes"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

// TestEmitK8sJob: the manifest parses as YAML into an Indexed Job of 64
// completions with the image, claim, mount and resources asked for, and
// each pod's command line, once the kubelet has put its index in, is
// exactly the sweep of its shard writing its own file.
func TestEmitK8sJob(t *testing.T) {
	sw := emitTestSweep("/data/forge runs")
	text, err := EmitSweep(EmitConfig{Kind: EmitK8sJob, Shards: 64, Sweep: sw, Args: emitTestArgs,
		Image: "registry.example/forge:0.1", Mount: "/data/forge runs/", VolumeClaim: "sweeps.v1", Memory: 96 << 30})
	if err != nil {
		t.Fatal(err)
	}
	var m k8sManifest
	dec := yaml.NewDecoder(strings.NewReader(text))
	dec.KnownFields(true)
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("the manifest is not the YAML of a Job: %v\n%s", err, text)
	}
	s, pod := m.Spec, m.Spec.Template.Spec
	if m.APIVersion != "batch/v1" || m.Kind != "Job" || m.Metadata.Name != DefaultEmitJobName ||
		s.CompletionMode != "Indexed" || s.Completions != 64 || s.Parallelism != 64 || s.BackoffLimitPerIndex != EmitRetries ||
		pod.RestartPolicy != "Never" || len(pod.Containers) != 1 || len(pod.Volumes) != 1 {
		t.Fatalf("manifest %+v\n%s", m, text)
	}
	c := pod.Containers[0]
	if c.Image != "registry.example/forge:0.1" || len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != "/data/forge runs" ||
		c.VolumeMounts[0].Name != pod.Volumes[0].Name || pod.Volumes[0].PersistentVolumeClaim.ClaimName != "sweeps.v1" {
		t.Errorf("container %+v, volumes %+v", c, pod.Volumes)
	}
	want := map[string]string{"cpu": "8", "memory": "96Gi"}
	if !equalMaps(c.Resources.Requests, want) || !equalMaps(c.Resources.Limits, want) {
		t.Errorf("resources %+v, want %v requested and as the limit", c.Resources, want)
	}
	if len(c.Env) != 1 || c.Env[0].Name != "JOB_COMPLETION_INDEX" ||
		c.Env[0].ValueFrom.FieldRef.FieldPath != "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
		t.Errorf("env %+v", c.Env)
	}
	for _, i := range []int{0, 5, 63} {
		env := map[string]string{"JOB_COMPLETION_INDEX": strconv.Itoa(i)}
		var got []string
		for _, a := range append(slices.Clone(c.Command), c.Args...) {
			got = append(got, kubeletExpand(a, env))
		}
		if w := emitWant(sw, i, 64); !slices.Equal(got, w) {
			t.Errorf("pod %d runs\n%q\nwant\n%q", i, got, w)
		}
	}
	if !strings.Contains(text, "#   forge sweep merge --out '/data/forge runs/sweeps/run $(HOME) 1/-s.json' '/data/forge runs/sweeps/run $(HOME) 1/-s.shard-'*.json\n") {
		t.Errorf("no merge command in the header:\n%s", text)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestEmitSlurm: the script is valid bash with the array, resources and
// logs asked for; run as array task 3 (forge replaced by a stub printing
// its arguments) it runs exactly the sweep of shard 3 writing its own
// file, also when resubmitted alone (SLURM_ARRAY_TASK_MIN=3); and the
// merge command of its header, run in the shell, finds every shard.
func TestEmitSlurm(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	dir := t.TempDir()
	sw := emitTestSweep(filepath.Join(dir, "my data"))
	text, err := EmitSweep(EmitConfig{Kind: EmitSlurm, Shards: 64, Sweep: sw, Args: emitTestArgs,
		CPUs: 16, Memory: 1000 << 20, Time: "2-00:00:00", JobName: "qwen_sweep"})
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "sweep.sbatch")
	os.WriteFile(script, []byte(text), 0o644)
	if out, err := exec.Command(bash, "-n", script).CombinedOutput(); err != nil {
		t.Fatalf("bash -n: %v\n%s\n%s", err, out, text)
	}
	for _, d := range []string{"#SBATCH --array=0-63\n", "#SBATCH --cpus-per-task=16\n", "#SBATCH --mem=1000M\n",
		"#SBATCH --time=2-00:00:00\n", "#SBATCH --job-name=qwen_sweep\n", "#SBATCH --output=qwen_sweep-%A_%a.log\n"} {
		if !strings.Contains(text, d) {
			t.Errorf("no %q in\n%s", d, text)
		}
	}
	// sbatch reads #SBATCH lines only before the first command.
	if i, j := strings.LastIndex(text, "#SBATCH"), strings.Index(text, "\nset -eu"); i < 0 || j < i {
		t.Errorf("an #SBATCH line follows a command:\n%s", text)
	}
	stub := filepath.Join(dir, "bin")
	os.Mkdir(stub, 0o755)
	os.WriteFile(filepath.Join(stub, "forge"), []byte("#!/bin/sh\nprintf '%s\\0' \"$@\"\n"), 0o755)
	path := "PATH=" + stub + string(os.PathListSeparator) + os.Getenv("PATH")
	for _, min := range []string{"0", "3"} {
		cmd := exec.Command(bash, script)
		cmd.Env = append(os.Environ(), path, "SLURM_ARRAY_TASK_ID=3", "SLURM_ARRAY_TASK_MIN="+min)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("task 3: %v", err)
		}
		got := append([]string{"forge"}, strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")...)
		if w := emitWant(sw, 3, 64); !slices.Equal(got, w) {
			t.Errorf("task 3 (SLURM_ARRAY_TASK_MIN=%s) runs\n%q\nwant\n%q", min, got, w)
		}
	}
	// The header's merge command, with the shards in place.
	os.MkdirAll(filepath.Dir(sw.Out), 0o755)
	var shards []string
	for i := range 3 {
		shards = append(shards, SweepShardOut(sw.Out, i))
		os.WriteFile(shards[i], nil, 0o644)
	}
	_, merge, ok := strings.Cut(text, "\n#   forge sweep merge ")
	merge, _, _ = strings.Cut(merge, "\n")
	if !ok {
		t.Fatalf("no merge command in\n%s", text)
	}
	cmd := exec.Command(bash, "-c", "forge sweep merge "+merge)
	cmd.Env = append(os.Environ(), path)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("merge %s: %v", merge, err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if w := append([]string{"sweep", "merge", "--out", sw.Out}, shards...); !slices.Equal(got, w) {
		t.Errorf("the header's merge runs %q, want %q", got, w)
	}
}

// TestEmitChecks: bad settings are refused, each with a message naming
// the problem, and nothing else is written.
func TestEmitChecks(t *testing.T) {
	good := func() EmitConfig {
		return EmitConfig{Kind: EmitK8sJob, Shards: 4, Image: "forge:1", Args: emitTestArgs,
			Sweep: SweepConfig{Model: "/data/m", Trace: "/data/t.trace", Out: "/data/s.json"}}
	}
	if _, err := EmitSweep(good()); err != nil {
		t.Fatalf("the good config: %v", err)
	}
	cases := []struct {
		name string
		edit func(*EmitConfig)
		want string
	}{
		{"unknown kind", func(c *EmitConfig) { c.Kind = "nomad" }, `kind "nomad": want k8s-job or slurm`},
		{"no shards", func(c *EmitConfig) { c.Shards = 0 }, "0 shards: want at least 1"},
		{"no image", func(c *EmitConfig) { c.Image = "" }, "needs the container image"},
		{"model outside the mount", func(c *EmitConfig) { c.Sweep.Model = "/home/me/m" }, "the model /home/me/m is not under /data"},
		{"out beside the mount", func(c *EmitConfig) { c.Sweep.Out = "/database/s.json" }, "the output /database/s.json is not under /data"},
		{"relative trace", func(c *EmitConfig) { c.Sweep.Trace = "t.trace" }, `the trace "t.trace" is a relative path`},
		{"calib outside", func(c *EmitConfig) { c.Sweep.Method, c.Sweep.Calib = "gptq", []string{"/data/a.txt:8", "/tmp/b.txt:8"} }, "calibration file /tmp/b.txt is not under /data"},
		{"mount /", func(c *EmitConfig) { c.Mount = "/" }, `mount "/"`},
		{"shard given", func(c *EmitConfig) { c.Sweep.Shard = "1/4" }, "each task of the job is given its own"},
		{"no out", func(c *EmitConfig) { c.Sweep.Out = "" }, "needs a model, a trace and an output"},
		{"bad candidate", func(c *EmitConfig) { c.Sweep.Candidates = "LUT5 per-tensor + pcs" }, "LUT5"},
		{"bad unit", func(c *EmitConfig) { c.Sweep.Unit = "band:0" }, "band:0"},
		{"one row", func(c *EmitConfig) { c.Sweep.Rows = 1 }, "1 trace rows"},
		{"gptq without calib", func(c *EmitConfig) { c.Sweep.Method = "gptq" }, "calibration"},
		{"weighted without rank", func(c *EmitConfig) { c.Sweep.LowRankWeighted = true }, "needs a candidate with a rank"},
		{"bad k8s name", func(c *EmitConfig) { c.JobName = "Forge_Sweep" }, `job name "Forge_Sweep"`},
		{"bad claim", func(c *EmitConfig) { c.VolumeClaim = "my claim" }, `volume claim "my claim"`},
		{"time for k8s", func(c *EmitConfig) { c.Time = "10:00" }, "only a Slurm job takes one"},
		{"image for slurm", func(c *EmitConfig) { c.Kind = EmitSlurm }, "is for a Kubernetes job"},
		{"bad time", func(c *EmitConfig) { c.Kind, c.Image, c.Time = EmitSlurm, "", "tomorrow" }, `time limit "tomorrow"`},
		{"newline in a path", func(c *EmitConfig) { c.Sweep.Out = "/data/a\nb.json" }, "control character"},
		{"negative cpus", func(c *EmitConfig) { c.CPUs = -1 }, "-1 CPUs"},
		{"too many shards", func(c *EmitConfig) { c.Shards = 200_000 }, "at most 100000"},
		{"args drop the shard", func(c *EmitConfig) {
			c.Args = func(SweepConfig) []string { return []string{"forge", "sweep"} }
		}, "does not pass the task's output and shard on"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := good()
			c.edit(&cfg)
			text, err := EmitSweep(cfg)
			if err == nil || !strings.Contains(err.Error(), c.want) || text != "" {
				t.Errorf("got %v (%d bytes of text), want an error saying %q", err, len(text), c.want)
			}
		})
	}
}

func TestEmitShardOut(t *testing.T) {
	for _, c := range []struct {
		out  string
		want string
	}{
		{"s.json", "s.shard-3.json"},
		{"/data/run.v2/s", "/data/run.v2/s.shard-3"},
		{"/data/a b/s.sweep.json", "/data/a b/s.sweep.shard-3.json"},
		{".json", ".json.shard-3"},
	} {
		if got := SweepShardOut(c.out, 3); got != c.want {
			t.Errorf("%q: %q, want %q", c.out, got, c.want)
		}
	}
}

// TestEmitMemory: memory is written in whole GiB when it is, else MiB
// rounded up, in each engine's spelling.
func TestEmitMemory(t *testing.T) {
	for _, c := range []struct {
		n         int64
		k8s, slur string
	}{{64 << 30, "64Gi", "64G"}, {1536 << 20, "1536Mi", "1536M"}, {1<<20 + 1, "2Mi", "2M"}} {
		if a, b := memory(c.n, "i"), memory(c.n, ""); a != c.k8s || b != c.slur {
			t.Errorf("%d: %s, %s; want %s, %s", c.n, a, b, c.k8s, c.slur)
		}
	}
}
