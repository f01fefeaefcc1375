package bundle

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"forge/internal/durable"
	"forge/internal/outpath"
	"forge/lut"
	"forge/safetensors"
)

// Item is one tensor of an export, declared up front (the safetensors
// headers are written before any data) and then supplied in order.
type Item struct {
	Name  string // text-model name, e.g. "layers.0.mlp.up_proj.weight"
	Shape []int
	// Format, when set (Kind ≠ 0), stores the item as a lut.Matrix of that
	// format and records it among the manifest's matrices; Rank is its
	// low-rank factor rank. Otherwise the item is a raw tensor of DType.
	Format lut.Format
	Rank   int
	// Rotation is the online input rotation the matrix is stored in (nil:
	// none); the lut.Matrix written must carry exactly this one.
	Rotation *RotationEntry
	DType    safetensors.DType
	// Matrix marks a raw 2-D weight (kept in its source dtype) so that the
	// manifest lists it among the matrices.
	Matrix bool
}

// WriteOptions configures Create. The zero value writes 2 GiB shards and
// refuses an existing output.
type WriteOptions struct {
	ShardSize int64    // bytes per shard before the next one starts; 0 = 2 GiB
	Overwrite bool     // replace an existing bundle at the output path
	SourceDir string   // checkpoint to copy config.json and tokenizer files from
	Manifest  Manifest // Source and Quant are recorded as given
	// SNR holds held-out SNRs to record with matrices, by name.
	SNR map[string]*SNREntry
}

