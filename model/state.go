package model

import (
	"fmt"
	"slices"
	"strconv"

	"forge/tensor"
)

// State is one sequence's decoding state (docs/model.md §9): per DeltaNet layer the
// last K−1 raw conv rows and the recurrent state S, per attention layer the
// KV cache, and the position counter. A State belongs to one Model and one
// goroutine at a time; the Model itself is shared read-only.
//
// Mark and Rewind restore a State exactly (speculative rejection, prompt
// cache reuse): the KV caches are truncated and the DeltaNet states copied
// back from the snapshot taken by Mark, so a re-run after Rewind reproduces
// the same logits bit for bit.
type State struct {
	cfg    *Config
	pos    int
	broken bool     // a ForwardContext call was cancelled midway: Reset or Rewind first
	pend   int      // rows run by Verify and not yet committed (verify.go)
	verify bool     // the forward running is a Verify block
	rows   []*State // the forward running is a StepBatch of these States (a Batch's State, batch.go)
	kv     KV       // how attention layers store keys and values
	act    Act      // how steps multiply activations by quantized weights
	layers []layerState
	num    Numerics    // emulated device arithmetic (numerics.go), nil for fp32
	nsc    []float32   // the Numerics path's scratch: [2·dv + 1]
	marks  []*snapshot // live marks, oldest first
	free   []*snapshot // recycled snapshots (Mark does not allocate in steady state)

	// Observe, when set, receives intermediate activations by name as the
	// forward runs (tests and calibration). The matrix is only valid
	// during the call.
	Observe func(name string, m *tensor.Matrix)

	sc scratch
}

type layerState struct {
	conv []float32 // [K−1][convDim] raw pre-conv rows, oldest first (DeltaNet)
	rec  []float32 // [Hv][dk][dv] recurrent state S (DeltaNet)
	k, v []float32 // [pos][Hkv·D] token-major KV cache (attention, KVFloat32)
	q    kvInt8    // the cache in the KVInt8 format

	// A Verify block's pending rows (DeltaNet, verify.go): the working
	// conv and recurrent state they ran on, and their inputs, from which
	// Commit replays an accepted prefix onto conv and rec.
	wconv, wrec []float32
	wfresh      bool      // wrec is yet to be written: the next row steps from rec into it
	px0, pxc    []float32 // [pend][convDim] raw rows, conv'd rows (q, k, v as the rule took them)
	pg, pb      []float32 // [pend][Hv] decay g and β
}

type snapshot struct {
	pos  int
	conv [][]float32 // per layer, nil for attention layers
	rec  [][]float32
}

// Mark identifies a saved point of a State.
type Mark struct {
	pos  int
	snap *snapshot
}

// Pos returns the Mark's position (tokens consumed when it was taken).
func (m Mark) Pos() int { return m.pos }

// NewState returns an empty state (position 0, zero DeltaNet state, empty
// caches) for sequences run through m.
func (m *Model) NewState() *State {
	c := &m.cfg
	s := &State{cfg: c, layers: make([]layerState, len(c.Layers))}
	for i, k := range c.Layers {
		if k == DeltaNet {
			s.layers[i].conv = make([]float32, (c.ConvKernel-1)*c.ConvDim())
			s.layers[i].rec = make([]float32, c.ValueHeads*c.KeyDim*c.ValueDim)
		}
	}
	return s
}

// Pos returns the number of tokens consumed so far (the next token's position).
func (s *State) Pos() int { return s.pos }

// Advance moves the position on by n tokens after a chunk of n rows has
// been run through every layer with ForwardLayer (Forward does this
// itself). It panics if n < 0.
func (s *State) Advance(n int) {
	if n < 0 {
		panic("model: State.Advance by a negative count")
	}
	s.pos += n
}

// Reserve grows the KV caches so that n more tokens fit without allocating.
func (s *State) Reserve(n int) {
	kv := s.cfg.KVHeads * s.cfg.HeadDim
	for i, k := range s.cfg.Layers {
		if k == Attention {
			ls := &s.layers[i]
			if s.kv == KVInt8 {
				ls.q.grow(n, s.cfg.KVHeads, s.cfg.HeadDim)
				continue
			}
			ls.k = slices.Grow(ls.k, n*kv)
			ls.v = slices.Grow(ls.v, n*kv)
		}
	}
}

