package calib

import (
	"context"
	"fmt"

	"forge/lut"
	"forge/model"
	"forge/quant"
	"forge/tensor"
)

// Group is a set of Linears that read the same input, quantized together.
type Group struct {
	Layer int      // −1: the head
	Names []string // checkpoint tensor names (model.Slot names)
}

// Groups returns layer li's groups in true-sequential order
// (docs/quantization.md §3): its quantizable matrices by stage
// (model.TensorSpec.Stage) — the mixer input projections (DeltaNet
// in_proj_qkv and in_proj_z, or attention q, k, v), the mixer output
// projection, MLP gate and up, MLP down. DeltaNet's in_proj_a / in_proj_b
// read the first group's input but are never quantized, so they are not
// listed.
func Groups(c model.Config, li int) []Group {
	var g []Group
	for _, t := range model.Tensors(&c) {
		if t.Layer != li || !t.Quantizable {
			continue
		}
		for len(g) <= t.Stage {
			g = append(g, Group{Layer: li})
		}
		g[t.Stage].Names = append(g[t.Stage].Names, t.Name)
	}
	return g
}

// HeadGroup is the head's group, after every layer.
var HeadGroup = Group{Layer: -1, Names: []string{"lm_head.weight"}}

// Stats are the Hessians H = XᵀX/N of one group's input over the
// training rows and over the held-out rows.
type Stats struct {
	Train, Held *quant.Hessian
}

// GroupFunc quantizes one group from its input statistics and returns the
// Linear to store in each of its slots (a missing name keeps its slot).
type GroupFunc func(g Group, st Stats) (map[string]model.Linear, error)

// Runner calibrates a model layer by layer, true sequential: layer ℓ's
// inputs are computed with layers < ℓ already quantized, and within a
// layer each group's inputs with the groups before it already quantized.
// It holds one layer's hidden states for every row ([rows][T][H] float32)
// and one group's Hessians at a time.
type Runner struct {
	Model       *model.Model
	Train, Held [][]int // token rows
	// Skip reports groups that need no statistics (nothing in them is
	// quantized); they are not run.
	Skip func(g Group) bool
	// Rotation, if set, returns the rotation applied to a group's input
	// (nil: none); its Hessians are then of the rotated inputs x·M.
	Rotation func(g Group) lut.Rotation
	// Progress is called after each layer (and the head) with layers done
	// and total (layers + 1).
	Progress func(done, total int)
	// Reconstruct, if set, is called for each layer ≥ from once its
	// groups are quantized (block reconstruction, package recon), with the
	// layer's input rows — the quantized stream, Train rows first — and the
	// outputs the layer should produce for them; it returns the Linears to
	// store in the layer's slots (a missing name keeps its slot).
	Reconstruct func(li int, in, target []tensor.Matrix) (map[string]model.Linear, error)
	// Reference is the unquantized model whose layers make the targets:
	// its outputs on the reference stream (the unquantized model's own
	// hidden states, advanced beside the quantized stream), or with
	// LocalTarget its layer applied to the quantized stream.
	Reference   *model.Model
	LocalTarget bool
}

// Run quantizes layers from..L−1 and then the head, calling fn for each
// group. Layers below from must already hold their quantized matrices in
// the model's slots (a resumed run): their outputs are recomputed, not
// recalibrated. ctx is checked before every row of every group.
func (r *Runner) Run(ctx context.Context, from int, fn GroupFunc) error {
	m := r.Model
	L := len(m.Config().Layers)
	xs := make([]tensor.Matrix, len(r.Train)+len(r.Held))
	for i, row := range r.rows() {
		if err := m.CheckTokens(row); err != nil {
			return fmt.Errorf("calib: row %d: %w", i, err)
		}
		m.Embed(&xs[i], row)
	}
	s := m.NewState()
	var refs []tensor.Matrix // the reference stream
	if r.Reconstruct != nil {
		if r.Reference == nil {
			return fmt.Errorf("calib: reconstruction needs the reference model")
		}
		if !r.LocalTarget {
			refs = make([]tensor.Matrix, len(xs))
			for i := range xs {
				refs[i].Resize(xs[i].Rows, xs[i].Cols)
				copy(refs[i].Data, xs[i].Data)
			}
		}
	}
	for li := range L {
		var target []tensor.Matrix
		if r.Reconstruct != nil {
			var err error
			if target, err = r.targets(ctx, li, li >= from, xs, refs); err != nil {
				return err
			}
		}
		if li >= from {
			for _, g := range Groups(m.Config(), li) {
				if err := ctx.Err(); err != nil {
					return err
				}
				if r.Skip != nil && r.Skip(g) {
					continue
				}
				if err := r.group(ctx, s, g, xs, fn); err != nil {
					return err
				}
			}
			if r.Reconstruct != nil {
				repl, err := r.Reconstruct(li, xs, target)
				if err != nil {
					return err
				}
				if err := r.put(repl); err != nil {
					return err
				}
			}
		}
		for i := range xs { // the layer's output, with its quantized matrices
			if err := ctx.Err(); err != nil {
				return err
			}
			s.Reset()
			m.ForwardLayer(s, li, &xs[i])
		}
		if r.Progress != nil {
			r.Progress(li+1, L+1)
		}
	}
	if r.Skip == nil || !r.Skip(HeadGroup) {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := r.group(ctx, s, HeadGroup, xs, fn); err != nil {
			return err
		}
	}
	if r.Progress != nil {
		r.Progress(L+1, L+1)
	}
	return nil
}

