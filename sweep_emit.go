package forge

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"forge/corpus"
	"forge/plan"
)

// The kinds of job EmitSweep writes.
const (
	EmitK8sJob = "k8s-job" // a Kubernetes Indexed Job manifest (YAML)
	EmitSlurm  = "slurm"   // an sbatch job-array script
)

// The defaults of EmitConfig.
const (
	DefaultEmitJobName     = "forge-sweep"
	DefaultEmitVolumeClaim = "forge-data"
	DefaultEmitMount       = "/data"
	DefaultEmitCPUs        = 8
	DefaultEmitMemory      = 64 << 30 // bytes
	// EmitRetries is how many times a Kubernetes index is retried
	// (backoffLimitPerIndex); each retry resumes from its .partial file.
	EmitRetries = 3
)

// EmitConfig configures EmitSweep. Zero values are the defaults, except
// for Kind, Shards, Sweep (its Model, Trace and Out) and Args, which are
// needed.
type EmitConfig struct {
	Kind   string // EmitK8sJob or EmitSlurm
	Shards int    // tasks: task I measures slice I of Shards (at least 1)
	// Sweep is the sweep every task runs. Its Out names the merged file
	// the user makes afterwards; task I writes SweepShardOut(Out, I) and
	// resumes from that file's partial. Shard must be empty: each task
	// is given its own. Nothing it names is read.
	Sweep SweepConfig
	// Args writes the command line that runs a sweep, the program first.
	// forge's CLI gives it (flag names live there); EmitSweep calls it
	// once, with Out and Shard holding a placeholder for the task's
	// index, which each kind of job fills in its own way.
	Args func(SweepConfig) []string

	Image       string // EmitK8sJob: a container image with forge on its PATH (needed)
	VolumeClaim string // EmitK8sJob: the PersistentVolumeClaim holding the data and outputs ("": DefaultEmitVolumeClaim)
	Mount       string // EmitK8sJob: where each pod mounts the claim; every path must be under it ("": DefaultEmitMount)
	Time        string // EmitSlurm: the time limit, as sbatch --time takes it ("": the partition's default)
	CPUs        int    // per task (0: DefaultEmitCPUs)
	Memory      int64  // bytes per task (0: DefaultEmitMemory)
	JobName     string // "": DefaultEmitJobName
}

// emitIndex stands for the task's index in the command line Args
// writes: no argument can hold a NUL byte, so it is never the user's.
const emitIndex = "\x00INDEX\x00"

// SweepShardOut is the measurement file that task index of an emitted
// sweep writes: out with ".shard-INDEX" before its extension
// ("s.json" → "s.shard-3.json").
func SweepShardOut(out string, index int) string { return shardOut(out, strconv.Itoa(index)) }

func shardOut(out, index string) string {
	ext := path.Ext(out)
	if ext == path.Base(out) { // ".json" alone is a name, not an extension
		ext = ""
	}
	return strings.TrimSuffix(out, ext) + ".shard-" + index + ext
}

// EmitSweep writes a job that runs cfg.Sweep as cfg.Shards tasks on an
// existing engine: a Kubernetes Indexed Job (one pod per index, the index
// read from JOB_COMPLETION_INDEX) or a Slurm job array (one task per
// index, SLURM_ARRAY_TASK_ID). Task I runs the sweep with shard I/N,
// resume on, writing SweepShardOut(Out, I); `forge sweep merge` then
// joins the shards into Out. A comment at the top of the text says how
// to submit it and merge. Nothing is measured and nothing is read: the
// settings are checked as far as they can be without the model.
func EmitSweep(cfg EmitConfig) (string, error) {
	cfg, err := checkEmit(cfg)
	if err != nil {
		return "", fmt.Errorf("emit: %w", err)
	}
	task := cfg.Sweep
	task.Out = shardOut(task.Out, emitIndex)
	task.Shard = emitIndex + "/" + strconv.Itoa(cfg.Shards)
	task.Resume = true
	task.Progress, task.Log = nil, nil
	argv := cfg.Args(task)
	if len(argv) < 2 || !slices.ContainsFunc(argv, func(a string) bool { return strings.Contains(a, emitIndex) }) {
		return "", fmt.Errorf("emit: the command line %q does not pass the task's output and shard on", argv)
	}
	for _, a := range argv {
		a = strings.ReplaceAll(a, emitIndex, "I")
		if err := emitSafe(a); err != nil {
			return "", fmt.Errorf("emit: argument %q: %w", a, err)
		}
	}
	if cfg.Kind == EmitK8sJob {
		if err := cfg.checkMounted(); err != nil {
			return "", fmt.Errorf("emit: %w", err)
		}
		return k8sJob(cfg, argv), nil
	}
	return slurmScript(cfg, argv), nil
}