// CopiedFiles are taken from the source directory when present
// (config.json is required).
var CopiedFiles = []string{"config.json", "tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "generation_config.json"}

// Writer streams an export into OUT.partial and publishes it as OUT on Close.
// A shard's header, written when its first item arrives, carries the facts
// of its matrices (doc.go, "Integrity"), all declared up front in the Items.
type Writer struct {
	out, tmp string // tmp is stage.Dir
	stage    *outpath.Staged
	opt      WriteOptions
	items    []Item
	pads     []int // zero bytes written before each item's .idx array (padTensor)
	shards   []shardPlan
	next     int // next item to write
	cur      shardWriter
	curShard int
	man      Manifest
	err      error
}

type shardPlan struct {
	name  string
	first int // items [first, end)
	end   int
	infos []safetensors.TensorInfo
}

// shardWriter is the part of *safetensors.Writer the bundle uses; tests
// replace createShard to inject failures (a full disk mid-shard).
type shardWriter interface {
	io.Writer
	Close() error
	Abort()
}

var createShard = func(path string, infos []safetensors.TensorInfo, meta map[string]string) (shardWriter, error) {
	return safetensors.Create(path, infos, meta)
}

// Create starts an export to out. It removes a leftover out.partial, copies
// the source's config and tokenizer files, and plans the shards.
func Create(out string, items []Item, opt WriteOptions) (*Writer, error) {
	out = filepath.Clean(out)
	if err := outpath.Check(outpath.Target{Path: out, Dir: true, Owned: IsBundle}, opt.Overwrite); err != nil {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	stage, err := outpath.Stage(out, opt.Manifest.ForgeVersion)
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %w", out, err)
	}
	w := &Writer{out: out, tmp: stage.Dir, stage: stage, opt: opt, items: items, man: opt.Manifest}
	if err := w.copySourceFiles(); err != nil {
		w.Abort()
		return nil, err
	}
	if err := w.plan(); err != nil {
		w.Abort()
		return nil, err
	}
	return w, nil
}

func (w *Writer) copySourceFiles() error {
	for _, name := range CopiedFiles {
		src := filepath.Join(w.opt.SourceDir, name)
		data, err := os.ReadFile(src)
		if errors.Is(err, os.ErrNotExist) && name != "config.json" {
			continue
		}
		if err != nil {
			return fmt.Errorf("bundle %s: source %w", w.out, err)
		}
		if err := durable.WriteFile(filepath.Join(w.tmp, name), data); err != nil {
			return fmt.Errorf("bundle %s: %w", w.out, err)
		}
	}
	return nil
}

// tensorsOf lists the safetensors tensors an item becomes.
func tensorsOf(it Item) ([]safetensors.TensorInfo, error) {
	if it.Rank > 0 && !it.Format.Quantized() {
		return nil, fmt.Errorf("matrix %q: a low-rank correction (rank %d) needs a quantized format, not %q", it.Name, it.Rank, it.Format)
	}
	if it.Format.Kind == 0 || !it.Format.Quantized() {
		dt := it.DType
		switch it.Format.Kind {
		case lut.BF16:
			dt = safetensors.BF16
		case lut.FP16:
			dt = safetensors.F16
		}
		return []safetensors.TensorInfo{{Name: it.Name, DType: dt, Shape: it.Shape}}, nil
	}
	if len(it.Shape) != 2 {
		return nil, fmt.Errorf("matrix %q: shape %v is not 2-D", it.Name, it.Shape)
	}
	out, in := it.Shape[0], it.Shape[1]
	if err := it.Format.CheckShape(out, in); err != nil {
		return nil, fmt.Errorf("matrix %q: %w", it.Name, err)
	}
	key := Key(it.Name)
	sz := it.Format.Size(out, in, it.Rank)
	var ts []safetensors.TensorInfo
	if sz.LUT > 0 {
		f := it.Format
		ts = append(ts, safetensors.TensorInfo{Name: key + ".lut", DType: safetensors.F16, Shape: []int{f.Groups(out), f.Entries(), f.Dim}})
	}
	if it.Format.Kind == lut.Int8 {
		ts = append(ts, safetensors.TensorInfo{Name: key + ".idx", DType: safetensors.I8, Shape: []int{out, in}})
	} else {
		ts = append(ts, safetensors.TensorInfo{Name: key + ".idx", DType: safetensors.U8, Shape: []int{int(sz.Index)}})
	}
	ts = append(ts, safetensors.TensorInfo{Name: key + ".scale", DType: safetensors.F16, Shape: []int{out}})
	if it.Rank > 0 {
		ts = append(ts,
			safetensors.TensorInfo{Name: key + ".lr_a", DType: safetensors.F16, Shape: []int{out, it.Rank}},
			safetensors.TensorInfo{Name: key + ".lr_b", DType: safetensors.F16, Shape: []int{it.Rank, in}})
	}
	return ts, nil
}

// Key is the stem under which a quantized matrix's arrays are stored: its
// name without ".weight".
func Key(name string) string { return strings.TrimSuffix(name, ".weight") }

// padTensor names the zero bytes (U8, 1–63 of them) stored before the
// index array idx so that it starts on a cache line: "<key>.pad".
func padTensor(idx string) string { return strings.TrimSuffix(idx, ".idx") + ".pad" }

func infoBytes(ts []safetensors.TensorInfo) int64 {
	var n int64
	for _, t := range ts {
		n += int64(t.NumElements()) * int64(t.DType.Size())
	}
	return n
}

// plan splits the items into shards of about ShardSize bytes, and puts a
// padding tensor before every index array that would not start at a
// multiple of safetensors.DataAlign bytes of its shard's data area (which
// itself starts at such a multiple of the file): the kernels load index
// rows 64 bytes at a time, and rows that straddle cache lines read 20–35%
// slower (BENCHMARKS.md, issue 12).
func (w *Writer) plan() error {
	limit := w.opt.ShardSize
	if limit <= 0 {
		limit = 2 << 30
	}
	var cur int64
	w.pads = make([]int, len(w.items))
	for i, it := range w.items {
		ts, err := tensorsOf(it)
		if err != nil {
			return fmt.Errorf("bundle %s: %w", w.out, err)
		}
		b := infoBytes(ts)
		if len(w.shards) == 0 || (cur > 0 && cur+b > limit) {
			w.shards = append(w.shards, shardPlan{first: i})
			cur = 0
		}
		sp := &w.shards[len(w.shards)-1]
		sp.end = i + 1
		for _, t := range ts {
			if strings.HasSuffix(t.Name, ".idx") {
				if p := int(-cur & (safetensors.DataAlign - 1)); p > 0 {
					sp.infos = append(sp.infos, safetensors.TensorInfo{Name: padTensor(t.Name), DType: safetensors.U8, Shape: []int{p}})
					w.pads[i] = p
					cur += int64(p)
				}
			}
			sp.infos = append(sp.infos, t)
			cur += int64(t.NumElements()) * int64(t.DType.Size())
		}
	}
	for k := range w.shards {
		w.shards[k].name = fmt.Sprintf("model-%05d-of-%05d.safetensors", k+1, len(w.shards))
	}
	return nil
}

// Matrix writes the next item, a lut.Matrix of the declared format.
func (w *Writer) Matrix(name string, m *lut.Matrix) error {
	it, err := w.expect(name)
	if err != nil {
		return err
	}
	out, in := m.Dims()
	if m.Format() != it.Format || m.Rank() != it.Rank || out != it.Shape[0] || in != it.Shape[1] {
		return w.fail(fmt.Errorf("matrix %q: got %s %dx%d rank %d, declared %s %v rank %d", name, m.Format(), out, in, m.Rank(), it.Format, it.Shape, it.Rank))
	}
	facts, ts, err := EncodeMatrix(name, m)
	if err != nil {
		return w.fail(err)
	}
	if rot := facts.Rotation; (rot == nil) != (it.Rotation == nil) || rot != nil && *rot != *it.Rotation {
		return w.fail(fmt.Errorf("matrix %q: has %s, declared %s", name, rotationText(rot), rotationText(it.Rotation)))
	}
	arrays := make([][]byte, len(ts))
	for i, t := range ts {
		arrays[i] = t.Data
	}
	e := newEntry(it)
	e.SNR = w.opt.SNR[name]
	return w.writeItem(it, arrays, &e)
}

func rotationText(r *RotationEntry) string {
	if r == nil {
		return "no rotation"
	}
	return describeRotation(r)
}

// Raw writes the next item's bytes in its declared dtype.
func (w *Writer) Raw(name string, data []byte) error {
	it, err := w.expect(name)
	if err != nil {
		return err
	}
	if it.Format.Kind != 0 {
		return w.fail(fmt.Errorf("item %q is declared as %s: write it with Matrix", name, it.Format))
	}
	var e *MatrixEntry
	if it.Matrix {
		if len(it.Shape) != 2 {
			return w.fail(fmt.Errorf("matrix %q: shape %v is not 2-D", name, it.Shape))
		}
		ne := newEntry(it)
		e = &ne
	}
	return w.writeItem(it, [][]byte{data}, e)
}

func (w *Writer) expect(name string) (Item, error) {
	if w.err != nil {
		return Item{}, w.err
	}
	if w.next >= len(w.items) || w.items[w.next].Name != name {
		want := "nothing more"
		if w.next < len(w.items) {
			want = fmt.Sprintf("%q", w.items[w.next].Name)
		}
		return Item{}, w.fail(fmt.Errorf("got item %q, want %s", name, want))
	}
	return w.items[w.next], nil
}

func (w *Writer) fail(err error) error {
	if w.err == nil {
		w.err = fmt.Errorf("bundle %s: %w", w.out, err)
	}
	return w.err
}

// writeItem streams an item's arrays into its shard, opening the shard at
// its first item (its header holds the facts of all its matrices) and
// closing it after its last; e is the item's manifest entry (nil for a
// vector).
func (w *Writer) writeItem(it Item, arrays [][]byte, e *MatrixEntry) error {
	sp := &w.shards[w.curShard]
	if w.cur == nil {
		var entries []MatrixEntry
		for _, x := range w.items[sp.first:sp.end] {
			if x.Format.Kind != 0 || x.Matrix {
				entries = append(entries, newEntry(x))
			}
		}
		sw, err := createShard(filepath.Join(w.tmp, sp.name), sp.infos, shardMetadata(entries))
		if err != nil {
			return w.fail(err)
		}
		w.cur = sw
	}
	ts, _ := tensorsOf(it)
	if len(ts) != len(arrays) {
		return w.fail(fmt.Errorf("item %q: %d arrays for %d tensors", it.Name, len(arrays), len(ts)))
	}
	for i, t := range ts {
		if want := int64(t.NumElements()) * int64(t.DType.Size()); int64(len(arrays[i])) != want {
			return w.fail(fmt.Errorf("tensor %q: got %d bytes, want %d (%v %v)", t.Name, len(arrays[i]), want, t.DType, t.Shape))
		}
		if p := w.pads[w.next]; p > 0 && strings.HasSuffix(t.Name, ".idx") {
			if _, err := w.cur.Write(make([]byte, p)); err != nil {
				return w.fail(err)
			}
		}
		if _, err := w.cur.Write(arrays[i]); err != nil {
			return w.fail(err)
		}
	}
	if e != nil {
		w.man.Matrices = append(w.man.Matrices, *e)
	}
	w.next++
	if w.next == sp.end {
		if err := w.cur.Close(); err != nil {
			w.cur = nil
			return w.fail(err)
		}
		w.cur = nil
		w.curShard++
	}
	return nil
}

// Close checks that every item was written, hashes every file, writes the
// manifest last and publishes the bundle by renaming OUT.partial to OUT.
func (w *Writer) Close() error {
	if w.err != nil {
		w.Abort()
		return w.err
	}
	if w.next != len(w.items) {
		err := w.fail(fmt.Errorf("closed after %d of %d items", w.next, len(w.items)))
		w.Abort()
		return err
	}
	if err := w.finish(); err != nil {
		w.Abort()
		return w.fail(err)
	}
	return nil
}

func (w *Writer) finish() error {
	ents, err := os.ReadDir(w.tmp)
	if err != nil {
		return err
	}
	w.man.FormatVersion = FormatVersion
	w.man.Files = nil
	for _, e := range ents {
		if e.Name() == outpath.MarkerName {
			continue
		}
		n, sum, err := hashFile(filepath.Join(w.tmp, e.Name()))
		if err != nil {
			return err
		}
		w.man.Files = append(w.man.Files, FileEntry{Name: e.Name(), Bytes: n, SHA256: sum})
	}
	if w.man.ContentSHA256, err = w.man.ContentHash(); err != nil {
		return err
	}
	raw, err := json.MarshalIndent(&w.man, "", "  ")
	if err != nil {
		return err
	}
	if err := durable.WriteFile(filepath.Join(w.tmp, ManifestName), append(raw, '\n')); err != nil {
		return err
	}
	return w.stage.Publish("bundle")
}

// PartialKind is the marker kind of a bundle being written (OUT.partial).
const PartialKind = outpath.PartialKind

// Abort stops the export and removes OUT.partial. Safe to call twice and
// after Close.
func (w *Writer) Abort() {
	if w.cur != nil {
		w.cur.Abort()
		w.cur = nil
	}
	w.stage.Abort()
}
