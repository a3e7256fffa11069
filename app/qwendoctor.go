package app

import (
	"context"
	"fmt"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// QwenCheck is `peerctl doctor`'s look at Qwen Code: the qwen program,
// whether messaging is on, and Qwen Code's registry. Qwen Code is
// optional: a missing qwen is Skip, never a problem.
type QwenCheck struct {
	Health Health
	ports.QwenProbe
	// Dir is Qwen Code's registry folder; Missing when it does not exist.
	Dir     string
	Missing bool
	// Live counts live Qwen Code sessions; Addressable those with an inbox.
	Live, Addressable int
	// Note is the row's text for people.
	Note string
}

// QwenDoctor probes Qwen Code and reads its part of the registries. A
// warning is added to r when qwen runs but messaging is off, or when a
// live Qwen Code session cannot receive messages.
func (s *Service) QwenDoctor(ctx context.Context, q ports.QwenProber, r *Report) QwenCheck {
	c := QwenCheck{QwenProbe: q.ProbeQwen(ctx)}
	l, err := s.Read(ctx)
	if err == nil {
		if len(l.Also) > 0 {
			c.Dir = l.Also[0]
		}
		for _, e := range l.Entries {
			if e.Record.Harness != domain.HarnessQwenCode || !e.Live() {
				continue
			}
			c.Live++
			if e.Addressable {
				c.Addressable++
			}
		}
	}
	switch {
	case c.Err != nil && c.Path == "":
		c.Health = HealthSkip
		c.Note = "qwen not found (" + c.Err.Error() + "); Qwen Code sessions are listed all the same"
	case c.Err != nil:
		c.Health = HealthWarn
		c.Note = c.Err.Error()
		r.Warnings = append(r.Warnings, "qwen: "+c.Note)
	case c.Messaging == "off":
		c.Health = HealthWarn
		c.Note = fmt.Sprintf("%s (%s); messaging off: %s", c.Path, c.Version, c.MessagingWhy)
		r.Warnings = append(r.Warnings, "qwen: messaging is off: "+c.MessagingWhy)
	default:
		c.Health = HealthOK
		c.Note = fmt.Sprintf("%s (%s); messaging %s: %s", c.Path, c.Version, c.Messaging, c.MessagingWhy)
	}
	c.Note += fmt.Sprintf("; %d live session(s), %d addressable", c.Live, c.Addressable)
	if c.Live > c.Addressable {
		r.Warnings = append(r.Warnings, fmt.Sprintf("qwen: %d live Qwen Code session(s) cannot receive messages (no ipcPath; peerctl list --all says why)", c.Live-c.Addressable))
	}
	return c
}
