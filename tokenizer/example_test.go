package tokenizer_test

import (
	"fmt"
	"log"
	"strings"

	"forge/tokenizer"
)

func Example() {
	tok, err := tokenizer.Load("../testdata/tokenizer/forge-tiny")
	if err != nil {
		log.Fatal(err)
	}
	prompt, err := tok.Chat([]byte(`[{"role": "user", "content": "Hi"}]`), tokenizer.ChatOptions{
		AddGenerationPrompt: true,
		Kwargs:              []byte(`{"enable_thinking": false}`),
	})
	if err != nil {
		log.Fatal(err)
	}
	ids := tok.Encode(prompt)
	fmt.Printf("%q\n%v\n", prompt, ids)

	// Stream a reply token by token: "日" is split over byte tokens, and appears whole.
	var out []string
	s := tok.NewStream()
	for _, id := range tok.Encode("Go 日本") {
		out = append(out, s.Add(id))
	}
	out = append(out, s.Flush())
	fmt.Printf("%q\n", strings.Join(out, "|"))
	// Output:
	// "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
	// [4097 2293 198 39 72 4098 198 4097 783 426 476 198 4103 275 4104 275]
	// "Go| |||日|||本|"
}
