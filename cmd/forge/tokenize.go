package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"forge/tokenizer"
)

// TokenizeCmd is `forge tokenize --model DIR [TEXT | -]`.
type TokenizeCmd struct {
	Model string `required:"" type:"existingdir" help:"Model or tokenizer directory (tokenizer.json, tokenizer_config.json, ...)."`
	JSONL bool   `name:"jsonl" help:"Read one JSON string per line (from the file TEXT, or stdin when TEXT is - or absent) and print one JSON id list per line."`
	Text  string `arg:"" optional:"" help:"Text to encode; - reads stdin verbatim (a trailing newline included)."`
}

func (c *TokenizeCmd) Run() error {
	tok, err := tokenizer.Load(c.Model)
	if err != nil {
		return err
	}
	out := bufio.NewWriter(os.Stdout)
	if c.JSONL {
		err = c.jsonl(tok, out)
	} else {
		err = c.plain(tok, out)
	}
	if err != nil {
		return err
	}
	return out.Flush()
}

// plain encodes the argument or stdin, which must be UTF-8 (main refuses other arguments),
// writing the ids as they come.
func (c *TokenizeCmd) plain(tok *tokenizer.Tokenizer, out *bufio.Writer) error {
	var text, name string
	switch c.Text {
	case "":
		return errors.New("TEXT: give it as an argument, or - to read stdin")
	case "-":
		var err error
		if text, err = readString(os.Stdin); err != nil {
			return fmt.Errorf("stdin: %w", err)
		}
		name = "stdin"
	default:
		text, name = c.Text, "TEXT"
	}
	if err := writeIDs(out, tok, text); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// jsonl encodes every line of the input, a JSON string, into a JSON list of ids. Lines must
// be UTF-8 and their strings free of unpaired surrogate escapes, which Go's decoder would
// silently turn into U+FFFD and Python's would keep, for tokenizers to refuse.
func (c *TokenizeCmd) jsonl(tok *tokenizer.Tokenizer, out *bufio.Writer) error {
	in := io.Reader(os.Stdin)
	name := "stdin"
	if c.Text != "" && c.Text != "-" {
		f, err := os.Open(c.Text)
		if err != nil {
			return err
		}
		defer f.Close()
		in, name = f, c.Text
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(nil, 1<<30)
	for line := 1; sc.Scan(); line++ {
		if err := checkJSONText(sc.Bytes()); err != nil {
			return fmt.Errorf("%s line %d: %w", name, line, err)
		}
		var text string
		if err := json.Unmarshal(sc.Bytes(), &text); err != nil {
			return fmt.Errorf("%s line %d: want a JSON string: %w", name, line, err)
		}
		if err := writeIDs(out, tok, text); err != nil {
			return fmt.Errorf("%s line %d: %w", name, line, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// checkJSONText returns an error naming the byte offset of the first ill-formed UTF-8
// sequence or unpaired surrogate escape (\uD800-\uDFFF) of a JSON text.
func checkJSONText(data []byte) error {
	if !utf8.Valid(data) {
		return tokenizer.CheckUTF8(string(data))
	}
	hex := func(i int) (rune, bool) {
		if i+6 > len(data) || data[i] != '\\' || data[i+1] != 'u' {
			return 0, false
		}
		v, err := strconv.ParseUint(string(data[i+2:i+6]), 16, 16)
		return rune(v), err == nil
	}
	for i := 0; i < len(data); i++ {
		if data[i] != '\\' {
			continue
		}
		r, ok := hex(i)
		if !ok {
			i++ // an escaped character, perhaps a backslash
			continue
		}
		switch {
		case 0xD800 <= r && r < 0xDC00:
			if r2, ok := hex(i + 6); ok && 0xDC00 <= r2 && r2 < 0xE000 {
				i += 11
				continue
			}
		case 0xDC00 <= r && r < 0xE000:
		default:
			i += 5
			continue
		}
		return fmt.Errorf("byte offset %d: unpaired surrogate escape %s: %w", i, data[i:i+6], tokenizer.ErrInvalidUTF8)
	}
	return nil
}

// readString reads all of r into one string, sized up front when r is a regular file, so
// that a large input is held once.
func readString(r io.Reader) (string, error) {
	var b strings.Builder
	if f, ok := r.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			b.Grow(int(st.Size()) + 1)
		}
	}
	buf := make([]byte, 64<<10)
	for {
		n, err := r.Read(buf)
		b.Write(buf[:n])
		if err == io.EOF {
			return b.String(), nil
		}
		if err != nil {
			return "", err
		}
	}
}

// writeIDs writes the ids of text (which must be UTF-8) as a JSON list and a newline, as
// they are encoded.
func writeIDs(w *bufio.Writer, tok *tokenizer.Tokenizer, text string) error {
	sep := byte('[')
	var num []byte
	err := tok.EncodeStream(text, func(ids []int) error {
		for _, id := range ids {
			num = strconv.AppendInt(append(num[:0], sep), int64(id), 10)
			sep = ','
			if _, err := w.Write(num); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if sep == '[' {
		w.WriteByte('[')
	}
	_, err = w.WriteString("]\n")
	return err
}
