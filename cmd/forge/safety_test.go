package main

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"forge/tensor"
)

// Issue 10, through the binary as a user meets it: no command may write
// over its inputs, replace what forge did not write, leave temporaries
// behind when stopped, or answer an absurd request with a stack trace.

// copyTree copies a directory of regular files (a model) to dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// treeHash is the SHA-256 of every file under root (names and contents).
func treeHash(t *testing.T, root string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		io.WriteString(h, p+"\x00")
		_, err = io.Copy(h, f)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// safetyFixture is a scratch directory with a model, its inputs and forge
// outputs made from them.
type safetyFixture struct {
	dir, model, tokens, text, trace, bundle, report string
}

func newSafetyFixture(t *testing.T) *safetyFixture {
	t.Helper()
	dir := t.TempDir()
	f := &safetyFixture{dir: dir, model: filepath.Join(dir, "model"), tokens: filepath.Join(dir, "tokens.json"),
		text: filepath.Join(dir, "text.txt"), trace: filepath.Join(dir, "ref.trace"), bundle: filepath.Join(dir, "bundle"),
		report: filepath.Join(dir, "report.json")}
	copyTree(t, tiny, f.model)
	os.WriteFile(f.tokens, []byte(`[1116, 2239, 275, 1030, 12, 99]`), 0o644)
	code, err := os.ReadFile(filepath.Join("..", "..", "testdata", "calib", "code.txt"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(f.text, code, 0o644)
	for _, args := range [][]string{
		{"trace", "--model", f.model, "--data", f.text + ":2", "--ctx", "32", "--out", f.trace},
		{"quantize", "--model", f.model, "--out", f.bundle, "--format", "LUT4 per-tensor + pcs"},
		{"eval", "--trace", f.trace, "--model", f.bundle, "--json", f.report},
	} {
		if out, err := run(t, args...); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	return f
}

// TestNoOutputOverInputs: every command that writes refuses an output that
// is, holds or lies inside one of its inputs — with --overwrite too — and
// leaves every input byte for byte as it was.
func TestNoOutputOverInputs(t *testing.T) {
	f := newSafetyFixture(t)
	modelFile := filepath.Join(f.model, "model.safetensors")
	cases := []struct {
		name string
		args []string
	}{
		{"quantize onto the model", []string{"quantize", "--model", f.model, "--out", f.model, "--format", "bf16"}},
		{"quantize into the model", []string{"quantize", "--model", f.model, "--out", filepath.Join(f.model, "q"), "--format", "bf16"}},
		{"quantize around the model", []string{"quantize", "--model", f.model, "--out", f.dir, "--format", "bf16"}},
		{"quantize onto its calibration file", []string{"quantize", "--model", f.model, "--out", f.text, "--format", "LUT4 per-tensor + pcs", "--aw", "--calib", f.text + ":2", "--ctx", "32"}},
		{"logits onto the weights", []string{"logits", "--model", f.model, "--tokens", f.tokens, "--out", modelFile}},
		{"logits onto its tokens", []string{"logits", "--model", f.model, "--tokens", f.tokens, "--out", f.tokens}},
		{"trace onto its data", []string{"trace", "--model", f.model, "--data", f.text + ":2", "--ctx", "32", "--out", f.text}},
		{"trace into the model", []string{"trace", "--model", f.model, "--data", f.text + ":2", "--ctx", "32", "--out", filepath.Join(f.model, "t.trace")}},
		{"lcpp trace onto its data", []string{"trace", "lcpp", "--model", f.model, "--data", f.text, "--ctx", "16", "--out", f.text}},
		{"eval KL onto the trace", []string{"eval", "--trace", f.trace, "--model", f.bundle, "--kl-out", f.trace}},
		{"eval JSON onto the trace", []string{"eval", "--trace", f.trace, "--model", f.bundle, "--json", f.trace}},
		{"eval Markdown into the candidate", []string{"eval", "--trace", f.trace, "--model", f.bundle, "--markdown", filepath.Join(f.bundle, "config.json")}},
		{"eval JSON into the reference", []string{"eval", "ablation", "--trace", f.trace, "--model", f.bundle, "--reference", f.model, "--json", filepath.Join(f.model, "r.json")}},
		{"dequantize onto the bundle", []string{"dequantize", f.bundle, "--out", f.bundle}},
		{"dequantize into the bundle", []string{"dequantize", f.bundle, "--out", filepath.Join(f.bundle, "hf")}},
		{"compare onto a report", []string{"eval", "compare", filepath.Join(f.dir, "compare.md")}},
	}
	rep, _ := os.ReadFile(f.report)
	os.WriteFile(filepath.Join(f.dir, "compare.md"), rep, 0o644) // an input named like compare's output
	before := treeHash(t, f.dir)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := run(t, append(c.args, "--overwrite")...)
			if err == nil {
				t.Fatalf("exit 0:\n%s", out)
			}
			if !strings.Contains(out, "refusing to write over an input") {
				t.Errorf("output does not say why:\n%s", out)
			}
			if h := treeHash(t, f.dir); h != before {
				t.Fatalf("the files changed")
			}
		})
	}
}

// TestOverwriteOnlyForgeOutputs: an existing output is replaced only with
// --overwrite, and then only when forge wrote it; working directories that
// hold someone else's files are never removed.
func TestOverwriteOnlyForgeOutputs(t *testing.T) {
	f := newSafetyFixture(t)
	user := filepath.Join(f.dir, "user")
	os.MkdirAll(user, 0o755)
	os.WriteFile(filepath.Join(user, "thesis.tex"), []byte("years of work"), 0o644)
	plain := filepath.Join(f.dir, "plain.safetensors")
	b, _ := os.ReadFile(filepath.Join(f.model, "model.safetensors")) // a safetensors file forge did not write
	os.WriteFile(plain, b, 0o644)
	userJSON := filepath.Join(f.dir, "settings.json")
	os.WriteFile(userJSON, []byte(`{"theme": "dark"}`), 0o644)
	q := func(out string, extra ...string) []string {
		return append([]string{"quantize", "--model", f.model, "--out", out, "--format", "LUT4 per-tensor + pcs"}, extra...)
	}
	logits := func(out string, extra ...string) []string {
		return append([]string{"logits", "--model", f.model, "--tokens", f.tokens, "--out", out}, extra...)
	}
	workUser, partialUser := filepath.Join(f.dir, "w"), filepath.Join(f.dir, "p")
	os.MkdirAll(workUser+".work", 0o755)
	os.WriteFile(filepath.Join(workUser+".work", "keep.txt"), []byte("mine"), 0o644)
	os.MkdirAll(partialUser+".partial", 0o755)
	os.WriteFile(filepath.Join(partialUser+".partial", "keep.txt"), []byte("mine"), 0o644)
	refused := []struct {
		name, want string
		args       []string
	}{
		{"a directory of the user's", "forge did not write (thesis.tex)", q(user, "--overwrite")},
		{"a plain file where a bundle goes", "not a directory forge wrote", q(plain, "--overwrite")},
		{"an existing bundle without --overwrite", "already exists", q(f.bundle)},
		{"a safetensors file forge did not write", "not a file forge wrote", logits(plain, "--overwrite")},
		{"an existing file without --overwrite", "already exists", logits(plain)},
		{"a JSON file of the user's", "not a file forge wrote", []string{"eval", "--trace", f.trace, "--model", f.bundle, "--json", userJSON, "--overwrite"}},
		{"an existing report without --overwrite", "already exists", []string{"eval", "--trace", f.trace, "--model", f.bundle, "--json", f.report}},
		{"an existing trace without --overwrite", "already exists", []string{"trace", "--model", f.model, "--data", f.text + ":2", "--ctx", "32", "--out", f.trace}},
		{"a directory where the trace goes", "already exists", []string{"trace", "--model", f.model, "--data", f.text + ":2", "--ctx", "32", "--out", user}},
		{"OUT.work of the user's", "forge did not write (keep.txt)", q(workUser)},
		{"OUT.partial of the user's", "forge did not write (keep.txt)", q(partialUser)},
		{"synth onto an existing directory", "already exists", []string{"synth", "--config", filepath.Join(f.model, "config.json"), "--out", user}},
	}
	before := treeHash(t, f.dir)
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			out, err := run(t, c.args...)
			if err == nil || !strings.Contains(out, c.want) {
				t.Fatalf("%v, want a refusal saying %q:\n%s", err, c.want, out)
			}
			if strings.Contains(out, "elapsed") { // a progress line
				t.Errorf("work started before the refusal:\n%s", out)
			}
			if h := treeHash(t, f.dir); h != before {
				t.Fatal("the files changed")
			}
		})
	}
	// forge's own outputs are replaced with --overwrite.
	for _, args := range [][]string{q(f.bundle, "--overwrite"), logits(filepath.Join(f.dir, "l.safetensors")), logits(filepath.Join(f.dir, "l.safetensors"), "--overwrite"),
		{"eval", "--trace", f.trace, "--model", f.bundle, "--json", f.report, "--overwrite"}} {
		if out, err := run(t, args...); err != nil {
			t.Errorf("%v: %v\n%s", args, err, out)
		}
	}
}

