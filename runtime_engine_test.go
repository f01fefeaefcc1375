package forge

import (
	"testing"

	"forge/generate"
)

// TestRuntimeEngineOnce: a runtime builds its engine (and warms its
// States) once, at first use, with the drafter attached by then: neither
// OpenRuntime nor AttachDraft builds one (forge run/chat --draft warmed
// the target twice, forge serve warmed an engine it never used), and a
// drafter attached after the first use replaces the engine.
func TestRuntimeEngineOnce(t *testing.T) {
	rt, err := OpenRuntime("models/forge-tiny", generate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if rt.eng != nil {
		t.Fatal("OpenRuntime built an engine")
	}
	if err := rt.AttachDraft("models/forge-tiny-draft", 3, true); err != nil {
		t.Fatal(err)
	}
	if rt.eng != nil {
		t.Fatal("AttachDraft built an engine")
	}
	e := rt.Engine()
	if e == nil || rt.Engine() != e {
		t.Fatal("Engine does not return one engine")
	}
	res, err := e.Generate(t.Context(), generate.Request{Prompt: rt.Tok.Encode("def add(a, b):"), MaxTokens: 8, LoopGuard: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Metrics.Drafted == 0 || len(res.Metrics.AcceptHist) != 4 {
		t.Fatalf("the engine built after AttachDraft did not draft 3 a round: drafted %d, histogram %v", res.Metrics.Drafted, res.Metrics.AcceptHist)
	}
	if err := rt.AttachDraft("models/forge-tiny-draft", 2, true); err != nil {
		t.Fatal(err)
	}
	if rt.eng != nil || rt.Engine() == e {
		t.Fatal("AttachDraft after first use kept the old engine")
	}
}
