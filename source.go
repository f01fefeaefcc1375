package forge

import (
	"fmt"
	"io"

	"forge/bundle"
	"forge/checkpoint"
	"forge/model"
)

// source is a model.Source that must be closed.
type source interface {
	model.Source
	io.Closer
}

// openSource opens dir as a forge bundle (it has forge.json) or else as a
// Hugging Face checkpoint.
func openSource(dir string) (source, error) {
	if bundle.IsBundle(dir) {
		return bundle.Open(dir)
	}
	return openCheckpoint(dir)
}

// openCheckpoint opens dir as a Hugging Face checkpoint, saying what it is
// instead when it is a forge bundle or the remains of one.
func openCheckpoint(dir string) (*checkpoint.Checkpoint, error) {
	if bundle.IsBundle(dir) {
		return nil, fmt.Errorf("%s is a forge bundle, not a Hugging Face checkpoint (forge dequantize turns it into one)", dir)
	}
	if reason, ok := bundle.Incomplete(dir); ok {
		return nil, fmt.Errorf("%s has no %s: %s", dir, bundle.ManifestName, reason)
	}
	return checkpoint.Open(dir)
}

// loadModel opens dir and loads the model; close the returned source when
// done with the model.
func loadModel(dir string) (*model.Model, source, error) {
	src, err := openSource(dir)
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