// emitSafe refuses what a job file cannot carry plainly: text that is
// not UTF-8 and control characters (a newline would end a comment line).
func emitSafe(s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("not UTF-8")
	}
	if strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return fmt.Errorf("holds a control character, which a job file cannot carry safely")
	}
	return nil
}

var (
	dnsLabel  = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	dnsDomain = regexp.MustCompile(`^[a-z0-9]([-.a-z0-9]*[a-z0-9])?$`)
	slurmName = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)
	// sbatch --time: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS.
	slurmTime = regexp.MustCompile(`^([0-9]+-[0-9]+(:[0-9]+){0,2}|[0-9]+(:[0-9]+){0,2})$`)
)

// checkEmit fills in the defaults and refuses settings that are wrong or
// that the chosen kind of job has no use for.
func checkEmit(cfg EmitConfig) (EmitConfig, error) {
	k8s := cfg.Kind == EmitK8sJob
	switch {
	case cfg.Kind != EmitK8sJob && cfg.Kind != EmitSlurm:
		return cfg, fmt.Errorf("kind %q: want %s or %s", cfg.Kind, EmitK8sJob, EmitSlurm)
	case cfg.Args == nil:
		return cfg, fmt.Errorf("no command-line writer (Args)")
	case cfg.Shards < 1:
		return cfg, fmt.Errorf("%d shards: want at least 1", cfg.Shards)
	case k8s && cfg.Shards > 100_000:
		return cfg, fmt.Errorf("%d shards: a Kubernetes Indexed Job takes at most 100000", cfg.Shards)
	case cfg.CPUs < 0 || cfg.Memory < 0:
		return cfg, fmt.Errorf("%d CPUs and %d bytes of memory per task: want positive numbers", cfg.CPUs, cfg.Memory)
	case k8s && cfg.Image == "":
		return cfg, fmt.Errorf("a Kubernetes job needs the container image that holds forge")
	case k8s && cfg.Time != "":
		return cfg, fmt.Errorf("time limit %q: only a Slurm job takes one", cfg.Time)
	case !k8s && (cfg.Image != "" || cfg.VolumeClaim != "" || cfg.Mount != ""):
		return cfg, fmt.Errorf("an image, volume claim or mount is for a Kubernetes job; a Slurm job runs forge from the PATH on the cluster's file system")
	case !k8s && cfg.Time != "" && !slurmTime.MatchString(cfg.Time):
		return cfg, fmt.Errorf("time limit %q: want minutes, HH:MM:SS or D-HH:MM:SS", cfg.Time)
	}
	cfg.JobName = cmp.Or(cfg.JobName, DefaultEmitJobName)
	cfg.VolumeClaim = cmp.Or(cfg.VolumeClaim, DefaultEmitVolumeClaim)
	cfg.Mount = cmp.Or(cfg.Mount, DefaultEmitMount)
	if cfg.CPUs == 0 {
		cfg.CPUs = DefaultEmitCPUs
	}
	if cfg.Memory == 0 {
		cfg.Memory = DefaultEmitMemory
	}
	if k8s {
		switch {
		case len(cfg.JobName) > 63 || !dnsLabel.MatchString(cfg.JobName):
			return cfg, fmt.Errorf("job name %q: a Kubernetes name is at most 63 lower-case letters, digits and '-', starting and ending with a letter or digit", cfg.JobName)
		case len(cfg.VolumeClaim) > 253 || !dnsDomain.MatchString(cfg.VolumeClaim):
			return cfg, fmt.Errorf("volume claim %q: want a Kubernetes name (lower-case letters, digits, '-' and '.')", cfg.VolumeClaim)
		case !path.IsAbs(cfg.Mount) || path.Clean(cfg.Mount) == "/":
			return cfg, fmt.Errorf("mount %q: want an absolute directory other than /", cfg.Mount)
		}
		if err := emitSafe(cfg.Image + cfg.Mount); err != nil || strings.ContainsAny(cfg.Image, " \t") {
			return cfg, fmt.Errorf("image %q or mount %q: want plain text without spaces in the image", cfg.Image, cfg.Mount)
		}
		cfg.Mount = path.Clean(cfg.Mount)
	} else if !slurmName.MatchString(cfg.JobName) {
		return cfg, fmt.Errorf("job name %q: want letters, digits, '.', '_' and '-'", cfg.JobName)
	}
	if err := checkSweepSettings(cfg.Sweep); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// checkSweepSettings checks what Sweep would check of cfg before reading
// anything: the paths are given, the candidates, unit, rows, calibration
// specs and quantizer settings are good, and no shard is set.
func checkSweepSettings(cfg SweepConfig) error {
	switch {
	case cfg.Model == "" || cfg.Trace == "" || cfg.Out == "":
		return fmt.Errorf("the sweep needs a model, a trace and an output file")
	case cfg.Shard != "":
		return fmt.Errorf("shard %q: each task of the job is given its own; leave it out", cfg.Shard)
	case cfg.Rows != 0 && cfg.Rows < 2:
		return fmt.Errorf("%d trace rows: at least 2 are needed for a standard error", cfg.Rows)
	case cfg.Seq < 0 || cfg.HoldOut < 0:
		return fmt.Errorf("calibration row length %d or held-out rows %d is negative", cfg.Seq, cfg.HoldOut)
	}
	cands, err := plan.ParseCandidates(cmp.Or(cfg.Candidates, DefaultSweepCandidates))
	if err != nil {
		return err
	}
	if cfg.LowRankWeighted && !slices.ContainsFunc(cands, func(c plan.Candidate) bool { return c.Rank > 0 }) {
		return fmt.Errorf("a Hessian-weighted low-rank correction needs a candidate with a rank (\"FORMAT, rank N\")")
	}
	if _, err := plan.ParseUnitKind(cmp.Or(cfg.Unit, "part")); err != nil {
		return err
	}
	for _, s := range cfg.Calib {
		if _, err := corpus.ParseSpec(s); err != nil {
			return err
		}
	}
	_, err = sweepRecipe(cfg)
	return err
}

// checkMounted refuses a path a pod cannot see: every path the sweep
// names must be absolute and under the mount of the volume claim.
func (cfg EmitConfig) checkMounted() error {
	s := cfg.Sweep
	paths := [][2]string{{"model", s.Model}, {"trace", s.Trace}, {"output", s.Out}}
	for _, c := range s.Calib {
		sp, _ := corpus.ParseSpec(c) // checked by checkSweepSettings
		paths = append(paths, [2]string{"calibration file", sp.Path})
	}
	for _, p := range paths {
		what, name := p[0], p[1]
		if !path.IsAbs(name) {
			return fmt.Errorf("the %s %q is a relative path: a pod would resolve it in the image's working directory; give it as an absolute path under %s, where the job mounts the claim %s",
				what, name, cfg.Mount, cfg.VolumeClaim)
		}
		if c := path.Clean(name); c != cfg.Mount && !strings.HasPrefix(c, cfg.Mount+"/") {
			return fmt.Errorf("the %s %s is not under %s: a pod sees only the claim %s mounted there; put the file on the claim and give its path as the pod sees it",
				what, name, cfg.Mount, cfg.VolumeClaim)
		}
	}
	return nil
}

// k8sJob writes the Indexed Job. The index reaches the command line by
// the kubelet's own expansion of $(JOB_COMPLETION_INDEX) in args (no
// shell, so no shell quoting): every other '$' is doubled, which that
// expansion turns back into one. Strings are written as YAML
// double-quoted scalars, whose escapes are JSON's.
func k8sJob(cfg EmitConfig, argv []string) string {
	var b strings.Builder
	n := cfg.Shards
	out := cfg.Sweep.Out
	fmt.Fprintf(&b, `# forge sweep as a Kubernetes Indexed Job of %d pods: the pod of index I measures
# shard I/%d of the sweep and writes %s
# on the volume claim %s, mounted at %s. Written by forge %s
# (forge sweep --emit %s); nothing was measured or read to write it.
#
# Apply it:   kubectl apply -f FILE.yaml
# Watch it:   kubectl get job %s --watch
# Logs:       kubectl logs -l job-name=%s --prefix --tail 20
# A pod that fails is replaced by one with the same index (at most %d times per index:
# backoffLimitPerIndex, Kubernetes 1.29 or later; on older clusters delete that line), and the
# new pod resumes from the shard's .partial file on the claim.
# When the job is complete, merge the shards where the claim is mounted (merge checks that
# every index 0..%d is there once and complete, and that all measured the same model, trace
# rows, units, candidates and quantizer settings):
#   forge sweep merge --out %s %s
`, n, n, shardOut(out, "I"), cfg.VolumeClaim, cfg.Mount, Version, EmitK8sJob,
		cfg.JobName, cfg.JobName, EmitRetries, n-1, shellWord(out, ""), shellWord(shardOut(out, emitIndex), "*"))
	fmt.Fprintf(&b, `apiVersion: batch/v1
kind: Job
metadata:
  name: %s
spec:
  completionMode: Indexed
  completions: %d
  parallelism: %d
  backoffLimitPerIndex: %d
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: forge
          image: %s
          command: [%s]
          args:
`, yamlString(cfg.JobName), n, n, EmitRetries, yamlString(cfg.Image), yamlString(k8sArg(argv[0])))
	for _, a := range argv[1:] {
		fmt.Fprintf(&b, "            - %s\n", yamlString(k8sArg(a)))
	}
	cpu, mem := yamlString(strconv.Itoa(cfg.CPUs)), yamlString(memory(cfg.Memory, "i"))
	fmt.Fprintf(&b, `          env:
            # The job controller sets this too; it is written out because args use it.
            - name: JOB_COMPLETION_INDEX
              valueFrom:
                fieldRef:
                  fieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']"
          resources:
            # The CPU limit sets Go's GOMAXPROCS, so forge's workers match the request.
            requests: {cpu: %s, memory: %s}
            limits: {cpu: %s, memory: %s}
          volumeMounts:
            - name: data
              mountPath: %s
      volumes:
        - name: data
          persistentVolumeClaim:
            claimName: %s
`, cpu, mem, cpu, mem, yamlString(cfg.Mount), yamlString(cfg.VolumeClaim))
	return b.String()
}

// k8sArg is one argument as the kubelet's expansion reads it: '$'
// doubled (its escape), the index as $(JOB_COMPLETION_INDEX).
func k8sArg(a string) string {
	return strings.ReplaceAll(strings.ReplaceAll(a, "$", "$$"), emitIndex, "$(JOB_COMPLETION_INDEX)")
}

// yamlString is s as a YAML double-quoted scalar (JSON's string escapes
// are a subset of YAML's).
func yamlString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// slurmScript writes the job-array script. The index is the shell's
// "${SLURM_ARRAY_TASK_ID}", given as the shard's I in --shard and --out
// alike, so the two cannot disagree.
func slurmScript(cfg EmitConfig, argv []string) string {
	var b strings.Builder
	n := cfg.Shards
	out := cfg.Sweep.Out
	fmt.Fprintf(&b, `#!/bin/bash
# forge sweep as a Slurm job array of %d tasks: task I measures shard I/%d of the sweep
# and writes %s
# Written by forge %s (forge sweep --emit %s); nothing was measured or read to write it.
#
# Submit it:      sbatch FILE.sbatch
# Re-run task 3:  sbatch --array=3 FILE.sbatch   (it resumes from its .partial file)
# Logs:           %s-JOBID_I.log in the directory you submit from, which is also where
#                 relative paths below are taken from.
# When every task has finished, merge the shards (merge checks that every index 0..%d is
# there once and complete, and that all measured the same model, trace rows, units,
# candidates and quantizer settings):
#   forge sweep merge --out %s %s
#SBATCH --job-name=%s
#SBATCH --array=0-%d
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=%d
#SBATCH --mem=%s
`, n, n, shardOut(out, "I"), Version, EmitSlurm, cfg.JobName, n-1,
		shellWord(out, ""), shellWord(shardOut(out, emitIndex), "*"),
		cfg.JobName, n-1, cfg.CPUs, memory(cfg.Memory, ""))
	if cfg.Time != "" {
		fmt.Fprintf(&b, "#SBATCH --time=%s\n", cfg.Time)
	}
	fmt.Fprintf(&b, "#SBATCH --output=%s-%%A_%%a.log\n\nset -eu\nexec", cfg.JobName)
	for i, a := range argv {
		if i > 0 && strings.HasPrefix(a, "-") {
			b.WriteString(" \\\n ")
		}
		b.WriteString(" " + shellWord(a, `"${SLURM_ARRAY_TASK_ID}"`))
	}
	b.WriteString("\n")
	return b.String()
}

// shellWord is a as one POSIX shell word, with each index placeholder
// replaced by index (inserted as it is, unquoted): the rest is bare
// when it holds only characters the shell never treats specially, else
// in single quotes (a quote inside is closed, escaped and reopened).
func shellWord(a, index string) string {
	parts := strings.Split(a, emitIndex)
	for i, p := range parts {
		if p == "" && len(parts) > 1 {
			continue
		}
		parts[i] = shellQuote(p)
	}
	return strings.Join(parts, index)
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=,+@%", r))
	}) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// memory writes n bytes as whole GiB or MiB (rounded up), with suffix
// after the unit letter: "i" for Kubernetes (64Gi), "" for Slurm, whose
// G and M are binary (64G).
func memory(n int64, suffix string) string {
	if n%(1<<30) == 0 {
		return strconv.FormatInt(n>>30, 10) + "G" + suffix
	}
	return strconv.FormatInt((n+1<<20-1)>>20, 10) + "M" + suffix
}
