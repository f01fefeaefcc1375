package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"forge"
	"forge/generate"
	"forge/internal/durable"
)

// ChatCmd is `forge chat`.
type ChatCmd struct {
	Model    string `required:"" type:"existingdir" help:"Checkpoint or bundle directory (with its tokenizer and chat template)."`
	System   string `placeholder:"TEXT" help:"A system message to start the conversation with."`
	Messages string `type:"existingfile" placeholder:"FILE" help:"Start from a saved conversation (a JSON list of messages, as /save writes)."`
	GenFlags `embed:""`
	said     said
}

// message is one turn of the conversation as the chat template reads it.
type message struct {
	Role      string `json:"role"`
	Content   string `json:"content"`
	Reasoning string `json:"reasoning_content,omitempty"`
}

const chatHelp = "commands: /reset (forget the conversation), /save FILE (write it as JSON), /exit; Ctrl-C stops a reply, Ctrl-D or Ctrl-C at the prompt ends"

func (c *ChatCmd) Run(ctx context.Context) error {
	cfg, err := c.config()
	if err != nil {
		return err
	}
	history, err := c.start()
	if err != nil {
		return err
	}
	rt, err := forge.OpenRuntime(c.Model, generate.Options{KV: cfg.KV, Act: cfg.Act, Continue: true})
	if err != nil {
		return err
	}
	defer rt.Close()
	if cfg.Draft != "" {
		if err := rt.AttachDraft(cfg.Draft, cfg.DraftK, cfg.DraftFixed); err != nil {
			return err
		}
	}
	rt.Engine() // built and warmed now, at load, not in the first reply's time
	for _, w := range rt.Warnings {
		warn(w)
	}
	// Ctrl-C belongs to the chat: it stops a reply, or ends an idle chat.
	signal.Reset(os.Interrupt)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	lines := readLines(os.Stdin)
	tty := isTerminal(os.Stdin)
	if tty {
		fmt.Fprintf(os.Stderr, "forge chat: %s (%s)\n", rt.Name, chatHelp)
	}
	for {
		if tty {
			fmt.Print("> ")
		}
		var line string
		var ok bool
		select {
		case line, ok = <-lines:
		case <-sig:
			fmt.Println()
			return nil
		case <-ctx.Done():
			return nil
		}
		if !ok {
			return nil
		}
		line = strings.TrimSpace(line)
		switch {
		case line == "":
			continue
		case line == "/exit" || line == "/quit":
			return nil
		case line == "/help":
			fmt.Fprintln(os.Stderr, chatHelp)
			continue
		case line == "/reset":
			history = history[:0]
			if c.System != "" {
				history = append(history, message{Role: "system", Content: c.System})
			}
			rt.Engine().Reset()
			c.said = said{}
			fmt.Fprintln(os.Stderr, "forge: conversation reset")
			continue
		case strings.HasPrefix(line, "/save"):
			saveChat(strings.TrimSpace(strings.TrimPrefix(line, "/save")), history)
			continue
		case strings.HasPrefix(line, "/"):
			fmt.Fprintf(os.Stderr, "forge: unknown command %s (%s)\n", line, chatHelp)
			continue
		}
		history = append(history, message{Role: "user", Content: line})
		reply, err := c.turn(ctx, rt, cfg, history, sig)
		if err != nil {
			history = history[:len(history)-1]
			if ctx.Err() != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "forge: %v\n", err)
			continue
		}
		history = append(history, reply)
	}
}

// start returns the conversation the chat begins with.
func (c *ChatCmd) start() ([]message, error) {
	var history []message
	if c.Messages != "" {
		data, err := readSmall(c.Messages)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(data, &history); err != nil {
			return nil, fmt.Errorf("%s: not a JSON list of messages: %w", c.Messages, err)
		}
	}
	if c.System != "" && (len(history) == 0 || history[0].Role != "system") {
		history = append([]message{{Role: "system", Content: c.System}}, history...)
	}
	return history, nil
}

