package table

import (
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	tb := New("name", "bytes", "note").AlignRight(1)
	tb.Row("mlp", 4718592, "ok")
	tb.Row("head", 12, "µ-sized")
	var b strings.Builder
	if err := tb.Write(&b); err != nil {
		t.Fatal(err)
	}
	want := "name    bytes  note\nmlp   4718592  ok\nhead       12  µ-sized\n"
	if b.String() != want {
		t.Errorf("got\n%q\nwant\n%q", b.String(), want)
	}
}

func TestWriteMarkdown(t *testing.T) {
	tb := New("run", "KL").AlignRight(1)
	tb.Row("a|b", "0.1")
	var b strings.Builder
	if err := tb.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	want := "| run | KL |\n| :--- | ---: |\n| a\\|b | 0.1 |\n"
	if b.String() != want {
		t.Errorf("got\n%q\nwant\n%q", b.String(), want)
	}
	if err := (&Table{}).WriteMarkdown(&b); err == nil {
		t.Error("a Markdown table without a header was written")
	}
}
