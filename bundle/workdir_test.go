package bundle

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"forge/internal/outpath"
	"forge/safetensors"
)

// TestWorkDir: a saved matrix loads back with the same arrays, rotation and
// SNRs; a resume with the same identity keeps it, one with another
// identity is refused, a fresh start empties the directory; Close(true)
// removes it.
func TestWorkDir(t *testing.T) {
	out := filepath.Join(t.TempDir(), "b")
	const name = "layers.0.mlp.up_proj.weight"
	wd, err := OpenWork(out, []byte(`{"seed":1}`), WorkOptions{ForgeVersion: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if wd.Dir() != out+".work" {
		t.Errorf("Dir %s", wd.Dir())
	}
	if m, _ := outpath.ReadMarker(wd.Dir()); m.Kind != WorkKind {
		t.Errorf("marker kind %q", m.Kind)
	}
	if _, _, ok, err := wd.Load(name); ok || err != nil {
		t.Fatalf("an empty directory loads %s: %t, %v", name, ok, err)
	}
	m := codecMatrix(t, "LUT4 per-tensor + pcs", 2, true)
	snr := &SNREntry{RTN: 20.5, Method: 22.25, Final: 23}
	if err := wd.Save(name, m, snr); err != nil {
		t.Fatal(err)
	}
	if err := wd.Save("lm_head.weight", codecMatrix(t, "INT8 per-channel", 0, false), nil); err != nil {
		t.Fatal(err)
	}
	if wd.Stored() != 2 || wd.Size() <= 0 {
		t.Errorf("Stored %d, Size %d", wd.Stored(), wd.Size())
	}
	wd.Close(false)

	wd, err = OpenWork(out, []byte(`{"seed":1}`), WorkOptions{Resume: true})
	if err != nil {
		t.Fatal(err)
	}
	got, gotSNR, ok, err := wd.Load(name)
	if err != nil || !ok {
		t.Fatalf("load after resume: %t, %v", ok, err)
	}
	_, want, _ := EncodeMatrix(name, m)
	_, again, _ := EncodeMatrix(name, got)
	for i := range want {
		if !bytes.Equal(want[i].Data, again[i].Data) {
			t.Errorf("%s differs after the round trip", want[i].Name)
		}
	}
	if h := got.Parts().Rotation; h == nil || gotSNR == nil || *gotSNR != *snr {
		t.Errorf("rotation %v, SNRs %+v", h, gotSNR)
	}
	if _, s, ok, err := wd.Load("lm_head.weight"); !ok || err != nil || s != nil {
		t.Errorf("lm_head: %t, %v, SNRs %v (want none)", ok, err, s)
	}
	wd.Close(false)

	if _, err := OpenWork(out, []byte(`{"seed":2}`), WorkOptions{Resume: true}); err == nil || !strings.Contains(err.Error(), "other settings") {
		t.Errorf("resume with another identity: %v", err)
	}
	wd, err = OpenWork(out, []byte(`{"seed":2}`), WorkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if wd.Stored() != 0 {
		t.Errorf("a fresh start kept %d matrices", wd.Stored())
	}
	if err := wd.Close(true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(wd.Dir()); !os.IsNotExist(err) {
		t.Errorf("Close(true) left the directory: %v", err)
	}
}

// TestWorkDirDamaged: a work file with a flipped bit in its arrays, one
// whose recorded facts were edited, and one in the earlier layout (no
// facts key) are removed, reported to Damaged with the reason, and load as
// absent, to be made again.
func TestWorkDirDamaged(t *testing.T) {
	out := filepath.Join(t.TempDir(), "b")
	const name = "layers.0.mlp.down_proj.weight"
	var reported []string
	var reasons []string
	wd, err := OpenWork(out, []byte(`{}`), WorkOptions{Damaged: func(path string, err error) {
		reported, reasons = append(reported, path), append(reasons, err.Error())
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer wd.Close(true)
	m := codecMatrix(t, "LUT4 per-tensor + pcs", 0, false)
	path := filepath.Join(wd.Dir(), name+".safetensors")
	edits := []struct {
		name, reason string
		edit         func()
	}{
		{"flipped bit", "damaged", func() {
			raw, _ := os.ReadFile(path)
			raw[len(raw)-100] ^= 0x10
			os.WriteFile(path, raw, 0o644)
		}},
		{"facts edited", "damaged", func() {
			f, _ := safetensors.Open(path)
			meta := f.Metadata()
			var ts []safetensors.Tensor
			for _, n := range f.Names() {
				info, _ := f.Info(n)
				b, _ := f.Bytes(n)
				ts = append(ts, safetensors.Tensor{Name: n, DType: info.DType, Shape: info.Shape, Data: bytes.Clone(b)})
			}
			f.Close()
			meta[workFacts] = strings.Replace(meta[workFacts], "LUT4", "LUT3", 1)
			safetensors.WriteFile(path, ts, meta)
		}},
		{"earlier layout", "older forge", func() {
			safetensors.WriteFile(path, []safetensors.Tensor{{Name: "idx", DType: safetensors.U8, Shape: []int{1}, Data: []byte{0}}},
				map[string]string{"forge.work": `{"format":"LUT4 per-tensor + pcs"}`, "forge.work.sha256": "00"})
		}},
	}
	for i, e := range edits {
		if err := wd.Save(name, m, nil); err != nil {
			t.Fatal(err)
		}
		e.edit()
		got, _, ok, err := wd.Load(name)
		if ok || err != nil || got != nil {
			t.Errorf("%s: loaded (%t, %v)", e.name, ok, err)
		}
		if len(reported) != i+1 || reported[i] != path || !strings.Contains(reasons[i], e.reason) {
			t.Errorf("%s: reported %q, %q; want %s and a reason naming %q", e.name, reported, reasons, path, e.reason)
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("%s: the file was not removed: %v", e.name, err)
		}
	}
}

// TestWorkDirNotOurs: a directory at OUT.work that forge did not make is
// refused, and left as it was.
func TestWorkDirNotOurs(t *testing.T) {
	out := filepath.Join(t.TempDir(), "b")
	os.MkdirAll(out+".work", 0o755)
	os.WriteFile(filepath.Join(out+".work", "notes.txt"), []byte("mine"), 0o644)
	for _, resume := range []bool{false, true} {
		if _, err := OpenWork(out, []byte(`{}`), WorkOptions{Resume: resume}); err == nil || !strings.Contains(err.Error(), "notes.txt") {
			t.Errorf("resume %t: %v, want a refusal naming notes.txt", resume, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(out+".work", "notes.txt")); err != nil || string(b) != "mine" {
		t.Errorf("the user's file: %q, %v", b, err)
	}
}
