package sample

import (
	"errors"
	"fmt"
	"math"
)

// Options configure one reply's sampler. The zero value is greedy decoding.
//
// Field names in Validate's errors are the request fields (temperature, top_k, top_p, min_p,
// presence_penalty, dry_multiplier, dry_base, dry_allowed, dry_window, dry_max_match).
type Options struct {
	// Temperature divides the penalized logits before the softmax. 0 means greedy: the argmax
	// of the raw logits, every other field ignored.
	Temperature float64
	// TopK keeps the min(TopK, V) largest logits. 0 is off (the reference maps 0 to 20).
	TopK int
	// TopP keeps the shortest prefix of the descending order whose cumulative probability is
	// ≥ TopP. 0 and 1 are off.
	TopP float64
	// MinP keeps the tokens with p ≥ MinP·p_max after top-p. 0 is off.
	MinP float64
	// Presence is subtracted from the logit of every token already accepted in this reply
	// (0/1, not a count; forced tokens count). Negative values favour repeats, as in the
	// OpenAI API's presence_penalty.
	Presence float64
	// DRY penalizes tokens that would extend a verbatim repeat of earlier reply text.
	DRY DRY
	// Seed seeds the draws (PCG): the same seed and inputs give the same tokens.
	Seed uint64
}

// DRY configures the "don't repeat yourself" penalty (§4.2 of the reference): a token that would
// extend a repeat of length n ≥ Allowed loses Multiplier·Base^min(n−Allowed, 24) from its logit.
// It damages code that repeats legitimately (reference §10 item 2), hence off by default.
type DRY struct {
	Multiplier float64 // 0: off
	Base       float64 // 0 means 1.75
	Allowed    int     // repeat length tolerated; 0 means 8
	Window     int     // the last Window reply tokens are searched; 0 means 4096
	MaxMatch   int     // longest match measured; 0 means 32
}

// Defaults of the DRY fields whose zero value means "default" (the reference's).
const (
	DefaultDRYBase     = 1.75
	DefaultDRYAllowed  = 8
	DefaultDRYWindow   = 4096
	DefaultDRYMaxMatch = 32
	// dryMaxExponent caps the exponent of Base (the reference's 24).
	dryMaxExponent = 24
)

// resolved returns d with its defaults filled in.
func (d DRY) resolved() DRY {
	if d.Base == 0 {
		d.Base = DefaultDRYBase
	}
	if d.Allowed == 0 {
		d.Allowed = DefaultDRYAllowed
	}
	if d.Window == 0 {
		d.Window = DefaultDRYWindow
	}
	if d.MaxMatch == 0 {
		d.MaxMatch = DefaultDRYMaxMatch
	}
	return d
}

// Validate reports every field outside its domain, each error naming the request field.
func (o Options) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("sample: "+format, a...)) }
	finite := func(name string, v float64) bool {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			bad("%s %g is not a finite number", name, v)
			return false
		}
		return true
	}
	unit := func(name string, v float64) {
		if math.IsNaN(v) || v < 0 || v > 1 {
			bad("%s %g is outside [0, 1]", name, v)
		}
	}
	nonNegative := func(name string, v int, zero string) {
		if v < 0 {
			bad("%s %d is negative (0 means %s)", name, v, zero)
		}
	}
	if finite("temperature", o.Temperature) && o.Temperature < 0 {
		bad("temperature %g is negative (0 means greedy)", o.Temperature)
	}
	nonNegative("top_k", o.TopK, "off")
	unit("top_p", o.TopP)
	unit("min_p", o.MinP)
	finite("presence_penalty", o.Presence)
	if finite("dry_multiplier", o.DRY.Multiplier) && o.DRY.Multiplier < 0 {
		bad("dry_multiplier %g is negative (0 means off)", o.DRY.Multiplier)
	}
	if finite("dry_base", o.DRY.Base) && o.DRY.Base != 0 && o.DRY.Base < 1 {
		bad("dry_base %g is below 1 (0 means %g)", o.DRY.Base, DefaultDRYBase)
	}
	nonNegative("dry_allowed", o.DRY.Allowed, fmt.Sprint(DefaultDRYAllowed))
	nonNegative("dry_window", o.DRY.Window, fmt.Sprint(DefaultDRYWindow))
	nonNegative("dry_max_match", o.DRY.MaxMatch, fmt.Sprint(DefaultDRYMaxMatch))
	return errors.Join(errs...)
}
