package outpath

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestDisjoint(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "models", "tiny")
	write(t, filepath.Join(model, "model.safetensors"), "x")
	write(t, filepath.Join(dir, "calib.txt"), "text")
	if err := os.Symlink(model, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	ins := []string{model, filepath.Join(dir, "calib.txt")}
	cases := []struct {
		name, out string
		bad       bool
	}{
		{"the model itself", model, true},
		{"the model through ..", filepath.Join(model, "..", "tiny"), true},
		{"the model through a link", filepath.Join(dir, "link"), true},
		{"a file inside the model", filepath.Join(model, "model.safetensors"), true},
		{"a new file inside the model, through a link", filepath.Join(dir, "link", "new.safetensors"), true},
		{"a directory holding the model", filepath.Join(dir, "models"), true},
		{"the calibration file", filepath.Join(dir, "calib.txt"), true},
		{"a sibling", filepath.Join(dir, "models", "tiny-lut4"), false},
		{"a prefix-sharing name", model + "2", false},
		{"elsewhere", filepath.Join(dir, "out", "b"), false},
	}
	for _, c := range cases {
		err := Disjoint([]string{c.out}, ins)
		if c.bad != (err != nil) {
			t.Errorf("%s: Disjoint(%s) = %v, want error %v", c.name, c.out, err, c.bad)
		}
		if err != nil && (!errors.Is(err, ErrOverlap) || !strings.Contains(err.Error(), c.out)) {
			t.Errorf("%s: error %q does not name the output or wrap ErrOverlap", c.name, err)
		}
	}
}

func TestCheckFiles(t *testing.T) {
	dir := t.TempDir()
	user := filepath.Join(dir, "notes.json")
	write(t, user, `{"mine": true}`)
	report := filepath.Join(dir, "report.json")
	write(t, report, `{"forge_version": "x", "mean_kl": 0.1}`)
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	cases := []struct {
		name      string
		t         Target
		overwrite bool
		want      error
	}{
		{"new file", Target{Path: filepath.Join(dir, "new.json"), Owned: ForgeJSON}, false, nil},
		{"missing parent", Target{Path: filepath.Join(dir, "nope", "new.json"), Owned: ForgeJSON}, false, errAny},
		{"existing, no overwrite", Target{Path: report, Owned: ForgeJSON}, false, ErrExists},
		{"forge's own, overwrite", Target{Path: report, Owned: ForgeJSON}, true, nil},
		{"the user's file, overwrite", Target{Path: user, Owned: ForgeJSON}, true, ErrNotOwned},
		{"a directory where a file goes", Target{Path: sub, Owned: ForgeJSON}, true, ErrNotOwned},
		{"a file where a directory goes", Target{Path: report, Dir: true}, true, ErrNotOwned},
		{"an empty directory", Target{Path: sub, Dir: true}, false, nil},
	}
	for _, c := range cases {
		err := Check(c.t, c.overwrite)
		switch {
		case c.want == nil && err != nil, c.want != nil && err == nil:
			t.Errorf("%s: Check = %v, want %v", c.name, err, c.want)
		case c.want != nil && c.want != errAny && !errors.Is(err, c.want):
			t.Errorf("%s: Check = %v, want %v", c.name, err, c.want)
		}
	}
}

var errAny = errors.New("any error")

func TestDirectoryOwnership(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	// A directory of the user's: never replaced, never removed.
	write(t, filepath.Join(out, "thesis.tex"), "years of work")
	if err := Check(Target{Path: out, Dir: true}, true); !errors.Is(err, ErrNotOwned) || !strings.Contains(err.Error(), "thesis.tex") {
		t.Errorf("user directory: %v", err)
	}
	if err := RemoveDir(out, "partial"); !errors.Is(err, ErrNotOwned) {
		t.Errorf("RemoveDir of a user directory: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, "thesis.tex")); err != nil {
		t.Fatal("the user's file is gone")
	}
	// forge's own output: replaceable, but not once the user added a file.
	mine := filepath.Join(dir, "mine")
	if err := MakeDir(mine, "checkpoint", "test"); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(mine, "model.safetensors"), "w")
	if err := Seal(mine, "checkpoint", "test"); err != nil {
		t.Fatal(err)
	}
	if err := Check(Target{Path: mine, Dir: true}, true); err != nil {
		t.Errorf("forge's own directory: %v", err)
	}
	write(t, filepath.Join(mine, "added-by-user.txt"), "x")
	if err := Check(Target{Path: mine, Dir: true}, true); !errors.Is(err, ErrNotOwned) || !strings.Contains(err.Error(), "added-by-user.txt") {
		t.Errorf("forge directory with a user file: %v", err)
	}
	// A working directory whose writer is alive (this process counts as
	// the writer only for itself) is removed; one of a live other process is not.
	work := filepath.Join(dir, "out.work")
	if err := MakeDir(work, "quantize-work", "test"); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarker(work, Marker{Kind: "quantize-work", PID: os.Getppid()}); err != nil {
		t.Fatal(err)
	}
	if err := RemoveDir(work, "quantize-work"); err == nil || !strings.Contains(err.Error(), "another forge process") {
		t.Errorf("RemoveDir of a directory a live process writes: %v", err)
	}
	if err := WriteMarker(work, Marker{Kind: "quantize-work"}); err != nil {
		t.Fatal(err)
	}
	if err := RemoveDir(work, "partial"); !errors.Is(err, ErrNotOwned) {
		t.Errorf("RemoveDir of another kind: %v", err)
	}
	if err := RemoveDir(work, "quantize-work"); err != nil {
		t.Errorf("RemoveDir of forge's own: %v", err)
	}
}

func TestReplaceDir(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	write(t, filepath.Join(out, "a"), "old")
	tmp := filepath.Join(dir, "out.partial")
	write(t, filepath.Join(tmp, "b"), "new")
	if err := ReplaceDir(tmp, out); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, "a")); err == nil {
		t.Error("old content still there")
	}
	if b, _ := os.ReadFile(filepath.Join(out, "b")); string(b) != "new" {
		t.Error("new content missing")
	}
	if _, err := os.Stat(tmp); err == nil {
		t.Error("temporary left behind")
	}
}

func TestRecognisers(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	cases := []struct {
		data string
		fn   func(string) bool
		want bool
	}{
		{"\x93NUMPY\x01\x00", NPY, true},
		{"PK\x03\x04", NPY, false},
		{"\x89PNG\r\n\x1a\nrest", PNG, true},
		{"<?xml version", SVG, true},
		{MarkdownHeader + "| a |", ForgeMarkdown, true},
		{"# my notes", ForgeMarkdown, false},
		{`{"forge_version":"1"}`, ForgeJSON, true},
		{`{"name":"x"}`, ForgeJSON, false},
		{`[1,2]`, ForgeJSON, false},
		{"_logits_\x00", LlamaCppBase, true},
		{"\x10\x00\x00\x00\x00\x00\x00\x00{\"__metadata__\":{}}", ForgeSafetensors, false},
		{"\x29\x00\x00\x00\x00\x00\x00\x00{\"__metadata__\":{\"forge_version\":\"1\"}}   ", ForgeSafetensors, true},
		{"\xff\xff\xff\xff\xff\xff\xff\xff", ForgeSafetensors, false},
	}
	for i, c := range cases {
		write(t, p, c.data)
		if got := c.fn(p); got != c.want {
			t.Errorf("case %d (%q): got %v, want %v", i, c.data, got, c.want)
		}
	}
}
