package ane

import (
	"math"

	"forge/tensor"
)

// MaxFP16 is the largest finite IEEE binary16 value; MinNormalFP16 the
// smallest normal one (2⁻¹⁴). Below it lie the subnormals, which the
// Neural Engine flushes to zero (reference-pipeline §3.2).
const (
	MaxFP16       = 65504
	MinNormalFP16 = 1.0 / 16384
)

// Round returns x as the device stores it: rounded to the nearest binary16
// value (ties to even), a result in the subnormal range flushed to a zero
// of x's sign, and one beyond MaxFP16 (after rounding: |x| ≥ 65520) an
// infinity. NaN stays NaN.
func Round(x float32) float32 {
	r, _ := round(x)
	return r
}

// outcome classifies one rounding.
type outcome uint8

const (
	roundNormal  outcome = iota // a finite normal value or zero
	roundFlushed                // a non-zero value in the subnormal range, flushed to zero
	roundInf                    // a finite value that overflowed to ±Inf
	roundNaN                    // NaN or an infinity that was already there
)

func round(x float32) (float32, outcome) {
	h := tensor.F32ToF16(x)
	switch {
	case h&0x7c00 == 0 && h&0x3ff != 0:
		return math.Float32frombits(uint32(h&0x8000) << 16), roundFlushed
	case h&0x7c00 == 0x7c00:
		if math.IsInf(float64(x), 0) || x != x {
			return x, roundNaN
		}
		return tensor.F16ToF32(h), roundInf
	case h&0x7fff == 0 && x != 0:
		return tensor.F16ToF32(h), roundFlushed // below half the smallest subnormal
	}
	return tensor.F16ToF32(h), roundNormal
}

// Stat counts what rounding did to the values of one kind of tensor.
type Stat struct {
	N        int64   // values rounded
	Flushed  int64   // non-zero values in the subnormal range, flushed to zero
	Overflow int64   // finite values that became ±Inf
	NaN      int64   // NaN or ±Inf on arrival (inherited from an earlier overflow)
	MaxAbs   float64 // the largest finite |value| before rounding
}

// SubnormalFrac is Flushed/N (0 for no values).
func (s Stat) SubnormalFrac() float64 {
	if s.N == 0 {
		return 0
	}
	return float64(s.Flushed) / float64(s.N)
}

func (s *Stat) add(o Stat) {
	s.N += o.N
	s.Flushed += o.Flushed
	s.Overflow += o.Overflow
	s.NaN += o.NaN
	s.MaxAbs = math.Max(s.MaxAbs, o.MaxAbs)
}

// roundInto rounds x in place and counts into st.
func roundInto(x []float32, st *Stat) {
	st.N += int64(len(x))
	mx := float32(st.MaxAbs)
	for i, v := range x {
		r, o := round(v)
		x[i] = r
		switch o {
		case roundFlushed:
			st.Flushed++
		case roundInf:
			st.Overflow++
		case roundNaN:
			st.NaN++
			continue
		}
		if a := float32(math.Abs(float64(v))); a > mx {
			mx = a
		}
	}
	st.MaxAbs = float64(mx)
}
