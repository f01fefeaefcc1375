package layout

import (
	"fmt"
	"strconv"
	"strings"

	"forge/lut"
	"forge/model"
	"forge/safetensors"
)

// Entry is one matrix as the layout stores it.
type Entry struct {
	Name string // forge's text-model name, "layers.3.mlp.up_proj.weight"
	File string // base name of the file holding it, "layer_03.safetensors"
	Key  string // stem of its tensors in File: "up", "self_attn.q_proj", "lm_head"
	// Format is per-tensor (Group 0); BF16 and FP16 are stored as Key.weight.
	Format lut.Format
	Shape  [2]int // [out, in]
	Rank   int    // rank of the low-rank factors Key.lr_a, Key.lr_b (0: none)
	// Rotation is the online Hadamard rotation of the input (MLP only;
	// nil: basis plain).
	Rotation *Rotation
}

// Rotation is an online block Hadamard rotation as
// lut.NewHadamardSigns(in, Seed, Signs) makes it; Block is its block
// width.
type Rotation struct {
	Seed  uint64
	Block int
	Signs lut.SignSource // the generator of its signs (sign_rng)
}

// File is one file of the layout: its base name, its safetensors
// metadata and the matrices it holds, in order.
type File struct {
	Name    string
	Meta    map[string]string
	Entries []Entry
}

// Source gives a model's matrices as a bundle stores them; *bundle.Bundle
// is one.
type Source interface {
	// Matrix returns the matrix name in its lut format, or nil when it is
	// kept raw (unquantized, in its source dtype).
	Matrix(name string) (*lut.Matrix, error)
	// Raw returns a raw tensor's header entry (dtype, shape) and bytes.
	Raw(name string) (safetensors.TensorInfo, []byte, error)
}

// matrices are a model's quantizable matrices, as the layout groups them.
type matrices struct {
	mlp   [][]model.TensorSpec // per layer: gate, up, down
	mixer [][]model.TensorSpec // per layer, checkpoint order: qkv, z, out or q, k, v, o
	head  *model.TensorSpec    // nil when the head is tied to the embeddings
}

func matricesOf(cfg *model.Config) matrices {
	ms := matrices{mlp: make([][]model.TensorSpec, len(cfg.Layers)), mixer: make([][]model.TensorSpec, len(cfg.Layers))}
	for _, s := range model.Tensors(cfg) {
		switch {
		case !s.Quantizable:
		case s.Layer < 0:
			ms.head = &s
		case s.Part == model.PartMLP:
			ms.mlp[s.Layer] = append(ms.mlp[s.Layer], s)
		default:
			ms.mixer[s.Layer] = append(ms.mixer[s.Layer], s)
		}
	}
	return ms
}

// mixerKey is a mixer matrix's key: its module path,
// "layers.3.self_attn.q_proj.weight" → "self_attn.q_proj".
func mixerKey(name string) string {
	_, rest, _ := strings.Cut(strings.TrimPrefix(name, "layers."), ".")
	return strings.TrimSuffix(rest, ".weight")
}

// member is a matrix being planned, and whether the source keeps it raw
// (then Format is BF16 or FP16 from its dtype, or zero for another dtype).
type member struct {
	Entry
	raw   bool
	dtype safetensors.DType
}

// refuse is the error of a matrix the layout cannot hold.
func refuse(name, format string, args ...any) error {
	return fmt.Errorf("matrix %q: %w: %s", name, ErrInexpressible, fmt.Sprintf(format, args...))
}

func memberOf(src Source, s model.TensorSpec, file, key string) (member, error) {
	e := Entry{Name: s.Name, File: file, Key: key, Shape: [2]int{s.Shape[0], s.Shape[1]}}
	m, err := src.Matrix(s.Name)
	if err != nil {
		return member{}, err
	}
	if m == nil {
		info, _, err := src.Raw(s.Name)
		if err != nil {
			return member{}, err
		}
		switch info.DType {
		case safetensors.BF16:
			e.Format = lut.BFloat16
		case safetensors.F16:
			e.Format = lut.Float16
		}
		return member{Entry: e, raw: true, dtype: info.DType}, nil
	}
	if out, in := m.Dims(); out != e.Shape[0] || in != e.Shape[1] {
		return member{}, fmt.Errorf("matrix %q: shape %dx%d, the model's is %v", s.Name, out, in, e.Shape)
	}
	if _, e.Format, err = Spell(m.Format(), e.Shape[0]); err != nil {
		return member{}, fmt.Errorf("matrix %q: %w", s.Name, err)
	}
	e.Rank = m.Rank()
	if r := m.Parts().Rotation; r != nil {
		h, ok := r.(*lut.Hadamard)
		if !ok {
			return member{}, refuse(s.Name, "its input rotation %T has no seed to record", r)
		}
		e.Rotation = &Rotation{Seed: h.Seed(), Block: h.Block(), Signs: h.Signs()}
	}
	return member{Entry: e}, nil
}

