package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	"forge/tensor"
)

// Codebook is K entries of length D whose values are fp16-representable
// (docs/quantization.md §2: entries are rounded to fp16 before any weight is
// rounded to them). Scalar codebooks (D = 1) are sorted ascending.
type Codebook struct {
	D, K   int
	Values []float32 // [K][D]
}

// Entry returns entry k (aliasing Values).
func (c *Codebook) Entry(k int) []float32 { return c.Values[k*c.D : (k+1)*c.D] }

// FP16 returns the entries as fp16 bit patterns, [K][D] (exact: every
// value is fp16-representable).
func (c *Codebook) FP16() []uint16 {
	h := make([]uint16, len(c.Values))
	tensor.F32ToF16Slice(h, c.Values)
	return h
}

// Nearest returns the index of the entry nearest to v (len D) in squared
// Euclidean distance, the lowest index on ties.
func (c *Codebook) Nearest(v []float64) int {
	if c.D == 1 {
		return c.nearestScalar(v[0])
	}
	best, bd := 0, math.Inf(1)
	for k := range c.K {
		var dist float64
		for t, e := range c.Entry(k) {
			diff := v[t] - float64(e)
			dist += diff * diff
		}
		if dist < bd {
			best, bd = k, dist
		}
	}
	return best
}

// nearestScalar: binary search over the sorted entries; a value exactly
// halfway between two entries goes to the lower one.
func (c *Codebook) nearestScalar(v float64) int {
	e := c.Values
	i, j := 0, len(e) // first entry ≥ v, by bisection
	for i < j {
		h := int(uint(i+j) >> 1)
		if float64(e[h]) < v {
			i = h + 1
		} else {
			j = h
		}
	}
	switch {
	case i == 0:
		return 0
	case i == len(e):
		return firstEqual(e, len(e)-1)
	}
	lo, hi := float64(e[i-1]), float64(e[i])
	if v-lo <= hi-v {
		return firstEqual(e, i-1)
	}
	return i
}

// firstEqual returns the first index of the run of entries equal to e[i]
// (duplicates after fp16 rounding): the lowest index wins ties.
func firstEqual(e []float32, i int) int {
	for i > 0 && e[i-1] == e[i] {
		i--
	}
	return i
}

// roundF16 rounds every value to the nearest fp16-representable float32.
func roundF16(v []float32) {
	for i, x := range v {
		v[i] = tensor.F16ToF32(tensor.F32ToF16(x))
	}
}

// scalarMaxIter caps the 1-D Lloyd iterations. Each costs O(K log n) on
// the sorted data (prefix sums), so the cap is generous; iterations stop
// earlier once no centroid moves.
const scalarMaxIter = 1000

// FitScalar fits a K-entry scalar codebook to values v with non-negative
// weights wt (nil: all 1) by weighted 1-D Lloyd iterations (docs/quantization.md
// §2): minimize Σ_i wt[i]·(v[i] − c(v[i]))². The data are sorted once;
// with prefix sums of wt and wt·v, each iteration finds the clusters (the
// runs between midpoints of neighbouring centroids) by binary search and
// moves every centroid to its cluster's weighted mean, exactly. Centroids
// start at the weighted quantiles (i+½)/K, so the fit is deterministic.
// An empty cluster keeps its centroid. The result is rounded to fp16 and
// sorted. v must be finite and non-empty; FitScalar sorts a copy.
func FitScalar(v, wt []float64, k int) (*Codebook, error) {
	if k < 1 || len(v) == 0 || (wt != nil && len(wt) != len(v)) {
		return nil, fmt.Errorf("quant: FitScalar: %d values, %d weights, K = %d", len(v), len(wt), k)
	}
	s := sortedPairs(v, wt)
	cw, cs := make([]float64, len(s)+1), make([]float64, len(s)+1) // prefix Σw, Σw·v
	for i, p := range s {
		cw[i+1], cs[i+1] = cw[i]+p.w, cs[i]+p.w*p.v
	}
	if cw[len(s)] <= 0 {
		return nil, fmt.Errorf("quant: FitScalar: weights sum to %g", cw[len(s)])
	}
	c := make([]float64, k)
	for i := range c { // weighted quantile (i+½)/K
		target := (float64(i) + 0.5) / float64(k) * cw[len(s)]
		j := sort.Search(len(s), func(j int) bool { return cw[j+1] >= target })
		c[i] = s[min(j, len(s)-1)].v
	}
	bounds := make([]int, k+1) // cluster i is s[bounds[i]:bounds[i+1]]
	bounds[k] = len(s)
	for range scalarMaxIter {
		for i := 1; i < k; i++ {
			mid := (c[i-1] + c[i]) / 2
			bounds[i] = sort.Search(len(s), func(j int) bool { return s[j].v > mid })
		}
		moved := false
		for i := range k {
			a, b := bounds[i], bounds[i+1]
			if b <= a || cw[b]-cw[a] <= 0 {
				continue
			}
			m := (cs[b] - cs[a]) / (cw[b] - cw[a])
			m = min(max(m, s[a].v), s[b-1].v) // guard rounding in the prefix sums
			if m != c[i] {
				c[i], moved = m, true
			}
		}
		if !moved {
			break
		}
		slices.Sort(c) // an empty cluster can leave c out of order
	}
	out := &Codebook{D: 1, K: k, Values: make([]float32, k)}
	for i, x := range c {
		out.Values[i] = float32(x)
	}
	roundF16(out.Values)
	slices.Sort(out.Values)
	return out, nil
}

