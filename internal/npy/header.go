package npy

import (
	"strconv"
	"strings"
)

// parseHeader reads the Python dict literal of an NPY header, such as
// {'descr': '<i4', 'fortran_order': False, 'shape': (3, 4), }, padded
// with spaces and "\n". It needs exactly the keys descr, fortran_order and
// shape, and returns an Array without Data.
func parseHeader(s string) (*Array, error) {
	a := &Array{}
	p := pyLexer{s: s}
	fail := func(what string) (*Array, error) {
		return nil, malformed("header %q: %s", strings.TrimSpace(s), what)
	}
	if !p.eat('{') {
		return fail("not a dict")
	}
	seen := map[string]bool{}
	for !p.eat('}') {
		key, ok := p.str()
		if !ok || !p.eat(':') {
			return fail("want 'key': value")
		}
		if seen[key] {
			return fail("key " + strconv.Quote(key) + " repeated")
		}
		seen[key] = true
		switch key {
		case "descr":
			d, ok := p.str()
			if !ok {
				return nil, unsupported("header %q: descr is not a string (structured dtype?)", strings.TrimSpace(s))
			}
			kind, size, err := parseDescr(d)
			if err != nil {
				return nil, err
			}
			a.Descr, a.Kind, a.Size = d, kind, size
		case "fortran_order":
			b, ok := p.boolean()
			if !ok {
				return fail("fortran_order is not True or False")
			}
			a.Fortran = b
		case "shape":
			shape, ok := p.tuple()
			if !ok {
				return fail("shape is not a tuple of non-negative integers")
			}
			a.Shape = shape
		default:
			return fail("unexpected key " + strconv.Quote(key))
		}
		if !p.eat(',') && !p.peek('}') {
			return fail("want ',' or '}'")
		}
	}
	if p.skip(); p.i != len(p.s) {
		return fail("text after the dict")
	}
	if !seen["descr"] || !seen["fortran_order"] || !seen["shape"] {
		return fail("want keys descr, fortran_order and shape")
	}
	return a, nil
}

// pyLexer reads the few Python literals NPY headers hold.
type pyLexer struct {
	s string
	i int
}

// skip moves past spaces, tabs and line ends.
func (p *pyLexer) skip() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == '\n' || p.s[p.i] == '\r') {
		p.i++
	}
}

// peek reports whether c comes next, after spaces.
func (p *pyLexer) peek(c byte) bool {
	p.skip()
	return p.i < len(p.s) && p.s[p.i] == c
}

// eat consumes c if it comes next, after spaces.
func (p *pyLexer) eat(c byte) bool {
	if p.peek(c) {
		p.i++
		return true
	}
	return false
}

// str reads a quoted string without escapes.
func (p *pyLexer) str() (string, bool) {
	p.skip()
	if p.i >= len(p.s) || (p.s[p.i] != '\'' && p.s[p.i] != '"') {
		return "", false
	}
	q := p.s[p.i]
	end := strings.IndexByte(p.s[p.i+1:], q)
	if end < 0 {
		return "", false
	}
	v := p.s[p.i+1 : p.i+1+end]
	if strings.IndexByte(v, '\\') >= 0 {
		return "", false
	}
	p.i += end + 2
	return v, true
}

// boolean reads True or False.
func (p *pyLexer) boolean() (bool, bool) {
	p.skip()
	for _, w := range []string{"True", "False"} {
		if strings.HasPrefix(p.s[p.i:], w) {
			p.i += len(w)
			return w == "True", true
		}
	}
	return false, false
}

// tuple reads a tuple of non-negative integers: (), (3,), (3, 4), with
// Python 2's 3L allowed.
func (p *pyLexer) tuple() ([]int64, bool) {
	if !p.eat('(') {
		return nil, false
	}
	out := []int64{}
	for !p.eat(')') {
		p.skip()
		j := p.i
		for j < len(p.s) && p.s[j] >= '0' && p.s[j] <= '9' {
			j++
		}
		v, err := strconv.ParseInt(p.s[p.i:j], 10, 64)
		if err != nil {
			return nil, false
		}
		p.i = j
		if p.i < len(p.s) && p.s[p.i] == 'L' {
			p.i++
		}
		out = append(out, v)
		if !p.eat(',') && !p.peek(')') {
			return nil, false
		}
	}
	return out, true
}