// Mark saves the current state. It copies every DeltaNet layer's conv and
// recurrent state (the KV caches only need their length). Marks stay valid
// until a Rewind to an earlier point or Forget.
func (s *State) Mark() Mark {
	s.settled("Mark")
	var sn *snapshot
	if n := len(s.free); n > 0 {
		sn, s.free = s.free[n-1], s.free[:n-1]
	} else {
		sn = &snapshot{conv: make([][]float32, len(s.layers)), rec: make([][]float32, len(s.layers))}
	}
	sn.pos = s.pos
	for i := range s.layers {
		ls := &s.layers[i]
		if ls.rec != nil {
			sn.conv[i] = append(sn.conv[i][:0], ls.conv...)
			sn.rec[i] = append(sn.rec[i][:0], ls.rec...)
		}
	}
	s.marks = append(s.marks, sn)
	return Mark{pos: s.pos, snap: sn}
}

// Rewind restores the state saved by m exactly. Marks taken after m are
// released. Rewinding to a mark that was released, or that belongs to
// another State, is a programmer error and panics.
func (s *State) Rewind(m Mark) {
	idx := slices.Index(s.marks, m.snap)
	if idx < 0 || m.snap.pos != m.pos || m.pos > s.pos {
		panic(fmt.Sprintf("model: Rewind to a stale or foreign mark (pos %d, state at %d)", m.pos, s.pos))
	}
	s.drop()
	kv := s.cfg.KVHeads * s.cfg.HeadDim
	for i := range s.layers {
		ls := &s.layers[i]
		if ls.rec != nil {
			copy(ls.conv, m.snap.conv[i])
			copy(ls.rec, m.snap.rec[i])
		} else if s.kv == KVInt8 {
			ls.q.truncate(m.pos, s.cfg.KVHeads, s.cfg.HeadDim)
		} else {
			ls.k = ls.k[:m.pos*kv]
			ls.v = ls.v[:m.pos*kv]
		}
	}
	s.pos = m.pos
	s.broken = false
	s.free = append(s.free, s.marks[idx+1:]...)
	s.marks = s.marks[:idx+1]
}

// Forget releases m (and nothing else); its snapshot memory is reused by a
// later Mark. Forgetting a mark that is not live does nothing.
func (s *State) Forget(m Mark) {
	if idx := slices.Index(s.marks, m.snap); idx >= 0 {
		s.marks = slices.Delete(s.marks, idx, idx+1)
		s.free = append(s.free, m.snap)
	}
}

// Reset returns the state to position 0 with zero DeltaNet state and empty
// caches, releasing all marks.
func (s *State) Reset() {
	s.drop()
	for i := range s.layers {
		ls := &s.layers[i]
		clear(ls.conv)
		clear(ls.rec)
		ls.k, ls.v = ls.k[:0], ls.v[:0]
		ls.q.truncate(0, 0, 0)
	}
	s.broken = false
	s.pos = 0
	s.free = append(s.free, s.marks...)
	s.marks = s.marks[:0]
}

func (s *State) observe(name string, m *tensor.Matrix) {
	if s.Observe != nil {
		s.Observe(name, m)
	}
}

// observeLayer reports "layers.<li>.<name>"; the name is only built when an
// observer is set, so decode steps stay allocation-free.
func (s *State) observeLayer(li int, name string, m *tensor.Matrix) {
	if s.Observe != nil {
		s.Observe("layers."+strconv.Itoa(li)+"."+name, m)
	}
}

// DeltaNetState returns views of DeltaNet layer li's conv state [K−1][convDim]
// and recurrent state [Hv][dk][dv] (nil for an attention layer). Read only.
func (s *State) DeltaNetState(li int) (conv, rec []float32) {
	return s.layers[li].conv, s.layers[li].rec
}

// KVCacheHeads returns a copy of attention layer li's key (or value) cache
// as [Hkv][pos][D], the layout of the reference's cache (KVInt8: widened
// and scaled back to fp32).
func (s *State) KVCacheHeads(li int, keys bool) []float32 {
	hkv, D := s.cfg.KVHeads, s.cfg.HeadDim
	src := s.layers[li].v
	if keys {
		src = s.layers[li].k
	}
	if q := &s.layers[li].q; s.kv == KVInt8 {
		src = make([]float32, len(q.k))
		if keys {
			tensor.F16ToF32Slice(src, q.k)
		} else {
			for i, v := range q.v {
				src[i] = float32(v) * q.vs[i/D]
			}
		}
	}
	out := make([]float32, len(src))
	for t := range s.pos {
		for h := range hkv {
			copy(out[(h*s.pos+t)*D:(h*s.pos+t+1)*D], src[(t*hkv+h)*D:(t*hkv+h+1)*D])
		}
	}
	return out
}