type pair struct{ v, w float64 }

// sortedPairs returns (v, wt) pairs sorted by v (weights 1 when wt is nil).
func sortedPairs(v, wt []float64) []pair {
	if wt == nil { // sorting plain floats is about twice as fast
		sv := slices.Clone(v)
		slices.Sort(sv)
		s := make([]pair, len(v))
		for i, x := range sv {
			s[i] = pair{x, 1}
		}
		return s
	}
	s := make([]pair, len(v))
	for i, x := range v {
		s[i] = pair{x, 1}
		if wt != nil {
			s[i].w = wt[i]
		}
	}
	slices.SortFunc(s, func(a, b pair) int {
		switch {
		case a.v < b.v:
			return -1
		case a.v > b.v:
			return 1
		}
		return 0
	})
	return s
}

// FitVectors fits K entries of length d to the n = len(v)/d vectors v
// ([n][d]) with non-negative weights wt (nil: all 1) by weighted k-means
// (docs/quantization.md §2): at most opt.samples() vectors sampled without
// replacement, opt.inits() k-means++ initializations, each refined by at
// most opt.maxIter() Lloyd iterations (fewer once no assignment changes or
// the error drops by less than a relative 10⁻⁶); the run with the least
// weighted squared error wins. An empty cluster is
// re-seeded with the sampled vector of largest weighted error. All of it
// depends on opt.Seed only (not on GOMAXPROCS): same seed, same codebook.
// The result is rounded to fp16.
func FitVectors(v, wt []float64, d, k int, opt Options) (*Codebook, error) {
	if d < 1 || k < 1 || len(v) == 0 || len(v)%d != 0 || (wt != nil && len(wt) != len(v)/d) {
		return nil, fmt.Errorf("quant: FitVectors: %d values, d = %d, %d weights, K = %d", len(v), d, len(wt), k)
	}
	n := len(v) / d
	rng := rand.New(rand.NewPCG(opt.Seed, 0x6b6d65616e73)) // "kmeans"
	idx := sampleIndices(rng, n, opt.samples())
	km := &kmeans{d: d, k: k, x: make([]float64, len(idx)*d), w: make([]float64, len(idx))}
	for i, j := range idx {
		copy(km.x[i*d:(i+1)*d], v[j*d:(j+1)*d])
		km.w[i] = 1
		if wt != nil {
			km.w[i] = wt[j]
		}
	}
	var wsum float64
	for _, w := range km.w {
		wsum += w
	}
	if !(wsum > 0) {
		return nil, fmt.Errorf("quant: FitVectors: sampled weights sum to %g", wsum)
	}
	var best []float64
	bestErr := math.Inf(1)
	for init := range opt.inits() {
		if err := opt.context().Err(); err != nil {
			return nil, err
		}
		r := rand.New(rand.NewPCG(opt.Seed, uint64(init)+1))
		c := km.seed(r)
		e := km.lloyd(c, opt.maxIter())
		if e < bestErr || best == nil {
			best, bestErr = c, e
		}
	}
	out := &Codebook{D: d, K: k, Values: make([]float32, k*d)}
	for i, x := range best {
		out.Values[i] = float32(x)
	}
	roundF16(out.Values)
	return out, nil
}

