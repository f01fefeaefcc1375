package lut

import "fmt"

// Where is the outcome of a placement check.
type Where uint8

const (
	// OnANE: the Neural Engine runs the matrix (possibly split into
	// several convs, see Placement.Convs).
	OnANE Where = iota + 1
	// OnCPU: the format is expressible, but Core ML falls back to the CPU.
	OnCPU
	// Inexpressible: no Core ML LUT op can hold the format.
	Inexpressible
)

func (w Where) String() string {
	switch w {
	case OnANE:
		return "runs on the ANE"
	case OnCPU:
		return "falls back to the CPU"
	case Inexpressible:
		return "cannot be expressed"
	}
	return fmt.Sprintf("Where(%d)", uint8(w))
}

// ANE limits (docs/quantization.md §1, measured on the target hardware).
const (
	// ANEMaxLUTValues is the most values one LUT may hold (entries × vector length).
	ANEMaxLUTValues = 256
	// ANEMaxVecLen is the longest vector a vector LUT may have.
	ANEMaxVecLen = 16
	// ANEMaxConvOut is the most output channels of one conv.
	ANEMaxConvOut = 16384
)

// Placement says where a format at a shape runs on Apple's Neural Engine
// stack. forge cannot run an ANE; this reports the measured rules.
type Placement struct {
	Where Where
	// Reason explains an OnCPU or Inexpressible outcome; for OnANE it may
	// carry a cost note (grouped LUTs ~20% slower, 3/6-bit read as 4/8).
	Reason string
	// Convs is the number of convs the matrix is split into along Cout
	// (⌈Cout/16384⌉, rounded so no vector is cut); 1 when it fits one.
	Convs int
	// ConvOut is the most output channels of one of those convs.
	ConvOut int
}

// String is a one-line summary, e.g. "runs on the ANE as 16 convs of
// ≤16384 channels" or "falls back to the CPU: per-group vector LUTs …".
func (p Placement) String() string {
	s := p.Where.String()
	if p.Where == OnANE && p.Convs > 1 {
		s += fmt.Sprintf(" as %d convs of ≤%d channels", p.Convs, p.ConvOut)
	}
	if p.Reason != "" {
		s += ": " + p.Reason
	}
	return s
}

// Place applies the ANE placement rules of docs/quantization.md §1 to format f
// at shape out×in:
//   - a LUT holds at most 256 values (entries × vector length) and vectors
//     are at most 16 long, else Inexpressible (vectors run along Cout only
//     and index widths are 1/2/3/4/6/8 by construction of Format);
//   - per-group vector LUTs fall back to the CPU;
//   - per-group scalar LUTs stay on the ANE at ~20% extra time when the
//     group size divides the rows (Core ML's per-grouped-channel LUT has
//     equal groups), else they fall back to the CPU;
//   - 3- and 6-bit indices are read like 4- and 8-bit ones (no speed gain);
//   - bf16 runs as fp16 on the ANE; INT8 per-channel runs on the ANE;
//   - one conv has at most 16,384 output channels: a larger Cout is split
//     into ⌈Cout/16384⌉ convs (Convs), never cutting a d-row vector.
//
// A format that does not fit the shape (CheckShape) is Inexpressible.
func Place(f Format, out, in int) Placement {
	if err := f.CheckShape(out, in); err != nil {
		return Placement{Where: Inexpressible, Reason: err.Error()}
	}
	var notes string
	switch f.Kind {
	case BF16:
		notes = "bf16 weights run as fp16"
	case Vector:
		if f.Dim > ANEMaxVecLen {
			return Placement{Where: Inexpressible, Reason: fmt.Sprintf("vector length %d > %d", f.Dim, ANEMaxVecLen)}
		}
		if v := f.Entries() * f.Dim; v > ANEMaxLUTValues {
			return Placement{Where: Inexpressible, Reason: fmt.Sprintf(
				"a LUT of %d entries × %d = %d values exceeds %d", f.Entries(), f.Dim, v, ANEMaxLUTValues)}
		}
		if f.Group > 0 && f.Group < out {
			return Placement{Where: OnCPU, Reason: fmt.Sprintf(
				"per-group vector LUTs (%d groups of %d rows) are not supported on the ANE", f.Groups(out), f.Group)}
		}
	case Scalar:
		if f.Group > 0 && f.Group < out && out%f.Group != 0 {
			return Placement{Where: OnCPU, Reason: fmt.Sprintf(
				"Core ML's per-group LUTs need the group size to divide the rows: %d rows are not a multiple of %d", out, f.Group)}
		}
		if f.Group > 0 && f.Group < out {
			notes = fmt.Sprintf("%d per-group scalar LUTs cost ~20%% more time than one per-tensor LUT", f.Groups(out))
		}
	}
	if f.Bits == 3 || f.Bits == 6 {
		notes = join(notes, fmt.Sprintf("%d-bit indices are read like %d-bit ones", f.Bits, map[int]int{3: 4, 6: 8}[f.Bits]))
	}
	p := Placement{Where: OnANE, Reason: notes, Convs: 1, ConvOut: out}
	if out > ANEMaxConvOut {
		d := max(f.Dim, 1)
		per := ANEMaxConvOut / d * d
		p.Convs = (out + per - 1) / per
		p.ConvOut = min(per, out)
	}
	return p
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
