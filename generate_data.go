package forge

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"forge/corpus"
	"forge/generate"
	"forge/internal/durable"
	"forge/internal/npy"
	"forge/internal/outpath"
	"forge/sample"
)

// Settings of generated data: the reference's calibration generator
// (reference-pipeline.md §9.2), thinking on.
const (
	DefaultGenTemperature = 0.6
	DefaultGenTopP        = 0.95
	DefaultGenTopK        = 20
	DefaultGenMaxTokens   = 1536
)

// GenerateOptions are the settings of generated data. The zero value is
// the reference's: thinking on, temperature 0.6, top-p 0.95, top-k 20,
// at most 1536 new tokens per answer, seed 0.
type GenerateOptions struct {
	MaxTokens int    // most tokens per answer, its EOS id included, as max_new_tokens (0: DefaultGenMaxTokens)
	Seed      uint64 // answer i is sampled with seed rand.NewPCG(Seed, i).Uint64()
	// Sampling is the answers' sampler chain (its Seed is replaced per
	// answer); nil: DefaultGenTemperature, DefaultGenTopP, DefaultGenTopK.
	Sampling *sample.Options
	NoThink  bool // render the prompts with enable_thinking false
}

// resolved returns o with its defaults filled in, checked.
func (o GenerateOptions) resolved() (GenerateOptions, error) {
	if o.MaxTokens < 0 {
		return o, fmt.Errorf("max tokens %d is negative", o.MaxTokens)
	}
	if o.MaxTokens == 0 {
		o.MaxTokens = DefaultGenMaxTokens
	}
	if o.Sampling == nil {
		o.Sampling = &sample.Options{Temperature: DefaultGenTemperature, TopP: DefaultGenTopP, TopK: DefaultGenTopK}
	}
	return o, o.sample(0).Validate()
}

// sample is the sampler of answer i.
func (o GenerateOptions) sample(i int) sample.Options {
	s := *o.Sampling
	s.Seed = rand.NewPCG(o.Seed, uint64(i)).Uint64()
	return s
}

// Generation records how generated rows were made: in a trace's data
// recipe (GeneratedRecipe) and in what forge calib generate reports.
type Generation struct {
	Prompts       string  `json:"prompts"`        // the prompts file as given
	PromptsSHA256 string  `json:"prompts_sha256"` // hex SHA-256 of its bytes
	PromptCount   int     `json:"prompt_count"`
	Temperature   float64 `json:"temperature"`
	TopP          float64 `json:"top_p"`
	TopK          int     `json:"top_k"`
	MaxTokens     int     `json:"max_tokens"`
	Think         bool    `json:"think"`
	Seed          uint64  `json:"seed"`
	Seeds         string  `json:"seeds"`              // how each answer's sampler seed derives from Seed
	AnswersEOS    int     `json:"answers_eos"`        // answers that ended with an EOS id
	AnswersMax    int     `json:"answers_max_tokens"` // answers cut at MaxTokens (or the context)
	Dropped       int     `json:"dropped_tokens"`     // tokens after the last full row
}

// GeneratedRecipe is the data recipe of generated rows: a corpus.Recipe
// whose one source (kind corpus.Generated) is the prompts file, and the
// generation settings. Its JSON is the recipe's with "generation" added.
type GeneratedRecipe struct {
	corpus.Recipe
	Generation Generation `json:"generation"`
}

// Answer is one prompt's generated sequence.
type Answer struct {
	Prompt []int // the rendered prompt's ids
	// Tokens are the answer's ids, cut at the EOS inclusive: the last is
	// the EOS id when the answer ended with one.
	Tokens []int
	Finish generate.Finish // stop (an EOS id) or length (MaxTokens, or the context full)
}

// GeneratedRows are rows of prompts and the model's answers.
type GeneratedRows struct {
	Set        *corpus.Set // the rows, one source: the prompts file
	Generation Generation
	Answers    []Answer // in prompt order
}

// Recipe returns the rows' recipe.
func (g *GeneratedRows) Recipe() GeneratedRecipe {
	return GeneratedRecipe{Recipe: g.Set.Recipe(), Generation: g.Generation}
}