// sampleIndices returns min(m, n) indices of [0, n), increasing, chosen
// uniformly without replacement (Knuth's selection sampling).
func sampleIndices(r *rand.Rand, n, m int) []int {
	if m >= n {
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		return idx
	}
	idx := make([]int, 0, m)
	for i := 0; i < n && len(idx) < m; i++ {
		if r.Float64()*float64(n-i) < float64(m-len(idx)) {
			idx = append(idx, i)
		}
	}
	return idx
}

// kmeans holds sampled vectors x [n][d] with weights w.
type kmeans struct {
	d, k int
	x, w []float64
}

func (km *kmeans) n() int { return len(km.w) }

func (km *kmeans) vec(i int) []float64 { return km.x[i*km.d : (i+1)*km.d] }

func dist2(a, b []float64) float64 {
	b = b[:len(a)]
	var s float64
	for t := range a {
		e := a[t] - b[t]
		s += e * e
	}
	return s
}

// seed picks K centers by weighted k-means++: the first with probability
// ∝ w, each next ∝ w·D² (D the distance to the nearest center so far).
// With fewer distinct vectors than K, the rest repeat the last center.
func (km *kmeans) seed(r *rand.Rand) []float64 {
	n, d := km.n(), km.d
	c := make([]float64, km.k*d)
	d2 := make([]float64, n)
	for i := range d2 {
		d2[i] = 1 // first pick ∝ w
	}
	for j := range km.k {
		var total float64
		for i := range n {
			total += km.w[i] * d2[i]
		}
		pick := n - 1
		if total > 0 {
			u, acc := r.Float64()*total, 0.0
			for i := range n {
				acc += km.w[i] * d2[i]
				if acc > u {
					pick = i
					break
				}
			}
		} else if j > 0 {
			copy(c[j*d:], c[(j-1)*d:j*d])
			continue
		}
		copy(c[j*d:(j+1)*d], km.vec(pick))
		cj := c[j*d : (j+1)*d]
		parallel(n, 4096, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				if e := dist2(km.vec(i), cj); j == 0 || e < d2[i] {
					d2[i] = e
				}
			}
		})
	}
	return c
}

// lloyd refines centers c in place for at most iters iterations and
// returns the final weighted squared error. Assignments use Hamerly's
// bounds (Hamerly 2010, "Making k-means even faster"): they give exactly
// the brute-force assignments but skip the scan over all K centers for
// the (soon nearly all) vectors whose nearest center cannot have changed.
func (km *kmeans) lloyd(c []float64, iters int) float64 {
	n, d, k := km.n(), km.d, km.k
	h := &hamerly{
		assign: make([]int32, n),
		up:     make([]float64, n),
		lo:     make([]float64, n),
		err:    make([]float64, n),
		half:   make([]float64, k),
		move:   make([]float64, k),
	}
	sum, wsum, old := make([]float64, k*d), make([]float64, k), make([]float64, k*d)
	prev := math.Inf(1)
	for it := 0; ; it++ {
		changed := km.assign(c, h, it == 0)
		total := sumOf(h.err)
		if !changed || it >= iters || total >= prev*(1-lloydTol) {
			break
		}
		prev = total
		copy(old, c)
		// Weighted means, summed in index order (deterministic).
		clear(sum)
		clear(wsum)
		for i := range n {
			a := int(h.assign[i])
			wsum[a] += km.w[i]
			for t, x := range km.vec(i) {
				sum[a*d+t] += km.w[i] * x
			}
		}
		for j := range k {
			if wsum[j] > 0 {
				for t := range d {
					c[j*d+t] = sum[j*d+t] / wsum[j]
				}
				continue
			}
			// Empty cluster: re-seed at the worst-served vector.
			worst := 0
			for i := range n {
				if h.err[i] > h.err[worst] {
					worst = i
				}
			}
			copy(c[j*d:(j+1)*d], km.vec(worst))
			h.err[worst] = 0
		}
		h.moved(c, old, d)
	}
	return sumOf(h.err)
}