// Plan lays a model of configuration cfg out as the reference's files
// (doc.go), taking each matrix's format, rank and rotation from src. It
// reads no arrays. Whatever the layout cannot hold is an error naming the
// matrix and wrapping ErrInexpressible (doc.go, "What the layout cannot
// hold"). Files come in order: per layer its layer file then its mixer
// file (when it holds anything), then the head's.
func Plan(cfg *model.Config, src Source) ([]File, error) {
	ms := matricesOf(cfg)
	mlps := make([][]member, len(cfg.Layers))
	mixers := make([][]member, len(cfg.Layers))
	for i := range cfg.Layers { // in checkpoint order: the first matrix refused is named
		for _, s := range ms.mixer[i] {
			m, err := memberOf(src, s, MixerFile(i), mixerKey(s.Name))
			if err != nil {
				return nil, err
			}
			mixers[i] = append(mixers[i], m)
		}
		for _, s := range ms.mlp[i] {
			m, err := memberOf(src, s, LayerFile(i), s.Role)
			if err != nil {
				return nil, err
			}
			mlps[i] = append(mlps[i], m)
		}
	}
	kvAll, err := commonKV(cfg, mixers)
	if err != nil {
		return nil, err
	}
	var files []File
	for i, kind := range cfg.Layers {
		f, err := mlpFile(i, mlps[i])
		if err != nil {
			return nil, err
		}
		files = append(files, f)
		if f, ok, err := mixerFile(i, kind, mixers[i], kvAll); err != nil {
			return nil, err
		} else if ok {
			files = append(files, f)
		}
	}
	if ms.head != nil {
		h, err := memberOf(src, *ms.head, HeadFile, "lm_head")
		if err != nil {
			return nil, err
		}
		if f, ok, err := headFile(h); err != nil {
			return nil, err
		} else if ok {
			files = append(files, f)
		}
	}
	return files, nil
}

// mlpFile plans layer i's file: gate, up, down all rotated (basis online,
// gate and up with one seed, one block width) or none.
func mlpFile(i int, ms []member) (File, error) {
	f := File{Name: LayerFile(i), Meta: map[string]string{}}
	var rotated, plain *member
	for k := range ms {
		m := &ms[k]
		if m.raw && m.Format.Kind == 0 {
			return f, refuse(m.Name, "it is kept unquantized in %v; the layout stores unquantized matrices as bf16 or fp16", m.dtype)
		}
		if m.Rotation != nil && rotated == nil {
			rotated = m
		} else if m.Rotation == nil && plain == nil {
			plain = m
		}
		f.Meta[m.Key+".format"] = m.Format.String()
		f.Entries = append(f.Entries, m.Entry)
	}
	switch {
	case rotated == nil:
		f.Meta["basis"] = BasisPlain
		return f, nil
	case plain != nil:
		return f, refuse(plain.Name, "its input is not rotated while %s's is: the layout's basis is one per layer (online or plain)", rotated.Name)
	}
	gate, up, down := ms[0], ms[1], ms[2]
	if up.Rotation.Seed != gate.Rotation.Seed {
		return f, refuse(up.Name, "its input rotation has seed %d and gate's %d: the layout's seed_in is one seed for gate and up", up.Rotation.Seed, gate.Rotation.Seed)
	}
	if down.Rotation.Block != gate.Rotation.Block {
		return f, refuse(down.Name, "its input rotation has %d-wide blocks and gate's %d-wide: the layout's block is one width", down.Rotation.Block, gate.Rotation.Block)
	}
	for _, m := range ms[1:] {
		if m.Rotation.Signs != gate.Rotation.Signs {
			return f, refuse(m.Name, "its input rotation draws %s's signs and gate's %s's: the layout's sign_rng is one generator per layer",
				m.Rotation.Signs, gate.Rotation.Signs)
		}
	}
	for _, m := range ms {
		if m.Rank > 0 {
			return f, refuse(m.Name, "low-rank factors under the online basis: forge applies them to the rotated input, the reference adds MLP factors in the original basis")
		}
	}
	f.Meta["basis"] = BasisOnline
	f.Meta["seed_in"] = strconv.FormatUint(gate.Rotation.Seed, 10)
	f.Meta["seed_mid"] = strconv.FormatUint(down.Rotation.Seed, 10)
	f.Meta["block"] = strconv.Itoa(gate.Rotation.Block)
	f.Meta["sign_rng"] = SignRNG(gate.Rotation.Signs)
	return f, nil
}

