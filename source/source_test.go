package source

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"forge/bundle"
	"forge/checkpoint"
)

// TestOpen: a directory with forge.json opens as a bundle, one without as
// a checkpoint, OpenCheckpoint refuses a bundle saying what it is, and Load
// gives a model whose source is the opened one.
func TestOpen(t *testing.T) {
	b, err := Open(candDir)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, ok := b.(*bundle.Bundle); !ok {
		t.Errorf("%s opened as %T, want a bundle", candDir, b)
	}
	c, err := Open(refDir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, ok := c.(*checkpoint.Checkpoint); !ok {
		t.Errorf("%s opened as %T, want a checkpoint", refDir, c)
	}
	if _, err := OpenCheckpoint(candDir); err == nil || !strings.Contains(err.Error(), "is a forge bundle") {
		t.Errorf("OpenCheckpoint of a bundle: %v", err)
	}
	m, src, err := Load(refDir)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if m.Config().Vocab != 512 {
		t.Errorf("vocab %d, want 512", m.Config().Vocab)
	}
	if _, _, err := Load(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Error("Load of a missing directory succeeded")
	}
}

// TestFingerprint: the one model identity. A checkpoint is its
// checkpoint.Fingerprint, a bundle the SHA-256 of its forge.json, both bare
// 64-digit hex with the kind apart; an ablation is no one model. Origin is
// the checkpoint a model came from: the fixture bundle's manifest names the
// fixture checkpoint, whose own fingerprint is the same digest.
func TestFingerprint(t *testing.T) {
	c, err := Open(refDir)
	if err != nil {
		t.Fatal(err)
	}
	kind, fp, err := Fingerprint(c)
	want, _ := c.(*checkpoint.Checkpoint).Fingerprint()
	if err != nil || kind != KindCheckpoint || fp != want || len(fp) != 64 {
		t.Errorf("checkpoint: %q %q %v; want %q %q", kind, fp, err, KindCheckpoint, want)
	}
	b, err := Open(candDir)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(candDir, bundle.ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(raw)
	kind, fp, err = Fingerprint(b)
	if err != nil || kind != KindBundle || fp != hex.EncodeToString(sum[:]) {
		t.Errorf("bundle: %q %q %v; want %q %x", kind, fp, err, KindBundle, sum)
	}
	bo, err := Origin(b)
	co, err2 := Origin(c)
	if err != nil || err2 != nil || bo != want || co != want {
		t.Errorf("Origin: bundle %q (%v), checkpoint %q (%v); want both %q", bo, err, co, err2, want)
	}
	a, err := NewAblation(c, b, Ablation{Hi: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Fingerprint(a); err == nil {
		t.Error("an ablation has a fingerprint")
	}
	if o, err := Origin(a); o != "" || err != nil {
		t.Errorf("Origin of an ablation: %q, %v", o, err)
	}
	if err := a.Close(); err != nil { // a owns c and b
		t.Error(err)
	}
}