// hamerly is the per-vector state of bounded k-means: assign[i] is vector
// i's center, up[i] ≥ its distance to that center, lo[i] ≤ its distance to
// every other center, err[i] = w[i]·(distance to its center)²; half[j] is
// half the distance from center j to its nearest other center, move[j]
// how far center j moved in the last update.
type hamerly struct {
	assign           []int32
	up, lo, err      []float64
	half, move       []float64
	maxMove, maxNext float64 // largest and second largest move
	argMax           int32
}

// moved records how far each center moved from old and loosens the bounds
// by it: up grows by the own center's move, lo shrinks by the largest move
// of any other center.
func (h *hamerly) moved(c, old []float64, d int) {
	h.maxMove, h.maxNext, h.argMax = 0, 0, -1
	for j := range h.move {
		m := math.Sqrt(dist2(c[j*d:(j+1)*d], old[j*d:(j+1)*d]))
		h.move[j] = m
		switch {
		case m > h.maxMove:
			h.maxMove, h.maxNext, h.argMax = m, h.maxMove, int32(j)
		case m > h.maxNext:
			h.maxNext = m
		}
	}
	parallel(len(h.up), 4096, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			a := h.assign[i]
			h.up[i] += h.move[a]
			if a == h.argMax {
				h.lo[i] -= h.maxNext
			} else {
				h.lo[i] -= h.maxMove
			}
		}
	})
}

// assign updates every vector's nearest center (lowest index on ties; all
// vectors are scanned when first is set), bounds and error, and reports
// whether any assignment changed.
func (km *kmeans) assign(c []float64, h *hamerly, first bool) bool {
	d, k := km.d, km.k
	for j := range k {
		m := math.Inf(1)
		for jj := range k {
			if jj != j {
				m = min(m, dist2(c[j*d:(j+1)*d], c[jj*d:(jj+1)*d]))
			}
		}
		h.half[j] = math.Sqrt(m) / 2
	}
	changed := make([]bool, km.n())
	parallel(km.n(), 4096, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			x, a := km.vec(i), h.assign[i]
			if !first {
				bound := max(h.half[a], h.lo[i])
				if h.up[i] <= bound {
					h.err[i] = km.w[i] * dist2(x, c[int(a)*d:(int(a)+1)*d])
					continue
				}
				e := dist2(x, c[int(a)*d:(int(a)+1)*d])
				if h.up[i] = math.Sqrt(e); h.up[i] <= bound {
					h.err[i] = km.w[i] * e
					continue
				}
			}
			best, d1, d2 := nearest2(x, c, k)
			if first || a != int32(best) {
				h.assign[i], changed[i] = int32(best), true
			}
			h.up[i], h.lo[i], h.err[i] = math.Sqrt(d1), math.Sqrt(d2), km.w[i]*d1
		}
	})
	return slices.Contains(changed, true)
}

// nearest2 returns the index of the center of c ([k][len(x)]) nearest to
// x (lowest index on ties), its squared distance and the squared distance
// to the second nearest (+Inf for k = 1). d = 2, the vector formats' usual
// length, has its own loop.
func nearest2(x, c []float64, k int) (best int, d1, d2 float64) {
	d1, d2 = math.Inf(1), math.Inf(1)
	if len(x) == 2 {
		x0, x1 := x[0], x[1]
		c = c[:2*k]
		for j := 0; j < k; j++ {
			e0, e1 := x0-c[2*j], x1-c[2*j+1]
			e := e0*e0 + e1*e1
			if e < d1 {
				best, d1, d2 = j, e, d1
			} else if e < d2 {
				d2 = e
			}
		}
		return best, d1, d2
	}
	d := len(x)
	for j := range k {
		e := dist2(x, c[j*d:(j+1)*d])
		if e < d1 {
			best, d1, d2 = j, e, d1
		} else if e < d2 {
			d2 = e
		}
	}
	return best, d1, d2
}

// lloydTol stops Lloyd iterations once an iteration lowers the weighted
// squared error by less than this fraction: the last assignments that
// still flip change the error by far less than fp16 rounding of the
// entries does.
const lloydTol = 1e-6

func sumOf(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s
}

// parallel runs fn over [0, n) on the worker pool in chunks of at least
// grain items. Results must not depend on the chunking.
func parallel(n, grain int, fn func(lo, hi int)) { tensor.ParallelGrain(n, grain, fn) }
