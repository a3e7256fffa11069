// Command fakeclaude stands in for `claude -p` in scripts/bench.sh: it reads
// the courier's prompt from stdin, takes the target name and the fenced
// message text out of it, and at once prints a valid verbose output
// (fakeoutput.Verbose) proving a SendMessage call with that exact text,
// then exits 0. Its arguments are ignored. With FAKECLAUDE_SAVE_PROMPT set,
// it also writes the prompt to that file, so the bench can time the fake
// alone on the same input.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/peerctl/peerctl/adapters/courierexec"
	"github.com/peerctl/peerctl/test/bench/fakeoutput"
)

func main() {
	prompt, err := io.ReadAll(io.LimitReader(os.Stdin, 1<<20))
	if err == nil {
		if p := os.Getenv("FAKECLAUDE_SAVE_PROMPT"); p != "" {
			err = os.WriteFile(p, prompt, 0o600)
		}
	}
	var name, text string
	if err == nil {
		name, text, err = parse(prompt)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "fakeclaude: %v\n", err)
		os.Exit(1)
	}
	_, _ = os.Stdout.Write(fakeoutput.Verbose(name, text, 3))
}

// nameMarker precedes the target name, a JSON string, in the prompt.
var nameMarker = []byte("exactly this JSON string: ")

// beginPrefix starts the line that opens the message fence.
var beginPrefix = []byte("\n<<<PEERCTL-MESSAGE-BEGIN ")

func parse(prompt []byte) (name, text string, err error) {
	i := bytes.Index(prompt, nameMarker)
	if i < 0 {
		return "", "", errors.New("prompt names no target (prompt format changed?)")
	}
	if err := json.NewDecoder(bytes.NewReader(prompt[i+len(nameMarker):])).Decode(&name); err != nil {
		return "", "", fmt.Errorf("target name: %w", err)
	}
	j := bytes.LastIndex(prompt, beginPrefix)
	if j < 0 {
		return "", "", errors.New("prompt has no message fence")
	}
	rest := prompt[j+len(beginPrefix):]
	k := bytes.Index(rest, []byte(">>>\n"))
	if k < 0 {
		return "", "", errors.New("fence line does not end in >>>")
	}
	nonce := string(rest[:k])
	body := rest[k+len(">>>\n"):]
	end := []byte("\n" + courierexec.EndLine(nonce) + "\n")
	if !bytes.HasSuffix(body, end) {
		return "", "", errors.New("prompt does not end with the closing fence")
	}
	return name, string(bytes.TrimSuffix(body, end)), nil
}