func (r *Runner) rows() [][]int {
	return append(append([][]int(nil), r.Train...), r.Held...)
}

// group collects g's input statistics over every row and hands them to fn.
func (r *Runner) group(ctx context.Context, s *model.State, g Group, xs []tensor.Matrix, fn GroupFunc) error {
	m := r.Model
	st := Stats{Train: new(quant.Hessian), Held: new(quant.Hessian)}
	rec := &recorder{}
	if r.Rotation != nil {
		rec.rot = r.Rotation(g)
	}
	first := g.Names[0]
	slot := m.Slot(first)
	if slot == nil {
		return fmt.Errorf("calib: the model has no matrix %q", first)
	}
	var x, u tensor.Matrix
	for i := range xs {
		if err := ctx.Err(); err != nil {
			return err
		}
		rec.h = st.Train
		if i >= len(r.Train) {
			rec.h = st.Held
		}
		switch {
		case g.Layer < 0:
			m.Norm(-1, &u, &xs[i])
			rec.add(&u)
		case g.Names[0] == Groups(m.Config(), g.Layer)[0].Names[0]:
			m.Norm(g.Layer, &u, &xs[i])
			rec.add(&u)
		default: // run the layer on a copy with the recorder in the slot
			x.Resize(xs[i].Rows, xs[i].Cols)
			copy(x.Data, xs[i].Data)
			rec.Linear = *slot
			*slot = rec
			s.Reset()
			m.ForwardLayer(s, g.Layer, &x)
			*slot = rec.Linear
		}
	}
	repl, err := fn(g, st)
	if err != nil {
		return err
	}
	return r.put(repl)
}

// put stores Linears in the model's slots by name.
func (r *Runner) put(repl map[string]model.Linear) error {
	for name, lin := range repl {
		p := r.Model.Slot(name)
		if p == nil {
			return fmt.Errorf("calib: the model has no matrix %q", name)
		}
		*p = lin
	}
	return nil
}

// targets advances the reference stream refs through the reference
// model's layer li and returns it (nil for a layer below the resumed one),
// or with LocalTarget the reference layer's outputs on the quantized
// stream xs (want set: layers that are reconstructed).
func (r *Runner) targets(ctx context.Context, li int, want bool, xs, refs []tensor.Matrix) ([]tensor.Matrix, error) {
	s := r.Reference.NewState()
	if r.LocalTarget {
		if !want {
			return nil, nil
		}
		out := make([]tensor.Matrix, len(xs))
		for i := range xs {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			out[i].Resize(xs[i].Rows, xs[i].Cols)
			copy(out[i].Data, xs[i].Data)
			s.Reset()
			r.Reference.ForwardLayer(s, li, &out[i])
		}
		return out, nil
	}
	for i := range refs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		s.Reset()
		r.Reference.ForwardLayer(s, li, &refs[i])
	}
	return refs, nil
}

// recorder is a Linear that adds its input (rotated, if rot is set) to h
// before multiplying.
type recorder struct {
	model.Linear
	h   *quant.Hessian
	rot lut.Rotation
	buf tensor.Matrix
}

func (r *recorder) Mul(dst, x *tensor.Matrix) {
	r.add(x)
	r.Linear.Mul(dst, x)
}

func (r *recorder) add(x *tensor.Matrix) {
	if r.rot == nil {
		r.h.Add(x)
		return
	}
	r.buf.Resize(x.Rows, x.Cols)
	r.rot.Rotate(&r.buf, x)
	r.h.Add(&r.buf)
}
