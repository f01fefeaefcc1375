package generate

import "strings"

// stopper accumulates a reply's text and decides how much of it can be
// released: all of it but the longest tail that is a proper prefix of a
// stop string (it might still become one). Each call searches only the
// text a new match could touch, so a reply costs O(n · longest stop).
type stopper struct {
	stops []string
	long  int    // the longest stop string's length in bytes
	buf   []byte // the reply's text so far (cut at a match)
	sent  int    // bytes of buf released
	hit   bool   // a stop string matched
}

func newStopper(stops []string) stopper {
	st := stopper{}
	for _, s := range stops {
		if s != "" {
			st.stops = append(st.stops, s)
			st.long = max(st.long, len(s))
		}
	}
	return st
}

// add appends text and returns what may be released now; hit reports a
// stop string, in which case the text is cut before its earliest match and
// nothing after it is ever released.
func (st *stopper) add(text string) (out string, hit bool) {
	if st.hit {
		return "", true
	}
	// A match not seen before ends inside the new text.
	from := max(0, len(st.buf)-st.long+1)
	st.buf = append(st.buf, text...)
	at := -1
	if len(st.stops) == 0 || from >= len(st.buf) {
		from = len(st.buf)
	}
	for _, s := range st.stops {
		if i := strings.Index(string(st.buf[from:]), s); i >= 0 && (at < 0 || from+i < at) {
			at = from + i
		}
	}
	if at >= 0 {
		st.buf = st.buf[:at]
		st.hit = true
		return st.release(), true
	}
	end := len(st.buf) - st.holdBack()
	out = string(st.buf[st.sent:end])
	st.sent = end
	return out, false
}

// holdBack returns the length of the longest tail of the unreleased text
// that is a proper prefix of a stop string.
func (st *stopper) holdBack() int {
	tail := st.buf[st.sent:]
	for k := min(len(tail), st.long-1); k > 0; k-- {
		t := string(tail[len(tail)-k:])
		for _, s := range st.stops {
			if len(s) > k && strings.HasPrefix(s, t) {
				return k
			}
		}
	}
	return 0
}

// release returns everything not yet released (at the end of a reply).
func (st *stopper) release() string {
	out := string(st.buf[st.sent:])
	st.sent = len(st.buf)
	return out
}

// all returns the reply's text so far, released or not.
func (st *stopper) all() string { return string(st.buf) }

// LoopPeriod returns the smallest period P in [minP, maxP] such that the
// last reps·P ids of out repeat with period P (out[i] = out[i−P] over that
// tail), or 0 (§4.3 of the reference pipeline).
func LoopPeriod(out []int, reps, minP, maxP int) int {
	if reps <= 0 || len(out) < minP*reps {
		return 0
	}
	for p := minP; p <= min(maxP, len(out)/reps); p++ {
		tail := out[len(out)-p*reps:]
		periodic := true
		for i := p; i < len(tail); i++ {
			if tail[i] != tail[i-p] {
				periodic = false
				break
			}
		}
		if periodic {
			return p
		}
	}
	return 0
}
