package domain

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxMessageBytes is the largest message peerctl accepts: 64 KiB of UTF-8.
// A message is an instruction to another session, not a payload: anything
// larger belongs in a file the message names. The cap also keeps the
// socket's single JSON line and the courier's prompt bounded.
const MaxMessageBytes = 64 * 1024

// Message is validated message text. Build it with NewMessage.
type Message struct{ text string }

// NewMessage validates text and refuses with ReasonInvalidMessage when it is
// empty or whitespace only, contains a NUL byte, is not valid UTF-8, or is
// larger than MaxMessageBytes. The text is kept byte for byte.
func NewMessage(text string) (Message, error) {
	switch {
	case strings.TrimSpace(text) == "":
		return Message{}, Refuse(ReasonInvalidMessage, "message is empty or whitespace only")
	case strings.IndexByte(text, 0) >= 0:
		return Message{}, Refuse(ReasonInvalidMessage, "message contains a NUL byte at offset %d", strings.IndexByte(text, 0))
	case !utf8.ValidString(text):
		return Message{}, Refuse(ReasonInvalidMessage, "message is not valid UTF-8 (first bad byte at offset %d)", firstInvalidUTF8(text))
	case len(text) > MaxMessageBytes:
		return Message{}, Refuse(ReasonInvalidMessage, "message is %d bytes, over the %d-byte (64 KiB) cap; put large content in a file and send its path", len(text), MaxMessageBytes)
	}
	return Message{text: text}, nil
}

// FitsFor refuses m with ReasonInvalidMessage when it is larger than
// target's harness takes (HarnessSpec.MaxMessage), counted in bytes of
// UTF-8, before anything is sent: the one rule for every harness's cap.
func (m Message) FitsFor(target Session) error {
	s, _ := specOf(target.Harness())
	if s.MaxMessage <= 0 || len(m.text) <= s.MaxMessage {
		return nil
	}
	who := s.Title
	if v := target.Record().Version; v != "" {
		who += " " + v
	}
	return Refuse(ReasonInvalidMessage, "%s takes at most %d bytes in one message (%s); this one is %d bytes; put large content in a file and send its path",
		who, s.MaxMessage, s.MaxMessageWhy, len(m.text))
}

// Text returns the message text exactly as given.
func (m Message) Text() string { return m.text }

// Len is the text's length in bytes.
func (m Message) Len() int { return len(m.text) }

// IsZero reports whether m is the zero (invalid) Message.
func (m Message) IsZero() bool { return m.text == "" }

func firstInvalidUTF8(s string) int {
	b := []byte(s)
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return bytes.IndexByte(b, 0xff)
}

// String describes the message without printing it whole.
func (m Message) String() string { return fmt.Sprintf("message(%d bytes)", len(m.text)) }
