package source

import (
	"fmt"
	"io"

	"forge/bundle"
	"forge/checkpoint"
	"forge/model"
)

// Source is a model.Source that must be closed: a *bundle.Bundle, a
// *checkpoint.Checkpoint or an *Ablated.
type Source interface {
	model.Source
	io.Closer
}

// Open opens dir as a forge bundle (it has forge.json) or else as a
// Hugging Face checkpoint (OpenCheckpoint).
func Open(dir string) (Source, error) {
	if bundle.IsBundle(dir) {
		return bundle.Open(dir)
	}
	return OpenCheckpoint(dir)
}

// OpenCheckpoint opens dir as a Hugging Face checkpoint, saying what it is
// instead when it is a forge bundle ("forge dequantize turns it into one")
// or the remains of one (bundle.Incomplete's reason).
func OpenCheckpoint(dir string) (*checkpoint.Checkpoint, error) {
	if bundle.IsBundle(dir) {
		return nil, fmt.Errorf("%s is a forge bundle, not a Hugging Face checkpoint (forge dequantize turns it into one)", dir)
	}
	if reason, ok := bundle.Incomplete(dir); ok {
		return nil, fmt.Errorf("%s has no %s: %s", dir, bundle.ManifestName, reason)
	}
	return checkpoint.Open(dir)
}

// Load opens dir (Open) and loads the model; close the returned Source when
// done with the model. On error nothing is left open.
func Load(dir string) (*model.Model, Source, error) {
	src, err := Open(dir)
	if err != nil {
		return nil, nil, err
	}
	m, err := model.Load(src)
	if err != nil {
		src.Close()
		return nil, nil, fmt.Errorf("model %s: %w", dir, err)
	}
	return m, src, nil
}
