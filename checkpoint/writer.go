package checkpoint

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"path/filepath"
	"strings"

	"forge/internal/budget"
	"forge/internal/durable"
	"forge/internal/outpath"
	"forge/safetensors"
	"forge/tensor"
)

// Tensor is one tensor of a checkpoint to write, declared to Create.
type Tensor struct {
	Name  string            // text-model name: "layers.0.mlp.up_proj.weight", "lm_head.weight"
	DType safetensors.DType // F32, BF16 or F16
	Shape []int
}

// DefaultShardSize is the tensor data per shard when WriterOptions.ShardSize
// is 0: 4 GiB.
const DefaultShardSize = 4 << 30

// WriterOptions configures Create. The zero value writes shards of
// DefaultShardSize (one model.safetensors when everything fits) and
// refuses an existing output.
type WriterOptions struct {
	ShardSize int64 // tensor bytes per shard before the next one starts; 0: DefaultShardSize
	// Indexed writes model-00001-of-00001.safetensors and the index even
	// when one shard holds everything (the layout of the sharded releases).
	Indexed   bool
	Overwrite bool   // replace an output forge wrote (outpath.Check)
	Version   string // forge's version, recorded in the output's marker
	// Progress, if set, is called as each tensor is complete with the data
	// bytes written so far and the total.
	Progress func(done, total int64)
}

// IndexName is the index of a sharded checkpoint.
const IndexName = "model.safetensors.index.json"

// Writer writes a Hugging Face Qwen3.5 checkpoint directory:
//
//   - config.json as given to Create, and other non-weight files
//     (tokenizer files) through WriteFile;
//   - the declared tensors, in declared order (callers use model.Tensors
//     order), under the names of the config's class: "model.language_model."
//   - name for the nested config of Qwen3_5ForConditionalGeneration
//     (config.json has text_config), else "model." + name; "lm_head.weight"
//     as is. safetensors metadata {"format": "pt"};
//   - one model.safetensors when the data fits ShardSize (and not Indexed),
//     else model-0000k-of-0000n.safetensors, a new shard starting before a
//     tensor that would take the current one past ShardSize, with
//     model.safetensors.index.json ({"metadata": {"total_size"},
//     "weight_map"}).
//
// Everything is written into OUT.partial (outpath.Stage) and the data is
// streamed: Write, WriteFloat32 and WriteConverted continue where the last
// call stopped, across tensors and shards, so a caller holds at most one
// tensor (or a chunk of one) in memory. Close checks that every declared
// byte was written and that the directory opens with Open, then renames it
// to OUT. A failure, Abort, or a cancelled context leaves no OUT and no
// OUT.partial. Every call after the first failure returns that failure.
// A Writer is not safe for concurrent use.
type Writer struct {
	ctx     context.Context
	stage   *outpath.Staged
	opt     WriterOptions
	tensors []Tensor
	ends    []int64 // data end of each tensor, from the start of the data
	shards  []shardPlan
	total   int64
	prefix  string

	pos     int64 // data bytes written
	next    int   // first tensor not complete
	cur     *safetensors.Writer
	curIdx  int // index of cur in shards; -1 before the first
	scratch struct {
		bytes      []byte
		halves, in []uint16
		vals       []float32
	}
	err error
}

type shardPlan struct {
	name  string
	end   int64 // data end, from the start of the checkpoint's data
	infos []safetensors.TensorInfo
}

// Create checks out (outpath.Check: an existing output only with
// Overwrite, and only forge's own) and the free disk for the declared
// data (budget.Disk), then starts OUT.partial with config.json in it.
// ctx stops the writing: once it is done every call fails with its error.
func Create(ctx context.Context, out string, config []byte, tensors []Tensor, opt WriterOptions) (*Writer, error) {
	out = filepath.Clean(out)
	w := &Writer{ctx: ctx, opt: opt, tensors: tensors, curIdx: -1}
	var err error
	if w.prefix, err = hfPrefix(config); err != nil {
		return nil, fmt.Errorf("checkpoint %s: config.json: %w", out, err)
	}
	if err := w.plan(); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", out, err)
	}
	if err := outpath.Check(outpath.Target{Path: out, Dir: true}, opt.Overwrite); err != nil {
		return nil, err
	}
	if err := budget.Disk(out, "the checkpoint", w.total); err != nil {
		return nil, err
	}
	if w.stage, err = outpath.Stage(out, opt.Version); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", out, err)
	}
	if err := durable.WriteFile(filepath.Join(w.stage.Dir, "config.json"), config); err != nil {
		w.stage.Abort()
		return nil, err
	}
	return w, nil
}

