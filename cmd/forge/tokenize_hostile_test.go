package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"forge/tokenizer"
)

// Hostile inputs to tokenize, detokenize and template, through the binary: the paths a server
// will feed from the network must neither hang nor blow up nor disagree with themselves.

// runIn runs the binary with stdin read from the file in (or empty), returning stdout, stderr
// and whether it exited 0.
func runIn(t *testing.T, in string, args ...string) (stdout, stderr string, ok bool) {
	t.Helper()
	cmd := exec.Command(forgeBin, args...)
	if in != "" {
		f, err := os.Open(in)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cmd.Stdin = f
	}
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if _, exit := err.(*exec.ExitError); err != nil && !exit {
		t.Fatal(err)
	}
	return o.String(), e.String(), err == nil
}

// peakRSS runs the binary with stdin read from the file in and returns its output and its
// peak resident memory in KiB: Linux's VmHWM, read while the process blocks writing an output
// larger than the pipe's buffer, after its encoding. (The rusage of a finished child will not
// do: it counts the memory of the test process that started it.)
func peakRSS(t *testing.T, in string, args ...string) (string, int64) {
	t.Helper()
	f, err := os.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(forgeBin, args...)
	var stderr bytes.Buffer
	cmd.Stdin, cmd.Stderr = f, &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	first := make([]byte, 1)
	if _, err := io.ReadFull(stdout, first); err != nil {
		cmd.Wait()
		t.Fatalf("%v: %s", err, stderr.String())
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
	rest, _ := io.ReadAll(stdout)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	if err != nil {
		t.Fatal(err)
	}
	var hwm int64
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			hwm, err = strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(v, "kB")), 10, 64)
		}
	}
	if hwm == 0 || err != nil {
		t.Fatalf("no VmHWM in /proc/%d/status: %v", cmd.Process.Pid, err)
	}
	return string(first) + string(rest), hwm
}

func writeTemp(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestTokenizeLongWordMemory encodes 1 MB and 4 MB without a space (random letters, one
// letter repeated) from stdin: the ids must be the library's, and the peak memory may grow by
// at most 12 bytes for each byte of input more (measured 9.8: the input once, 4 bytes a byte of
// symbol ids, 4 of pair ranks, 0.75 of block lists; the ids stream out). Before the linear
// merge it grew by about 37.
func TestTokenizeLongWordMemory(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("peak memory is read from Linux's /proc/PID/status")
	}
	tok, err := tokenizer.Load(tiny)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 4<<20)
	for i := range random {
		random[i] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"[r.IntN(52)]
	}
	for name, text := range map[string][]byte{"random letters": random, "one letter": bytes.Repeat([]byte("a"), 4<<20)} {
		var rss [2]int64
		for i, n := range []int{1 << 20, 4 << 20} {
			out, peak := peakRSS(t, writeTemp(t, "in.txt", text[:n]), "tokenize", "--model", tiny, "-")
			var ids []int
			if err := json.Unmarshal([]byte(out), &ids); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if !slices.Equal(ids, tok.Encode(string(text[:n]))) {
				t.Errorf("%s: the binary's %d ids differ from Encode's", name, len(ids))
			}
			rss[i] = peak
		}
		growth := float64(rss[1]-rss[0]) * 1024 / (3 << 20)
		t.Logf("%s: peak RSS %d KiB for 1 MB, %d KiB for 4 MB: %.1f bytes a byte", name, rss[0], rss[1], growth)
		if growth > 12 {
			t.Errorf("%s: peak RSS grew by %.1f bytes a byte of input, want at most 12", name, growth)
		}
	}
}