// forgeTemps lists forge's temporary files and directories under dir.
func forgeTemps(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && (strings.Contains(d.Name(), ".forge-tmp-") || strings.HasSuffix(d.Name(), ".partial")) {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// TestSignalsCleanUp: SIGTERM (as SIGINT) stops trace, logits and synth
// soon, with exit status 130 and a message, leaving neither the output
// nor any temporary file; a second signal is not needed.
func TestSignalsCleanUp(t *testing.T) {
	f := newSafetyFixture(t)
	long := filepath.Join(f.dir, "long.json")
	var seqs []string
	for range 8 {
		seqs = append(seqs, "["+strings.Repeat("17, ", 3000)+"17]")
	}
	os.WriteFile(long, []byte("["+strings.Join(seqs, ",")+"]"), 0o644)
	synthCfg := filepath.Join(f.dir, "big-config.json")
	cfg, _ := os.ReadFile(filepath.Join(f.model, "config.json"))
	big := strings.NewReplacer(`"hidden_size": 256`, `"hidden_size": 1024`, `"intermediate_size": 768`, `"intermediate_size": 4096`,
		`"vocab_size": 4160`, `"vocab_size": 32000`).Replace(string(cfg))
	os.WriteFile(synthCfg, []byte(big), 0o644)
	for _, c := range []struct {
		name string
		args []string
	}{
		{"logits", []string{"logits", "--model", f.model, "--tokens", long, "--decode", "--out", filepath.Join(f.dir, "out", "l.safetensors")}},
		{"trace", []string{"trace", "--model", f.model, "--data", f.text, "--ctx", "64", "--out", filepath.Join(f.dir, "out", "t.trace")}},
		{"synth", []string{"synth", "--config", synthCfg, "--out", filepath.Join(f.dir, "out", "synth")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			outDir := filepath.Join(f.dir, "out")
			os.RemoveAll(outDir)
			os.MkdirAll(outDir, 0o755)
			cmd := exec.Command(forgeBin, c.args...)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Wait until it is writing (its temporary exists), then stop it.
			deadline := time.Now().Add(60 * time.Second)
			for len(forgeTemps(t, outDir)) == 0 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			if len(forgeTemps(t, outDir)) == 0 {
				cmd.Process.Kill()
				t.Fatalf("never started writing:\n%s", stderr.String())
			}
			if env, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/environ"); err == nil && tensor.PreemptDirtiesUpper() &&
				!strings.Contains(string(env), "asyncpreemptoff=1") {
				t.Error("forge runs with asynchronous preemption, which leaves vector registers dirty here")
			}
			cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			var err error
			select {
			case err = <-done:
			case <-time.After(60 * time.Second): // a hang, not a timing requirement
				cmd.Process.Kill()
				t.Fatalf("still running a minute after SIGTERM:\n%s", stderr.String())
			}
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.ExitCode() != 130 || !strings.Contains(stderr.String(), "interrupted") {
				t.Errorf("exit %v, stderr:\n%s", err, stderr.String())
			}
			ents, _ := os.ReadDir(outDir)
			for _, e := range ents {
				t.Errorf("left behind: %s", e.Name())
			}
		})
	}
}

// TestStaleTemporaries: a temporary left by a forge process that was
// killed (SIGKILL) is removed by the next write to the same output; one of
// a live process is left alone.
func TestStaleTemporaries(t *testing.T) {
	f := newSafetyFixture(t)
	out := filepath.Join(f.dir, "l.safetensors")
	dead := exec.Command("true")
	dead.Run()
	stale := out + ".forge-tmp-" + strconv.Itoa(dead.Process.Pid) + "-123"
	live := out + ".forge-tmp-" + strconv.Itoa(os.Getpid()) + "-456"
	os.WriteFile(stale, make([]byte, 1<<20), 0o600)
	os.WriteFile(live, []byte("x"), 0o600)
	if o, err := run(t, "logits", "--model", f.model, "--tokens", f.tokens, "--out", out); err != nil {
		t.Fatal(err, o)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Error("the stale temporary is still there")
	}
	if _, err := os.Stat(live); err != nil {
		t.Error("the temporary of a live process was removed")
	}
}