// hfPrefix returns the prefix a Hugging Face Qwen3.5 checkpoint of this
// config.json puts before the text model's tensor names: the multimodal
// class (nested text_config) nests the text model under
// model.language_model, the text-only class under model.
func hfPrefix(configJSON []byte) (string, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(configJSON, &top); err != nil {
		return "", err
	}
	if tc, ok := top["text_config"]; ok && string(tc) != "null" {
		return "model.language_model.", nil
	}
	return "model.", nil
}

// hfName is the checkpoint name of a text-model tensor.
func (w *Writer) hfName(name string) string {
	if name == "lm_head.weight" {
		return name
	}
	return w.prefix + name
}

// plan checks the declared tensors, sums their bytes and splits them into
// shards.
func (w *Writer) plan() error {
	limit := w.opt.ShardSize
	if limit <= 0 {
		limit = DefaultShardSize
	}
	seen := map[string]bool{}
	var cur int64
	for _, t := range w.tensors {
		n, err := tensorBytes(t)
		if err != nil {
			return err
		}
		if seen[t.Name] {
			return fmt.Errorf("tensor %q declared twice", t.Name)
		}
		seen[t.Name] = true
		if len(w.shards) == 0 || (cur > 0 && cur+n > limit) {
			w.shards = append(w.shards, shardPlan{})
			cur = 0
		}
		if w.total > math.MaxInt64-n {
			return errors.New("the tensors' bytes overflow int64")
		}
		cur += n
		w.total += n
		w.ends = append(w.ends, w.total)
		s := &w.shards[len(w.shards)-1]
		s.end = w.total
		s.infos = append(s.infos, safetensors.TensorInfo{Name: w.hfName(t.Name), DType: t.DType, Shape: t.Shape})
	}
	if len(w.shards) == 1 && !w.opt.Indexed {
		w.shards[0].name = "model.safetensors"
		return nil
	}
	for k := range w.shards {
		w.shards[k].name = fmt.Sprintf("model-%05d-of-%05d.safetensors", k+1, len(w.shards))
	}
	return nil
}

// tensorBytes is a declared tensor's data size, refusing dtypes other than
// F32, BF16 and F16, negative dimensions and overflow.
func tensorBytes(t Tensor) (int64, error) {
	switch t.DType {
	case safetensors.F32, safetensors.BF16, safetensors.F16:
	default:
		return 0, fmt.Errorf("tensor %q: dtype %v, want F32, BF16 or F16", t.Name, t.DType)
	}
	n := uint64(t.DType.Size())
	for _, d := range t.Shape {
		hi, lo := bits.Mul64(n, uint64(d))
		if d < 0 || hi != 0 || lo > math.MaxInt64 {
			return 0, fmt.Errorf("tensor %q: shape %v is negative or too large", t.Name, t.Shape)
		}
		n = lo
	}
	return int64(n), nil
}

// WriteFile writes a non-weight file (tokenizer.json, say) into the
// checkpoint. name is a plain file name, not config.json (given to Create)
// nor a name the Writer writes itself.
func (w *Writer) WriteFile(name string, data []byte) error {
	if err := w.usable(); err != nil {
		return err
	}
	if name != filepath.Base(name) || name == "." || name == ".." || name == "config.json" || name == IndexName ||
		name == outpath.MarkerName || strings.HasSuffix(name, ".safetensors") {
		return w.fail(fmt.Errorf("checkpoint %s: WriteFile %q: not a name for a non-weight file", w.stage.Out, name))
	}
	return w.fail(durable.WriteFile(filepath.Join(w.stage.Dir, name), data))
}

// chunk is the number of values converted per step by WriteFloat32 and
// WriteConverted, so that they allocate only small fixed buffers.
const chunk = 1 << 15

// Write writes raw data bytes in the dtypes declared, continuing where the
// last call stopped: the tensors' bytes in declared order, back to back.
// Writing past the declared total fails and writes nothing.
func (w *Writer) Write(p []byte) (int, error) {
	if err := w.usable(); err != nil {
		return 0, err
	}
	if int64(len(p)) > w.total-w.pos {
		return 0, w.fail(fmt.Errorf("checkpoint %s: a write of %d bytes passes the end of the data (%d of %d bytes written)",
			w.stage.Out, len(p), w.pos, w.total))
	}
	written := 0
	for len(p) > 0 {
		if err := w.shardAt(w.pos); err != nil {
			return written, w.fail(err)
		}
		n := int(min(int64(len(p)), w.shards[w.curIdx].end-w.pos))
		if _, err := w.cur.Write(p[:n]); err != nil {
			return written, w.fail(err)
		}
		written += n
		w.pos += int64(n)
		p = p[n:]
		if err := w.advance(); err != nil {
			return written, w.fail(err)
		}
	}
	return written, nil
}