// GenerateRowsConfig configures GenerateRows. Zero values are the defaults.
type GenerateRowsConfig struct {
	Model   string // checkpoint or bundle directory that answers
	Prompts string // .jsonl of conversations, as corpus reads chat files
	Seq     int    // tokens per row (0: corpus.DefaultSeq)
	GenerateOptions
	// Progress, if set, is called with answer tokens done and total, the
	// total counting MaxTokens per prompt (an answer that ends early
	// counts in full).
	Progress func(done, total int64)
}

// GenerateRows has the model answer each conversation of cfg.Prompts and
// packs prompts and answers into rows, as the reference's calibration
// generator does (reference-pipeline.md §9.2):
//
//	conversation i ─ chat template, generation prompt, enable_thinking (generate.Chat)
//	               ─ answer: a fresh conversation (Engine.Reset), sampled with
//	                 seed rand.NewPCG(Seed, i).Uint64(), until an EOS id (kept) or MaxTokens
//	               ─ sequence i = prompt ids ++ answer ids
//	sequences in prompt order ─ concatenated ─ cut into rows of Seq tokens, the remainder dropped
//
// No loop guard, thinking budget or stop string acts (the reference uses
// Hugging Face's generate, which has none), so an answer ends only at an
// EOS id, at MaxTokens or when the context is full. Each answer depends
// only on its prompt, its index and the settings, not on the other
// prompts. Fewer tokens than one row is an error; so is an answer id
// outside the tokenizer's vocabulary (a padded row of the model's head).
func GenerateRows(ctx context.Context, cfg GenerateRowsConfig) (*GeneratedRows, error) {
	rt, err := OpenRuntime(cfg.Model, generate.Options{})
	if err != nil {
		return nil, err
	}
	defer rt.Close()
	return rt.generateRows(ctx, cfg)
}

// generateRows is GenerateRows on an open runtime (cfg.Model unused).
func (r *Runtime) generateRows(ctx context.Context, cfg GenerateRowsConfig) (*GeneratedRows, error) {
	o, err := cfg.GenerateOptions.resolved()
	if err != nil {
		return nil, fmt.Errorf("generate: %w", err)
	}
	seq := cfg.Seq
	if seq == 0 {
		seq = corpus.DefaultSeq
	}
	if seq < 0 {
		return nil, fmt.Errorf("generate: rows of %d tokens", seq)
	}
	convs, sum, err := corpus.ReadConversations(cfg.Prompts)
	if err != nil {
		return nil, fmt.Errorf("generate: prompts: %w", err)
	}
	g := &GeneratedRows{Generation: Generation{
		Prompts: cfg.Prompts, PromptsSHA256: sum, PromptCount: len(convs),
		Temperature: o.Sampling.Temperature, TopP: o.Sampling.TopP, TopK: o.Sampling.TopK,
		MaxTokens: o.MaxTokens, Think: !o.NoThink, Seed: o.Seed, Seeds: "answer i: rand.NewPCG(seed, i).Uint64()",
	}}
	var stream []int
	for i, c := range convs {
		a, err := r.answer(ctx, cfg, o, i, len(convs), c)
		if err != nil {
			return nil, err
		}
		if a.Finish == generate.FinishStop {
			g.Generation.AnswersEOS++
		} else {
			g.Generation.AnswersMax++
		}
		g.Answers = append(g.Answers, a)
		stream = append(append(stream, a.Prompt...), a.Tokens...)
	}
	if len(stream) < seq {
		return nil, fmt.Errorf("generate: %s: %d prompts and their answers make %d tokens, fewer than one row of %d: %w",
			cfg.Prompts, len(convs), len(stream), seq, corpus.ErrTooFewRows)
	}
	n := len(stream) / seq
	rows := make([][]int, n)
	for k := range rows {
		rows[k] = stream[k*seq : (k+1)*seq : (k+1)*seq]
	}
	g.Generation.Dropped = len(stream) - n*seq
	g.Set = &corpus.Set{Rows: rows, Options: corpus.Options{Seq: seq, Seed: o.Seed}, Vocab: r.Tok.VocabSize(),
		Sources: []corpus.Source{{Path: cfg.Prompts, Kind: corpus.Generated, Rows: n, Available: n,
			SHA256: sum, Tokens: n * seq}}}
	return g, nil
}

