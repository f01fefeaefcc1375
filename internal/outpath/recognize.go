package outpath

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"os"
	"strings"

	"forge/internal/npy"
)

// The recognisers below tell forge's own earlier outputs, which
// overwrite may replace, from anything else at an output path. Each reads
// at most a file's header.

// ForgeSafetensors recognises a safetensors file forge wrote (logits,
// traces, llama.cpp-mode bases): its "__metadata__" has a key that starts
// with "forge" or a "format" that does.
func ForgeSafetensors(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var n uint64
	if binary.Read(f, binary.LittleEndian, &n) != nil || n == 0 || n > 100<<20 {
		return false
	}
	hdr := make([]byte, n)
	if _, err := io.ReadFull(f, hdr); err != nil {
		return false
	}
	var h struct {
		Meta map[string]string `json:"__metadata__"`
	}
	if json.Unmarshal(hdr, &h) != nil {
		return false
	}
	for k, v := range h.Meta {
		if strings.HasPrefix(k, "forge") || (k == "format" && strings.HasPrefix(v, "forge")) {
			return true
		}
	}
	return false
}

// LlamaCppBase recognises llama.cpp's binary --kl-divergence-base file.
func LlamaCppBase(path string) bool { return hasPrefix(path, []byte("_logits_")) }

// NPY recognises a NumPy .npy file.
func NPY(path string) bool { return hasPrefix(path, []byte(npy.Magic)) }

// PNG recognises a PNG image.
func PNG(path string) bool { return hasPrefix(path, []byte("\x89PNG\r\n\x1a\n")) }

// SVG recognises an SVG image (an XML declaration or an <svg> element first).
func SVG(path string) bool {
	return hasPrefix(path, []byte("<?xml")) || hasPrefix(path, []byte("<svg"))
}

// MarkdownHeader is the first line of every Markdown report forge writes;
// ForgeMarkdown recognises it.
const MarkdownHeader = "<!-- written by forge -->\n"

// ForgeMarkdown recognises a Markdown report forge wrote.
func ForgeMarkdown(path string) bool { return hasPrefix(path, []byte(MarkdownHeader)) }

// ForgeJSON recognises a JSON report forge wrote: an object with a
// "forge_version" key, or with "mean_kl" (reports of earlier versions).
func ForgeJSON(path string) bool {
	raw, err := readHead(path, 64<<20)
	if err != nil {
		return false
	}
	var v map[string]json.RawMessage
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	_, a := v["forge_version"]
	_, b := v["mean_kl"]
	return a || b
}

func hasPrefix(path string, p []byte) bool {
	b, err := readHead(path, int64(len(p)))
	return err == nil && bytes.HasPrefix(b, p)
}

func readHead(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, n))
}
