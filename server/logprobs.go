package server

import (
	"forge/generate"
)

// logprobFields are the logprob fields of a chat request.
type logprobFields struct {
	Logprobs    bool `json:"logprobs"`
	TopLogprobs *int `json:"top_logprobs"`
}

// apply sets gr's logprob fields: top_logprobs needs logprobs and 0–20
// candidates. A streamed reply carries each token's entry in the first
// chunk sent after the token was sampled (its text may be held back a
// little longer, for a stop string or a tag), the rest in the finish
// chunk: the chunks' entries put together are the whole reply's.
func (f logprobFields) apply(gr *generate.Request) error {
	if !f.Logprobs {
		if f.TopLogprobs != nil {
			return badRequest("invalid_value", "top_logprobs needs logprobs: true")
		}
		return nil
	}
	gr.Logprobs = true
	if f.TopLogprobs != nil {
		if n := *f.TopLogprobs; n < 0 || n > generate.MaxTopLogprobs {
			return badRequest("invalid_value", "top_logprobs %d: want 0 to %d", n, generate.MaxTopLogprobs)
		}
		gr.TopLogprobs = *f.TopLogprobs
	}
	return nil
}

// chatLogprobs is a chat choice's logprobs object: one entry per sampled
// token with its text, bytes and candidates (OpenAI's shape).
func (s *Server) chatLogprobs(lps []generate.Logprob) map[string]any {
	content := make([]map[string]any, len(lps))
	for i, lp := range lps {
		top := make([]map[string]any, len(lp.Top))
		for j, c := range lp.Top {
			top[j] = s.tokenLogprob(c.ID, c.Logprob)
		}
		e := s.tokenLogprob(lp.ID, lp.Logprob)
		e["top_logprobs"] = top
		content[i] = e
	}
	return map[string]any{"content": content, "refusal": nil}
}

// tokenLogprob is {token, logprob, bytes} of one id: bytes are the token's
// own bytes (a piece of a multi-byte character is not valid UTF-8 alone).
func (s *Server) tokenLogprob(id int, lp float64) map[string]any {
	b := s.tok.TokenBytes(id)
	ints := make([]int, len(b))
	for i, c := range b {
		ints[i] = int(c)
	}
	return map[string]any{"token": string(b), "logprob": lp, "bytes": ints}
}

// completionLogprobs is a legacy completion choice's logprobs object; the
// text offsets count from off (the bytes of the tokens before lps).
func (s *Server) completionLogprobs(lps []generate.Logprob, off int) map[string]any {
	tokens := make([]string, len(lps))
	values := make([]float64, len(lps))
	tops := make([]map[string]float64, len(lps))
	offsets := make([]int, len(lps))
	for i, lp := range lps {
		tokens[i] = string(s.tok.TokenBytes(lp.ID))
		values[i] = lp.Logprob
		offsets[i] = off
		off += len(tokens[i])
		tops[i] = map[string]float64{}
		for _, c := range lp.Top {
			tops[i][string(s.tok.TokenBytes(c.ID))] = c.Logprob
		}
	}
	return map[string]any{"tokens": tokens, "token_logprobs": values, "top_logprobs": tops, "text_offset": offsets}
}