// answer generates conversation i's answer on a fresh conversation.
// Progress counts MaxTokens per answer for each of the n prompts.
func (r *Runtime) answer(ctx context.Context, cfg GenerateRowsConfig, o GenerateOptions, i, n int, c corpus.Conversation) (Answer, error) {
	where := fmt.Sprintf("%s: line %d", cfg.Prompts, c.Line)
	ids, err := generate.Chat{Messages: c.Messages, Tools: c.Tools, Think: !o.NoThink}.Prompt(r.Tok)
	if err != nil {
		return Answer{}, fmt.Errorf("generate: %s: %w", where, err)
	}
	base, total := int64(i)*int64(o.MaxTokens), int64(n)*int64(o.MaxTokens)
	var emit func(string) error
	e := r.Engine()
	if cfg.Progress != nil {
		emit = func(string) error {
			// the token being released is generated but not yet fed
			cfg.Progress(base+int64(len(e.Fed())-len(ids)+1), total)
			return nil
		}
	}
	e.Reset()
	res, err := e.Generate(ctx, generate.Request{Prompt: ids, Sample: o.sample(i), MaxTokens: o.MaxTokens, LoopGuard: -1}, emit)
	if err != nil {
		return Answer{}, fmt.Errorf("generate: %s: %w", where, err)
	}
	if res.Finish != generate.FinishStop && res.Finish != generate.FinishLength {
		return Answer{}, fmt.Errorf("generate: %s: the answer ended with %q", where, res.Finish)
	}
	a := Answer{Prompt: ids, Tokens: res.Tokens, Finish: res.Finish}
	if res.StopToken >= 0 {
		a.Tokens = append(a.Tokens, res.StopToken)
	}
	for k, id := range a.Tokens {
		if id >= r.Tok.VocabSize() {
			return Answer{}, fmt.Errorf("generate: %s: answer token %d is id %d, outside the tokenizer's %d ids (a padded row of the model's head)",
				where, k, id, r.Tok.VocabSize())
		}
	}
	if cfg.Progress != nil {
		cfg.Progress(base+int64(o.MaxTokens), total)
	}
	return a, nil
}

// CalibGenerateConfig configures CalibGenerate. Zero values are the defaults.
type CalibGenerateConfig struct {
	GenerateRowsConfig
	Out       string // .npy file to write: int64 (rows, Seq)
	Overwrite bool   // replace an existing .npy file
}

// CalibGenerateReport says what CalibGenerate wrote.
type CalibGenerateReport struct {
	Out        string
	Rows, Seq  int
	Generation Generation
	Recipe     GeneratedRecipe
}

// CalibGenerate writes GenerateRows' rows to cfg.Out as a NumPy int64
// array (rows, Seq), atomically (temp file, fsync, rename): calibration
// data that forge quantize --calib OUT:ROWS reads. The output is checked
// against the inputs (model, prompts) before anything is generated.
func CalibGenerate(ctx context.Context, cfg CalibGenerateConfig) (*CalibGenerateReport, error) {
	if cfg.Out == "" {
		return nil, errors.New("calib generate: no output file")
	}
	if k, err := corpus.KindOf(cfg.Out); err != nil || k != corpus.NPY {
		return nil, fmt.Errorf("calib generate: %s: the output is a NumPy file and needs the extension .npy", cfg.Out)
	}
	if err := checkOutputs(cfg.Overwrite, []string{cfg.Model, cfg.Prompts},
		outpath.Target{Path: cfg.Out, Owned: outpath.NPY}); err != nil {
		return nil, fmt.Errorf("calib generate: %w", err)
	}
	g, err := GenerateRows(ctx, cfg.GenerateRowsConfig)
	if err != nil {
		return nil, err
	}
	if err := durable.WriteFile(cfg.Out, npy.EncodeInt64Rows(g.Set.Rows)); err != nil {
		return nil, fmt.Errorf("calib generate: %w", err)
	}
	return &CalibGenerateReport{Out: cfg.Out, Rows: len(g.Set.Rows), Seq: g.Set.Options.Seq,
		Generation: g.Generation, Recipe: g.Recipe()}, nil
}