// TestTokenizeInvalidUTF8 gives the same bytes as the argument and on stdin (and as a JSON
// line): valid UTF-8 encodes the same both ways; invalid UTF-8 is refused both ways with the
// byte offset of the first bad sequence, as tokenizers' str cannot hold it.
func TestTokenizeInvalidUTF8(t *testing.T) {
	valid := "héllo, 世界 😀"
	viaArg, stderr, ok := runIn(t, "", "tokenize", "--model", tiny, valid)
	viaStdin, stderr2, ok2 := runIn(t, writeTemp(t, "v.txt", []byte(valid)), "tokenize", "--model", tiny, "-")
	line, _ := json.Marshal(valid)
	viaJSONL, stderr3, ok3 := runIn(t, writeTemp(t, "v.jsonl", append(line, '\n')), "tokenize", "--model", tiny, "--jsonl")
	if !ok || !ok2 || !ok3 || viaArg != viaStdin || viaArg != viaJSONL {
		t.Errorf("valid text: argument %q (%s), stdin %q (%s), jsonl %q (%s)", viaArg, stderr, viaStdin, stderr2, viaJSONL, stderr3)
	}
	bad := "ab\xffc\xc3"
	for _, c := range []struct {
		name, in string
		args     []string
		want     string
	}{
		{"argument", "", []string{"tokenize", "--model", tiny, bad}, "argument 4: byte offset 2 (ff)"},
		{"stdin", writeTemp(t, "b.txt", []byte(bad)), []string{"tokenize", "--model", tiny, "-"}, "stdin: byte offset 2 (ff)"},
		{"jsonl raw byte", writeTemp(t, "b.jsonl", []byte("\"ok\"\n\""+bad+"\"\n")), []string{"tokenize", "--model", tiny, "--jsonl"}, "stdin line 2: byte offset 3 (ff)"},
		{"jsonl lone surrogate", writeTemp(t, "s.jsonl", []byte(`"a\\udcff \ud83d\ude00 \udcff"`+"\n")), []string{"tokenize", "--model", tiny, "--jsonl"}, `stdin line 1: byte offset 23: unpaired surrogate escape \udcff`},
		{"detokenize argument", "", []string{"detokenize", "--model", tiny, "[1,\xff2]"}, "argument 4: byte offset 3 (ff)"},
	} {
		out, stderr, ok := runIn(t, c.in, c.args...)
		if ok || out != "" && c.name != "jsonl raw byte" {
			t.Errorf("%s: exit 0 or ids printed: %q", c.name, out)
		}
		if !strings.Contains(stderr, c.want) || !strings.Contains(stderr, "not valid UTF-8") {
			t.Errorf("%s: error %q, want it to contain %q", c.name, stderr, c.want)
		}
	}
}

// TestTemplateHostile: deeply nested or oversized messages are refused, naming the bound,
// before rendering (whose cost is quadratic in depth: 30,000 levels took seconds, 100,000
// minutes); the deepest allowed nesting still renders.
func TestTemplateHostile(t *testing.T) {
	nested := func(levels int) []byte { // messages (1) and a message (2) hold content nested levels-2 deep
		return []byte(`[{"role":"user","content":` + strings.Repeat("[", levels-2) + `"x"` + strings.Repeat("]", levels-2) + `}]`)
	}
	big := []byte(`[{"role":"user","content":"` + strings.Repeat("x", tokenizer.DefaultChatMaxBytes) + `"}]`)
	for _, c := range []struct {
		name string
		msgs []byte
		want string
	}{
		{"30000 levels", nested(30000), "messages nest deeper than 64 levels at byte offset 88 (ChatOptions.MaxDepth)"},
		{"65 levels", nested(65), "messages nest deeper than 64 levels at byte offset 88"},
		{"over 16 MiB", big, "over 16777216 bytes"},
	} {
		_, stderr, ok := runIn(t, "", "template", "--model", tiny, "--messages", writeTemp(t, "m.json", c.msgs))
		if ok || !strings.Contains(stderr, c.want) || !strings.Contains(stderr, "input over a limit") {
			t.Errorf("%s: exit 0 or error %q, want it to contain %q", c.name, stderr, c.want)
		}
	}
	out, stderr, ok := runIn(t, "", "template", "--model", tiny, "--messages", writeTemp(t, "m.json", nested(64)))
	if !ok || !strings.Contains(out, strings.Repeat("[", 62)+"'x'") {
		t.Errorf("64 levels: %q %s", out, stderr)
	}
}