// WriteFloat32 writes values, continuing where the last call stopped, each
// rounded to the dtype of the tensor it falls in (to nearest even for BF16
// and F16; F32 is exact). The position must be at an element boundary.
func (w *Writer) WriteFloat32(v []float32) error {
	for len(v) > 0 {
		t, err := w.current()
		if err != nil {
			return err
		}
		k := min(len(v), chunk, int((w.ends[w.next]-w.pos)/int64(t.DType.Size())))
		if _, err := w.Write(w.encode(v[:k], t.DType)); err != nil {
			return err
		}
		v = v[k:]
	}
	return nil
}

// WriteConverted writes data holding values stored in dtype src (F32, BF16
// or F16), continuing where the last call stopped. Where the tensor's
// dtype is src the bytes are copied bit for bit; otherwise each value is
// widened to float32 (exact) and written as WriteFloat32 does, which is
// exact when widening a half to F32 and rounds when narrowing.
func (w *Writer) WriteConverted(src safetensors.DType, data []byte) error {
	if src != safetensors.F32 && src != safetensors.BF16 && src != safetensors.F16 {
		return w.fail(fmt.Errorf("checkpoint %s: WriteConverted from %v, want F32, BF16 or F16", w.stage.Out, src))
	}
	ss := src.Size()
	if len(data)%ss != 0 {
		return w.fail(fmt.Errorf("checkpoint %s: WriteConverted of %d bytes, not a whole number of %v values", w.stage.Out, len(data), src))
	}
	for len(data) > 0 {
		t, err := w.current()
		if err != nil {
			return err
		}
		room := w.ends[w.next] - w.pos // bytes left in the tensor
		if t.DType == src {
			n := min(int64(len(data)), room)
			if _, err := w.Write(data[:n]); err != nil {
				return err
			}
			data = data[n:]
			continue
		}
		k := min(len(data)/ss, chunk, int(room/int64(t.DType.Size())))
		if err := w.WriteFloat32(w.decode(data[:k*ss], src)); err != nil {
			return err
		}
		data = data[k*ss:]
	}
	return nil
}

// current returns the tensor the next byte belongs to, refusing a position
// past the end or inside an element.
func (w *Writer) current() (Tensor, error) {
	if err := w.usable(); err != nil {
		return Tensor{}, err
	}
	if err := w.advance(); err != nil {
		return Tensor{}, w.fail(err)
	}
	if w.next == len(w.tensors) {
		return Tensor{}, w.fail(fmt.Errorf("checkpoint %s: a write passes the end of the data (%d bytes)", w.stage.Out, w.total))
	}
	t := w.tensors[w.next]
	size := int64(t.DType.Size())
	begin := int64(0)
	if w.next > 0 {
		begin = w.ends[w.next-1]
	}
	if (w.pos-begin)%size != 0 {
		return t, w.fail(fmt.Errorf("checkpoint %s: tensor %q: values written from inside a %v element", w.stage.Out, t.Name, t.DType))
	}
	return t, nil
}

// encode returns v in dtype dt, little-endian, in the writer's scratch.
func (w *Writer) encode(v []float32, dt safetensors.DType) []byte {
	w.grow()
	out := w.scratch.bytes[:len(v)*dt.Size()]
	switch dt {
	case safetensors.F32:
		for i, x := range v {
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(x))
		}
		return out
	case safetensors.BF16:
		tensor.F32ToBF16Slice(w.scratch.halves[:len(v)], v)
	default:
		tensor.F32ToF16Slice(w.scratch.halves[:len(v)], v)
	}
	for i, h := range w.scratch.halves[:len(v)] {
		binary.LittleEndian.PutUint16(out[2*i:], h)
	}
	return out
}

