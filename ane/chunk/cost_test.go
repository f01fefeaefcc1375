package chunk

import (
	"math"
	"testing"

	"forge/lut"
)

// TestCalibration: the fit meets the two measurements it was fitted to
// (by construction), and — the real test of the model — projects the two
// it was not fitted to, 97.4 ms at 16K and 108.0 ms at 32K, within 1%:
// the measured step time is linear in the KV bytes this package counts.
func TestCalibration(t *testing.T) {
	c, err := Calibrate()
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Points) != 4 {
		t.Fatalf("%d points", len(c.Points))
	}
	for _, p := range c.Points {
		tol := 0.01 * p.MeasuredMS
		if p.Fitted {
			tol = 1e-9 * p.MeasuredMS
		}
		if math.Abs(p.ProjectedMS-p.MeasuredMS) > tol {
			t.Errorf("%s (fitted %t): projected %.3f ms, measured %.1f", FormatContext(p.Ctx), p.Fitted, p.ProjectedMS, p.MeasuredMS)
		}
	}
	// Sanity, not a fit: the weight bandwidth sits near the reference's
	// measured weight-streaming rates (125–165 GB/s at the MLP shape, §2
	// of the seed's notes) — a bits-for-bytes slip would be 8× off.
	if c.Bandwidth.Weights < 90 || c.Bandwidth.Weights > 165 || c.Bandwidth.KV < 30 || c.Bandwidth.KV > c.Bandwidth.Weights {
		t.Errorf("bandwidths %+v GB/s", c.Bandwidth)
	}
	t.Logf("B_w %.2f GB/s, B_kv %.2f GB/s; projected 16K %.2f ms, 32K %.2f ms", c.Bandwidth.Weights, c.Bandwidth.KV, c.Points[1].ProjectedMS, c.Points[2].ProjectedMS)
}

// TestDeployedMixBytes: the calibration's model of the deployed export
// holds the 9.06 GiB of quantized weights the reference reports for it
// (the seed's notes §1) within 0.5%: the mix and the byte accounting
// agree with the measured export.
func TestDeployedMixBytes(t *testing.T) {
	c := Reference27B()
	var q int64
	for _, w := range deployedWeights(&c) {
		if w.Format.Quantized() {
			q += w.Bytes
		}
	}
	if gib := float64(q) / (1 << 30); math.Abs(gib/9.06-1) > 0.005 {
		t.Errorf("deployed mix: %.3f GiB of quantized matrices, the reference reports 9.06", gib)
	}
}

// TestProjection27B: planning the 27B with its deployed mix at the
// default options reproduces the measured 91.5 ms at 8K, and step times
// rise with the context and fall from fp16 to int8-V KV.
func TestProjection27B(t *testing.T) {
	c := Reference27B()
	p, err := New(&c, deployedWeights(&c), Options{Contexts: []int{8 << 10, 16 << 10, 32 << 10, 64 << 10}})
	if err != nil {
		t.Fatal(err)
	}
	es := p.Totals.Entries
	if math.Abs(es[0].MSPerStepInt8V-91.5) > 1e-6 || math.Abs(es[3].MSPerStepInt8V-131.5) > 1e-6 {
		t.Errorf("int8-V: %.4f ms at 8K, %.4f at 64K; want 91.5 and 131.5", es[0].MSPerStepInt8V, es[3].MSPerStepInt8V)
	}
	for i, e := range es {
		if !(e.MSPerStepFP16 > e.MSPerStepInt8V) || (i > 0 && !(e.MSPerStepInt8V > es[i-1].MSPerStepInt8V)) {
			t.Errorf("%s: fp16 %.2f ms, int8-V %.2f ms (previous %.2f)", FormatContext(e.Ctx), e.MSPerStepFP16, e.MSPerStepInt8V, es[max(i-1, 0)].MSPerStepInt8V)
		}
	}
	t.Logf("64K/8K step time: projected %.3f (int8-V), measured %.3f", es[3].MSPerStepInt8V/es[0].MSPerStepInt8V, 131.5/91.5)
	// A given bandwidth replaces only its own term.
	q, err := New(&c, deployedWeights(&c), Options{Bandwidth: Bandwidths{Weights: 2 * p.BandwidthGBs}})
	if err != nil {
		t.Fatal(err)
	}
	e, kv := q.Totals.Entries[0], float64(es[0].KVBytesInt8V)/p.KVBandwidthGBs/1e6
	if q.KVBandwidthGBs != p.KVBandwidthGBs || math.Abs(e.MSPerStepInt8V-(kv+(91.5-kv)/2)) > 1e-6 {
		t.Errorf("at twice the weight bandwidth: %.4f ms at 8K, want %.4f", e.MSPerStepInt8V, kv+(91.5-kv)/2)
	}
}

// TestCostBytes: 3- and 6-bit indices are charged as 4- and 8-bit ones,
// per-group scalar LUTs 1.2×, other formats at their bytes.
func TestCostBytes(t *testing.T) {
	const out, in = 512, 256
	size := func(f lut.Format, r int) int64 { return f.Size(out, in, r).Total() }
	lut3, lut6, g := lut.LUTFormat(3, 0), lut.VectorFormat(2, 64), lut.LUTFormat(4, 128)
	for _, c := range []struct {
		name string
		f    lut.Format
		rank int
		want int64
	}{
		{"LUT4", lut.LUT4, 0, size(lut.LUT4, 0)},
		{"LUT3 reads as LUT4", lut3, 0, size(lut3, 0) + int64(out*in/8)},
		{"LUT3 with rank 8", lut3, 8, size(lut3, 8) + int64(out*in/8)},
		{"vector 2x64 reads 8-bit indices", lut6, 0, size(lut6, 0) + int64(out/2*in*2/8)},
		{"LUT4 g128 costs 1.2×", g, 0, int64(math.Round(1.2 * float64(size(g, 0))))},
		{"bf16", lut.BFloat16, 0, 2 * out * in},
	} {
		w := Weight{Format: c.f, Rank: c.rank, Bytes: size(c.f, c.rank)}
		if got := costBytes(w, out, in); got != c.want {
			t.Errorf("%s: %d cost bytes, want %d", c.name, got, c.want)
		}
	}
}
