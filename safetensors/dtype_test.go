package safetensors

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestDType(t *testing.T) {
	sizes := map[DType]int{BF16: 2, F16: 2, F32: 4, I8: 1, U8: 1, I16: 2, I32: 4, I64: 8, BOOL: 1}
	for d, size := range sizes {
		if d.Size() != size {
			t.Errorf("%v.Size() = %d, want %d", d, d.Size(), size)
		}
		got, err := ParseDType(d.String())
		if err != nil || got != d {
			t.Errorf("ParseDType(%q) = %v, %v; want %v", d.String(), got, err, d)
		}
	}
	for _, bad := range []DType{0, -1, BOOL + 1} {
		if bad.Size() != 0 || !strings.HasPrefix(bad.String(), "DType(") {
			t.Errorf("invalid %d: Size %d String %q", int(bad), bad.Size(), bad.String())
		}
	}
	for _, s := range []string{"", "bf16", "F64", "F8_E4M3", "DType(1)"} {
		if _, err := ParseDType(s); !errors.Is(err, ErrFormat) {
			t.Errorf("ParseDType(%q) error = %v, want ErrFormat", s, err)
		}
	}
}

func TestCheckedBytes(t *testing.T) {
	cases := []struct {
		name  string
		shape []int
		dtype DType
		want  int64
		err   string // substring of the error; "" for success
	}{
		{"scalar", nil, F32, 4, ""},
		{"matrix", []int{3, 4}, BF16, 24, ""},
		{"zero dim", []int{5, 0, 7}, I64, 0, ""},
		{"negative", []int{2, -1}, U8, 0, "negative dimension"},
		{"element overflow", []int{1 << 32, 1 << 32}, U8, 0, "element count overflows"},
		{"overflow before zero", []int{1 << 40, 1 << 40, 0}, U8, 0, "element count overflows"},
		{"byte overflow", []int{math.MaxInt64 / 2}, F32, 0, "byte size overflows"},
		{"largest u8", []int{math.MaxInt64}, U8, math.MaxInt64, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := checkedBytes(c.shape, c.dtype)
			if c.err == "" {
				if err != nil || got != c.want {
					t.Fatalf("got %d, %v; want %d", got, err, c.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("error = %v, want one containing %q", err, c.err)
			}
		})
	}
}

func TestNumElements(t *testing.T) {
	for _, c := range []struct {
		shape []int
		want  int
	}{{nil, 1}, {[]int{}, 1}, {[]int{7}, 7}, {[]int{2, 3, 4}, 24}, {[]int{2, 0}, 0}} {
		if got := (TensorInfo{Shape: c.shape}).NumElements(); got != c.want {
			t.Errorf("NumElements(%v) = %d, want %d", c.shape, got, c.want)
		}
	}
}