// decode returns data, values of dtype src, widened to float32 in the
// writer's scratch.
func (w *Writer) decode(data []byte, src safetensors.DType) []float32 {
	w.grow()
	n := len(data) / src.Size()
	vals := w.scratch.vals[:n]
	if src == safetensors.F32 {
		for i := range vals {
			vals[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
		}
		return vals
	}
	halves := w.scratch.in[:n]
	for i := range halves {
		halves[i] = binary.LittleEndian.Uint16(data[2*i:])
	}
	if src == safetensors.BF16 {
		tensor.BF16ToF32Slice(vals, halves)
	} else {
		tensor.F16ToF32Slice(vals, halves)
	}
	return vals
}

func (w *Writer) grow() {
	if w.scratch.bytes == nil {
		w.scratch.bytes = make([]byte, 4*chunk)
		w.scratch.halves = make([]uint16, chunk)
		w.scratch.in = make([]uint16, chunk)
		w.scratch.vals = make([]float32, chunk)
	}
}

// advance moves past the tensors the data written so far completes,
// reporting each, and closes the shard it completes.
func (w *Writer) advance() error {
	for w.next < len(w.ends) && w.ends[w.next] <= w.pos {
		w.next++
		if w.opt.Progress != nil {
			w.opt.Progress(w.ends[w.next-1], w.total)
		}
	}
	if w.cur != nil && w.pos == w.shards[w.curIdx].end {
		return w.closeShard()
	}
	return nil
}

// shardAt makes the shard holding data byte pos the open one, creating the
// shards before it that are not created yet.
func (w *Writer) shardAt(pos int64) error {
	for w.cur == nil || w.shards[w.curIdx].end <= pos {
		if err := w.openNext(); err != nil {
			return err
		}
	}
	return nil
}

// openNext closes the open shard, if any, and creates the next one.
func (w *Writer) openNext() error {
	if err := w.closeShard(); err != nil {
		return err
	}
	w.curIdx++
	s := w.shards[w.curIdx]
	c, err := safetensors.Create(filepath.Join(w.stage.Dir, s.name), s.infos, map[string]string{"format": "pt"})
	if err != nil {
		return err
	}
	w.cur = c
	return nil
}

func (w *Writer) closeShard() error {
	if w.cur == nil {
		return nil
	}
	c := w.cur
	w.cur = nil
	return c.Close()
}

// usable returns the error that stops further writes: the first failure,
// the context's error, or Close or Abort having been called.
func (w *Writer) usable() error {
	if w.err != nil {
		return w.err
	}
	if err := w.ctx.Err(); err != nil {
		return w.fail(err)
	}
	return nil
}

// fail records err, if not nil, as the writer's failure if it is the
// first, and returns it.
func (w *Writer) fail(err error) error {
	if err != nil && w.err == nil {
		w.err = err
	}
	return err
}

// errClosed is the failure of calls after Close or Abort.
var errClosed = errors.New("checkpoint writer already closed")

// Close checks that every declared byte was written, writes the index
// when sharded, checks that the directory opens with Open, and publishes
// it as OUT (outpath.Staged.Publish, replacing an output Create accepted).
// On any failure it removes OUT.partial and leaves OUT as it was.
func (w *Writer) Close() error {
	if err := w.usable(); err != nil {
		w.Abort()
		return err
	}
	if w.pos != w.total {
		err := w.fail(fmt.Errorf("checkpoint %s: closed after %d of %d data bytes", w.stage.Out, w.pos, w.total))
		w.Abort()
		return err
	}
	if err := w.finish(); err != nil {
		w.fail(err)
		w.Abort()
		return err
	}
	w.fail(errClosed)
	return nil
}

func (w *Writer) finish() error {
	if err := w.advance(); err != nil { // zero-size tensors at the end
		return err
	}
	for w.curIdx+1 < len(w.shards) { // shards holding only zero-size tensors
		if err := w.openNext(); err != nil {
			return err
		}
	}
	if err := w.closeShard(); err != nil {
		return err
	}
	if len(w.shards) > 1 || w.opt.Indexed {
		if err := w.writeIndex(); err != nil {
			return err
		}
	}
	ck, err := Open(w.stage.Dir)
	if err != nil {
		return fmt.Errorf("internal error: the written checkpoint does not open: %w", err)
	}
	ck.Close()
	if err := w.ctx.Err(); err != nil {
		return err
	}
	return w.stage.Publish("checkpoint")
}

func (w *Writer) writeIndex() error {
	weightMap := map[string]string{}
	for _, s := range w.shards {
		for _, info := range s.infos {
			weightMap[info.Name] = s.name
		}
	}
	index, err := json.MarshalIndent(map[string]any{"metadata": map[string]int64{"total_size": w.total}, "weight_map": weightMap}, "", "  ")
	if err != nil {
		return err
	}
	return durable.WriteFile(filepath.Join(w.stage.Dir, IndexName), append(index, '\n'))
}

// Abort stops writing and removes OUT.partial, leaving OUT as it was. It
// is safe to call at any time, also after Close (when it does nothing).
func (w *Writer) Abort() {
	if w.cur != nil {
		w.cur.Abort()
		w.cur = nil
	}
	w.stage.Abort()
	w.fail(errClosed)
}
