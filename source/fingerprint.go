package source

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"forge/bundle"
	"forge/checkpoint"
)

// Kinds of model Fingerprint reports.
const (
	KindCheckpoint = "checkpoint"
	KindBundle     = "bundle"
)

// Fingerprint identifies a model as traces and llama.cpp-mode bases record
// it: kind "checkpoint" with checkpoint.Fingerprint (the SHA-256 of
// config.json and the safetensors headers: architecture and tensor layout),
// or kind "bundle" with the hex SHA-256 of the bundle's forge.json, which
// lists the SHA-256 of every file. fp is 64 hex digits either way, without
// a prefix; the kind is recorded beside it (a trace's model_kind and
// fingerprint, a base's model_kind and model_fingerprint). Bases written
// before this was the one definition spelled a bundle's "bundle:" + digest
// with no model_kind; lcpp.Header.Model reads both spellings. Any other
// source (an Ablated) is an error: it is no one model.
func Fingerprint(src Source) (kind, fp string, err error) {
	switch s := src.(type) {
	case *checkpoint.Checkpoint:
		fp, err := s.Fingerprint()
		return KindCheckpoint, fp, err
	case *bundle.Bundle:
		raw, err := os.ReadFile(filepath.Join(s.Dir(), bundle.ManifestName))
		if err != nil {
			return "", "", err
		}
		sum := sha256.Sum256(raw)
		return KindBundle, hex.EncodeToString(sum[:]), nil
	}
	return "", "", fmt.Errorf("fingerprint: unknown source %T", src)
}

// Origin is the fingerprint of the checkpoint src was made from: a
// checkpoint's own Fingerprint, or the one a bundle's manifest records of
// its source checkpoint; "" for any other source. Comparing it with a
// trace's checkpoint fingerprint tells whether a candidate was quantized
// from the trace's reference.
func Origin(src Source) (string, error) {
	switch s := src.(type) {
	case *checkpoint.Checkpoint:
		return s.Fingerprint()
	case *bundle.Bundle:
		return s.Manifest().Source.Fingerprint, nil
	}
	return "", nil
}
