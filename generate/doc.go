// Package generate turns a prompt into a reply: an Engine owns a model, one
// conversation's State and a tokenizer, and runs prefill, the decode loop
// and everything that decides when a reply ends — the behaviour of the
// reference runtime (../shared/docs/reference-pipeline.md §4), with the
// defects its §10 lists fixed.
//
// One call of Engine.Generate:
//
//	prompt ─ reuse: the live State when what it has consumed is a strict
//	         prefix of the prompt, else the turn snapshot (taken at the
//	         prompt's last turn-start token, <|im_start|>) when that is,
//	         else a cold start; Metrics.CachedTokens counts the reuse
//	       ─ prefill of the rest (model.PrefillLast, chunks of ≤ 512)
//	       ─ decode: sample (package sample) → stop token? → emit → feed
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
package generate
