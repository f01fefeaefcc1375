package chunk

import (
	"errors"
	"math"
	"slices"
	"testing"
)

// TestKVFormats27B: on the 27B's 16 attention layers (4 KV heads of 256)
// the fp16 KV cache is 64 KiB per position and the int8-V one 48.125 KiB,
// saving about 0.99 GiB at 65472 positions: the reference's figures
// (docs/reference-pipeline.md §8), from the formulas of KVBytesPerToken*.
func TestKVFormats27B(t *testing.T) {
	c := Reference27B()
	attn := 0
	for _, k := range c.Layers {
		if k.String() == "full_attention" {
			attn++
		}
	}
	fp16 := int64(attn) * KVBytesPerTokenFP16(&c)
	int8v := int64(attn) * KVBytesPerTokenInt8V(&c)
	if fp16 != 64<<10 {
		t.Errorf("fp16 KV %d bytes per position, want 64 KiB", fp16)
	}
	if int8v*1000 != 48125*1024 {
		t.Errorf("int8-V KV %d bytes per position (%.3f KiB), want 48.125 KiB", int8v, float64(int8v)/1024)
	}
	saved := float64((fp16-int8v)*int64(KVLen(64<<10))) / (1 << 30)
	if KVLen(64<<10) != 65472 || math.Round(saved*100) != 99 {
		t.Errorf("kv_len %d, saving %.3f GiB; want 65472 and about 0.99 GiB", KVLen(64<<10), saved)
	}
}

// TestStateBytes27B: one DeltaNet state set of the 27B at P = 8, computed
// term by term from §5.2's buffer shapes: recurrent 48×128×128, conv
// (8+3)×10240, pending 48×(3·8+1)×128, fp16.
func TestStateBytes27B(t *testing.T) {
	c := Reference27B()
	want := int64(2 * (48*128*128 + 11*10240 + 48*25*128))
	if got := StateBytes(&c, 8); got != want {
		t.Errorf("state %d bytes per layer, want %d", got, want)
	}
}

func TestParseContexts(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []int
	}{
		{"8k,16k,32k", []int{8192, 16384, 32768}},
		{"64K", []int{65536}},
		{" 8192 , 4k", []int{4096, 8192}},
		{"65", []int{65}},
	} {
		got, err := ParseContexts(c.in)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%q: %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"", "0", "abc", "64", "8k,,16k", "-8k", "1.5k", "8k,8192", "k", "99999999999", "16385k"} {
		if got, err := ParseContexts(in); !errors.Is(err, ErrOptions) {
			t.Errorf("%q: %v, %v; want an ErrOptions error", in, got, err)
		}
	}
}

func TestFormatContext(t *testing.T) {
	for n, want := range map[int]string{8192: "8K", 65536: "64K", 1000: "1000", 1536: "1536"} {
		if got := FormatContext(n); got != want {
			t.Errorf("%d: %q, want %q", n, got, want)
		}
	}
}
