// Package table prints forge's tables: aligned columns on a terminal (two
// spaces between columns, numbers right-aligned when asked), or Markdown
// with the same cells. Every command's table goes through it, so they all
// read the same way.
package table

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Table is a header and rows of cells. Right marks the columns aligned to
// the right (numbers). The zero value is an empty table without a header.
type Table struct {
	Header []string
	Right  []bool
	rows   [][]string
}

// New returns a table with these column headers.
func New(header ...string) *Table { return &Table{Header: header} }

// AlignRight right-aligns the given columns (0-based).
func (t *Table) AlignRight(cols ...int) *Table {
	for _, c := range cols {
		for len(t.Right) <= c {
			t.Right = append(t.Right, false)
		}
		t.Right[c] = true
	}
	return t
}

// Row adds a row; values are formatted with %v (strings as they are).
func (t *Table) Row(cells ...any) {
	row := make([]string, len(cells))
	for i, c := range cells {
		if s, ok := c.(string); ok {
			row[i] = s
		} else {
			row[i] = fmt.Sprint(c)
		}
	}
	t.rows = append(t.rows, row)
}

// Len is the number of rows.
func (t *Table) Len() int { return len(t.rows) }

func (t *Table) right(c int) bool { return c < len(t.Right) && t.Right[c] }

// Write prints the table with aligned columns, the header first (if any).
func (t *Table) Write(w io.Writer) error {
	all := t.rows
	if len(t.Header) > 0 {
		all = append([][]string{t.Header}, t.rows...)
	}
	var width []int
	for _, r := range all {
		for c, s := range r {
			if c == len(width) {
				width = append(width, 0)
			}
			width[c] = max(width[c], utf8.RuneCountInString(s))
		}
	}
	var b strings.Builder
	for _, r := range all {
		for c, s := range r {
			pad := strings.Repeat(" ", width[c]-utf8.RuneCountInString(s))
			if c > 0 {
				b.WriteString("  ")
			}
			switch {
			case t.right(c):
				b.WriteString(pad + s)
			case c == len(r)-1:
				b.WriteString(s)
			default:
				b.WriteString(s + pad)
			}
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteMarkdown prints the table as a Markdown table (a header is
// required), escaping the characters that would break a cell.
func (t *Table) WriteMarkdown(w io.Writer) error {
	if len(t.Header) == 0 {
		return fmt.Errorf("table: a Markdown table needs a header")
	}
	var b strings.Builder
	line := func(cells []string) {
		b.WriteString("|")
		for _, s := range cells {
			b.WriteString(" " + escape(s) + " |")
		}
		b.WriteByte('\n')
	}
	line(t.Header)
	b.WriteString("|")
	for c := range t.Header {
		if t.right(c) {
			b.WriteString(" ---: |")
		} else {
			b.WriteString(" :--- |")
		}
	}
	b.WriteByte('\n')
	for _, r := range t.rows {
		line(r)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// escape escapes the characters that would break a Markdown table cell
// or turn into emphasis.
func escape(s string) string {
	return strings.NewReplacer(`\`, `\\`, "|", `\|`, "\n", " ", "*", `\*`, "_", `\_`).Replace(s)
}
