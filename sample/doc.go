// Package sample turns one row of logits into the next token: the sampler chain of forge's
// runtime (the reference's Engine.dist and dry_matches, ../shared/docs/reference-pipeline.md §4.1
// and §4.2). Plain and speculative decoding both draw from Sampler.Dist, so they sample the same
// distribution.
//
// # The chain
//
// Temperature T ≤ 0 is greedy: Argmax of the raw logits (the first maximum; NaN never wins), and
// presence, DRY, top-k, top-p and min-p are ignored. Otherwise, in float64, with V the vocabulary
// size and ℓ the logits (a NaN logit counts as −Inf):
//
//  1. top-k: C = the k = min(TopK, V) largest ℓ (ties: smaller id); TopK 0 keeps all V.
//     Selection is O(V): one pass with a k-heap for k ≤ 64, quickselect above; never a full sort.
//  2. presence: z_i = ℓ_i − Presence·seen_i, seen_i ∈ {0, 1}: token i was accepted in this reply
//     (Accept; sampled or forced tokens, never prompt tokens). Not a count.
//  3. DRY (Multiplier > 0): the matcher below gives, for each token t that would extend a verbatim
//     repeat, its length n_t; for t ∈ C with n_t ≥ Allowed,
//     z_t −= Multiplier·Base^min(n_t − Allowed, 24).
//  4. temperature and softmax: p_i = exp((z_i − max z)/T) / Σ_j exp((z_j − max z)/T); tokens
//     with p_i = 0 leave the set. (If max z = +Inf the +Inf tokens share the mass equally.)
//  5. top-p (0 < TopP < 1): order C by p descending (ties: smaller id) and keep the shortest prefix
//     whose cumulative sum is ≥ TopP; renormalize. With top-k off nothing is sorted: a quickselect
//     weighted by p finds the last token of that prefix in O(V) expected, and one pass keeps the
//     tokens at least as likely.
//  6. min-p (MinP > 0): keep p_i ≥ MinP·max p; renormalize.
//
// Dist lists the candidates in descending probability order when 0 < TopK < V (at most k of them,
// sorted once after the penalties), otherwise in id order.
//
// Sample draws from that distribution with the reply's PCG generator (math/rand/v2, seeded by
// Options.Seed): the same seed, logits and accepted tokens give the same draws. Sampler owns its
// buffers (about 50 bytes per vocabulary entry with every stage on) and allocates nothing per token.
//
// # DRY matcher
//
// History h = the reply's accepted tokens, the last Window (default 4096). Nothing matches if
// len(h) < 2 or the last token is a sequence breaker. Every earlier position P with h[P] = h[L−1]
// starts a match of length 1, extended for k = 1…MaxMatch−1 (default 32) while h[P−k] = h[L−1−k];
// all extension stops at the first k where h[L−1−k] is a breaker. The token h[P+1] maps to its
// longest match: appending it would continue the repeat. Breakers (NewBreakers) are the tokens
// whose decoded bytes contain '\n', ':', '"' or '*'. Defaults: Base 1.75, Allowed 8, and DRY off,
// because it corrupts code that repeats legitimately (reference §10 item 2: 0.8 turned
// `for (let x = 0; x` into `for (let x = 0; <`).
//
// # Differences from the reference (deliberate)
//
//   - TopK 0 is off; the reference maps 0 and a missing top_k to 20, so top-k cannot be turned off
//     over HTTP (§10 item 14).
//   - With top-k off all V tokens are candidates; the reference keeps V−1 (min(k, V−1)).
//   - TopP 0 is off; the reference keeps only the most likely token then.
//   - MinP is new.
//   - Ties are broken by id everywhere, so the candidate set does not depend on a partition
//     algorithm's order.
//   - NaN logits are never chosen and ±Inf are handled (see steps 1 and 4); the reference's
//     softmax would return NaN.
//   - Softmax computes exp((z − max z)/T) rather than exp(z/T − max z/T): equal in exact
//     arithmetic, and it cannot overflow to Inf − Inf for tiny T.
//
// Kept as in the reference: presence and DRY act only on the top-k candidates (penalized tokens
// are not replaced by the next ones) and only when sampling; the DRY history is the reply alone;
// forced tokens (the think-closing phrase) count as seen and join the history (§10 item 11), since
// Accept does not tell them apart.
package sample