// turn generates the assistant's reply to history, streaming it; Ctrl-C
// (sig) stops it early and keeps what was said.
func (c *ChatCmd) turn(ctx context.Context, rt *forge.Runtime, cfg forge.RunConfig, history []message, sig chan os.Signal) (message, error) {
	msgs, _ := json.Marshal(history)
	text, err := rt.Render(forge.Prompt{Messages: msgs, Think: c.Think})
	if err != nil {
		return message{}, err
	}
	ids, err := c.said.tokens(rt, text)
	if err != nil {
		return message{}, err
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-sig:
			cancel()
		case <-rctx.Done():
		}
	}()
	rep, err := rt.Reply(rctx, ids, cfg, func(s string) error { _, err := os.Stdout.WriteString(s); return err })
	if rep == nil {
		return message{}, err
	}
	fmt.Println()
	fmt.Fprintln(os.Stderr, summary(rep))
	if err != nil && !errors.Is(err, context.Canceled) {
		return message{}, err
	}
	c.said.add(rt, text, ids, rep)
	return assistant(rep.Text), nil
}

// said is the last turn as the model saw it: the prompt's rendered text
// and ids, and the reply's text and ids. Templates re-render past replies
// differently (Qwen's drop an empty thinking block) and re-tokenizing a
// reply need not give the ids the model generated, so the next prompt
// keeps these ids and tokenizes only what follows the reply in the new
// rendering: the engine's live State then holds the whole conversation and
// a turn prefills only the new message, as llama.cpp's interactive mode
// never re-tokenizes what was said.
type said struct {
	prompt   string
	ids      []int
	reply    string
	replyIDs []int
}

// tokens returns the ids of the rendered prompt text.
func (s *said) tokens(rt *forge.Runtime, text string) ([]int, error) {
	common := 0
	for common < min(len(s.prompt), len(text)) && s.prompt[common] == text[common] {
		common++
	}
	at := -1
	if s.ids != nil {
		at = strings.Index(text[common:], s.reply)
	}
	if at < 0 {
		return rt.Tokens(forge.Prompt{Text: text})
	}
	rest, err := rt.Tok.EncodeChecked(text[common+at+len(s.reply):])
	if err != nil {
		return nil, err
	}
	ids := append(slices.Clone(s.ids), s.replyIDs...)
	return append(ids, rest...), nil
}

// add records a reply to the prompt (text, ids); a reply whose text is not
// the decoding of its ids (cut at a stop string) is not kept verbatim.
func (s *said) add(rt *forge.Runtime, text string, ids []int, rep *forge.RunReport) {
	if dec, err := rt.Tok.Decode(rep.Tokens); err != nil || dec != rep.Text {
		*s = said{}
		return
	}
	*s = said{prompt: text, ids: ids, reply: rep.Text, replyIDs: rep.Tokens}
}

// assistant splits a reply into its thinking and its answer.
func assistant(text string) message {
	m := message{Role: "assistant", Content: text}
	if before, after, ok := strings.Cut(text, "</think>"); ok {
		m.Reasoning = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(before), "<think>"))
		m.Content = strings.TrimSpace(after)
	}
	return m
}

// saveChat writes the conversation to path (never over an existing file).
func saveChat(path string, history []message) {
	if path == "" {
		fmt.Fprintln(os.Stderr, "forge: /save FILE: give a file name")
		return
	}
	if _, err := os.Lstat(path); err == nil {
		fmt.Fprintf(os.Stderr, "forge: %s already exists; /save writes only new files\n", path)
		return
	}
	data, _ := json.MarshalIndent(history, "", "  ")
	if err := durable.WriteFile(path, append(data, '\n')); err != nil {
		fmt.Fprintf(os.Stderr, "forge: /save: %v\n", err)
		return
	}
	fmt.Fprintf(os.Stderr, "forge: saved %d messages to %s (continue with: forge chat --messages %s)\n", len(history), path, path)
}

// readLines sends stdin's lines on a channel, closed at the end of input.
func readLines(r io.Reader) <-chan string {
	ch := make(chan string)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			ch <- sc.Text()
		}
	}()
	return ch
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
