package model

import (
	"fmt"
	"math"

	"forge/tensor"
)

// KV is how a State stores the attention layers' keys and values.
type KV int

const (
	// KVFloat32 keeps keys and values in fp32: exact, 8 bytes per
	// element pair.
	KVFloat32 KV = iota
	// KVInt8 keeps keys in fp16 and values in int8 with one fp32 scale per
	// token and KV head (max|v|/127, round to nearest): the reference's
	// "v8" cache (reference-pipeline.md §8), 3 + 4/D bytes per element
	// pair. Quantization happens when a token's K and V enter the cache,
	// so prefill attention reads the quantized cache too.
	KVInt8
)

// String is the name ParseKV reads.
func (k KV) String() string {
	if k == KVInt8 {
		return "int8"
	}
	return "f32"
}

// ParseKV reads a KV cache format: "f32" (also "fp32" or "") or "int8".
func ParseKV(s string) (KV, error) {
	switch s {
	case "", "f32", "fp32":
		return KVFloat32, nil
	case "int8", "v8":
		return KVInt8, nil
	}
	return 0, fmt.Errorf("KV cache format %q: want f32 or int8", s)
}

// NewStateKV returns an empty state whose attention layers store keys and
// values in format kv.
func (m *Model) NewStateKV(kv KV) *State {
	s := m.NewState()
	s.kv = kv
	return s
}

// KV returns the state's KV cache format.
func (s *State) KV() KV { return s.kv }

// kvInt8 is an attention layer's cache in the KVInt8 format.
type kvInt8 struct {
	k  []uint16  // [pos][Hkv·D] fp16 keys
	v  []int8    // [pos][Hkv·D] int8 values
	vs []float32 // [pos][Hkv] value scales
}

// append quantizes T rows of keys and values [T, Hkv·D] into the cache.
func (q *kvInt8) append(k, v []float32, hkv, D int) {
	n := len(q.k)
	q.k = append(q.k, make([]uint16, len(k))...)
	tensor.F32ToF16Slice(q.k[n:], k)
	q.v = append(q.v, make([]int8, len(v))...)
	for h := 0; h*D < len(v); h++ {
		src, dst := v[h*D:(h+1)*D], q.v[n+h*D:n+(h+1)*D]
		var amax float32
		for _, x := range src {
			amax = max(amax, float32(math.Abs(float64(x))))
		}
		scale := amax / 127
		q.vs = append(q.vs, scale)
		if scale == 0 {
			clear(dst)
			continue
		}
		inv := 1 / scale
		for i, x := range src {
			dst[i] = int8(max(-127, min(127, math.Round(float64(x*inv)))))
		}
	}
}

// truncate keeps the first pos tokens.
func (q *kvInt8) truncate(pos, hkv, D int) {
	q.k, q.v, q.vs = q.k[:pos*hkv*D], q.v[:pos*hkv*D], q.vs[:pos*hkv]
}

// grow makes room for n more tokens.
func (q *kvInt8) grow(n, hkv, D int) {
	q.k = growCap(q.k, n*hkv*D)
	q.v = growCap(q.v, n*hkv*D)
	q.vs = growCap(q.vs, n*hkv)
}

func growCap[T any](s []T, n int) []T {
	if cap(s)-len(s) >= n {
		return s
	}
	g := make([]T, len(s), len(s)+n)
	copy(g, s)
	return g
}

// dotF16 is Σ q[i]·k[i] with k in fp16.
func dotF16(q []float32, k []uint16) float32 {
	k = k[:len(q)]
	var s0, s1 float32
	i := 0
	for ; i+1 < len(q); i += 2 {
		s0 += q[i] * tensor.F16ToF32(k[i])
		s1 += q[i+1] * tensor.F16ToF32(k[i+1])
	}
	if i < len(q) {
		s0 += q[i] * tensor.F16ToF32(k[i])
	}
	return s0 + s1
}

// axpyInt8 is y += a·x with x in int8.
func axpyInt8(y []float32, a float32, x []int8) {
	x = x[:len(y)]
	for i, v := range x {
		y[i] += a * float32(v)
	}
}