// groupFormat is the format one group of a mixer's matrices is recorded
// with: the one format of those exported (all of them, when it is
// quantized), or "bf16" when none is (the reference reads them from the
// checkpoint). Raw matrices are left out of the file.
func groupFormat(ms []member) (string, error) {
	var first *member
	for k := range ms {
		m := &ms[k]
		switch {
		case m.Rotation != nil:
			return "", refuse(m.Name, "its input is rotated; the layout rotates only the MLP inputs")
		case m.raw:
		case first == nil:
			first = m
		case m.Format != first.Format:
			return "", refuse(m.Name, "it is %s and %s is %s: the layout records one format per mixer (and one for attention k/v)", m.Format, first.Name, first.Format)
		}
	}
	if first == nil {
		return lut.BFloat16.String(), nil
	}
	if first.Format.Quantized() {
		for _, m := range ms {
			if m.raw {
				return "", refuse(m.Name, "it is kept unquantized while %s is %s: the layout records one format per mixer (and one for attention k/v)", first.Name, first.Format)
			}
		}
	}
	return first.Format.String(), nil
}

// split separates a mixer's attention k/v (part kv) from its other
// matrices.
func split(ms []member) (main, kv []member) {
	for _, m := range ms {
		if s, _ := model.Lookup(m.Name); s.Part == model.PartKV {
			kv = append(kv, m)
		} else {
			main = append(main, m)
		}
	}
	return main, kv
}

// commonKV is the k/v format of every attention layer when they agree
// ("" otherwise): what the reference writes as kv_format on DeltaNet
// layers too.
func commonKV(cfg *model.Config, mixers [][]member) (string, error) {
	all := ""
	for i, kind := range cfg.Layers {
		if kind != model.Attention {
			continue
		}
		_, kv := split(mixers[i])
		f, err := groupFormat(kv)
		if err != nil {
			return "", err
		}
		if all != "" && f != all {
			return "", nil
		}
		all = f
	}
	return all, nil
}

// mixerFile plans layer i's mixer file; ok is false when it would hold no
// tensor (every matrix raw).
func mixerFile(i int, kind model.LayerKind, ms []member, kvAll string) (File, bool, error) {
	f := File{Name: MixerFile(i), Meta: map[string]string{"kind": kind.String()}}
	main, kv := split(ms)
	format, err := groupFormat(main)
	if err != nil {
		return f, false, err
	}
	f.Meta["format"] = format
	if kind == model.Attention {
		if f.Meta["kv_format"], err = groupFormat(kv); err != nil {
			return f, false, err
		}
	} else if kvAll != "" {
		f.Meta["kv_format"] = kvAll
	}
	for _, m := range ms {
		if !m.raw {
			f.Entries = append(f.Entries, m.Entry)
		}
	}
	return f, len(f.Entries) > 0, nil
}

// headFile plans lm_head.safetensors; ok is false for a raw head.
func headFile(h member) (File, bool, error) {
	if h.Rotation != nil {
		return File{}, false, refuse(h.Name, "its input is rotated; the layout rotates only the MLP inputs")
	}
	if h.raw {
		return File{}, false, nil
	}
	return File{Name: HeadFile, Meta: map[string]string{"format": h.Format.String()}, Entries: []Entry{h.Entry}}, true, nil
}
