// Package generate turns a prompt into a reply: an Engine owns a model, one
// conversation's State and a tokenizer, and runs prefill, the decode loop
// and everything that decides when a reply ends — the behaviour of the
// reference runtime (../shared/docs/reference-pipeline.md §4), with the
// defects its §10 lists fixed.
//
// One call of Engine.Generate:
//
//	prompt ─ plan: segments cut at turn starts (<|im_start|>) that end a
//	         user turn or a segment of ≥ MinSegment tokens, each in
//	         chunks of ≤ 512 rows from its start (reuse.go)
//	       ─ reuse: the longest cut point of the plan whose prefix the
//	         engine's turn snapshot or the shared Cache holds, else a cold
//	         start; Metrics.CachedTokens counts the reuse
//	       ─ prefill of the rest, piece by piece, keeping the State at the
//	         end of a system prompt and at the last cut point
//	       ─ decode: sample (package sample) → stop token? → emit → feed
//
// Reuse never changes a reply: a prefill resumed at a cut point runs the
// very pieces a cold prefill runs from there, so tokens and logits are
// the same bit for bit (TestCacheExact: hundreds of conversations). A
// reply's own tokens are never continued from the live State (decode
// steps round differently from a prefill of the same tokens); a snapshot
// is only restored at a cut point of the prompt it is the prefix of,
// checked (an internal error otherwise, never a guess).
//
// A reply ends with a Finish:
//
//	stop    an end-of-sequence or stop token (not emitted), or a stop string
//	        (the text is cut before its earliest match)
//	length  MaxTokens generated, or the context is full (Metrics.ContextFull)
//	loop    the loop guard saw the last reps·P tokens repeat with period P
//	        (4 ≤ P ≤ 256, reps 6; checked at 64 tokens, then every 32;
//	        Metrics.LoopPeriod = P)
//	cancel  the context was cancelled or the text callback failed (a
//	        closed pipe); the State stays consistent for the next turn
//	error   the model's logits became unusable (all NaN or −Inf)
//
// Streaming text is UTF-8 safe and O(n) over the reply (tokenizer.Stream
// decodes each id once), and never shows a prefix of a stop string that
// then matches: only the longest tail of the text that could still grow
// into a stop string is held back (§10 item 12 of the reference).
//
// The thinking budget (Request.ThinkBudget) injects ThinkClose once when
// the reply reaches the budget without "</think>": the last token and the
// phrase are fed, the phrase is streamed, counted as generated, marked seen
// by the sampler (presence, DRY) and seen by the loop guard, as the
// reference does (§4.4, §10 item 11).
//
// A prompt longer than the context, or one that leaves no room to generate,
// is an error wrapping model.ErrContext, never a silent truncation.
//
// Speculative decoding (Options.Draft, speculative.go): a drafter model
// with the target's id space (CheckDraft) proposes k tokens, the target
// checks them all in one model.Verify block whose rows are its decode
// steps bit for bit, and sample.Accept keeps each draft with probability
// min(1, p/q) or draws from the residual; the target commits the kept
// rows only. Greedy replies are plain decoding's token for token; sampled
// ones follow its distribution (TestDraftSamplingIsExact). The drafter is
// a second lane of the engine, prefilled by the same plan and cached
// beside the target, so cached replies stay exact with drafting too; k
// adapts to the measured acceptance and costs, down to plain steps when
// drafting does not pay (draft.go).
//
// New warms its States (model.Warm: tiles, buffers, the pool-or-alone
// choice) and Generate reserves the KV caches a reply can fill, so that
// a reply's first tokens and verify blocks run at their steady speed
// (Options.NoWarm skips the warm-up).
package generate
