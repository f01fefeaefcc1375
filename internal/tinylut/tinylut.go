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
func Load(dir string) (*model.Model, error) { return LoadFormat(dir, "LUT4 per-tensor + pcs") }

// LoadFormat is Load with the quantizable matrices rounded to format (a
// lut.ParseFormat spelling) by RTN.
func LoadFormat(dir, format string) (*model.Model, error) {
	ck, err := checkpoint.Open(dir)
	if err != nil {
		return nil, err
	}
	return model.Load(Source{ck, format})
}

// Source is a checkpoint whose quantizable matrices come back rounded to
// Format ("" means LUT4 per-tensor + pcs).
type Source struct {
	*checkpoint.Checkpoint
	Format string
}

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
	format := s.Format
	if format == "" {
		format = "LUT4 per-tensor + pcs"
	}
	f, err := lut.ParseFormat(format)
	if err != nil {
		return nil, err
	}
	return quant.RTN(w, f, quant.Options{})
}
