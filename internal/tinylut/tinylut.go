package tinylut

import (
	"fmt"

	"forge/checkpoint"
	"forge/lut"
	"forge/model"
	"forge/quant"
	"forge/tensor"
)

// Load opens the checkpoint in dir with every quantizable matrix rounded
// to LUT4 per-tensor + pcs. The checkpoint stays open for the process: the
// float matrices (embeddings, in_proj_a/b) read its mapped file.
func Load(dir string) (*model.Model, error) {
	ck, err := checkpoint.Open(dir)
	if err != nil {
		return nil, err
	}
	return model.Load(Source{ck})
}

// Source is a checkpoint whose quantizable matrices come back as LUT4
// matrices.
type Source struct{ *checkpoint.Checkpoint }

// Linear returns the checkpoint's matrix name, rounded to LUT4 when it is
// quantizable.
func (s Source) Linear(name string) (model.Linear, error) {
	l, err := s.Checkpoint.Linear(name)
	spec, _ := model.Lookup(name)
	if err != nil || !spec.Quantizable {
		return l, err
	}
	r, ok := l.(model.Rower)
	if !ok {
		return nil, fmt.Errorf("%s: %T cannot be read by rows", name, l)
	}
	out, in := r.Dims()
	w := tensor.New(out, in)
	for o := range out {
		r.Row(o, w.Row(o))
	}
	f, err := lut.ParseFormat("LUT4 per-tensor + pcs")
	if err != nil {
		return nil, err
	}
	return quant.RTN(w, f, quant.Options{})
}
