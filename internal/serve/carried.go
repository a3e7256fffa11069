package serve

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports/wire"
)

// maxCarried bounds the plain sends the service remembers for the
// dashboard (the newest kept).
const maxCarried = 100

// SentFileName is the file in the state folder that keeps the plain sends
// the service carried across its restarts (JSON lines, one
// wire.OutboxMessage each, the newest maxCarried kept; 0600, as the
// outbox's).
const SentFileName = "sent.jsonl"

// carriedSend is one plain send (not durable, not a dry run) the service
// ran for a client or the page, here or on another machine.
type carriedSend struct {
	// address is the target as given; host the machine it is on ("":
	// this one).
	address, host, text string
	// sender is who sent it (its order's).
	sender  domain.Sender
	started time.Time
	// receipt is what the send's target side said (the far side's with a
	// host); zero when nothing was handed over.
	receipt wire.Receipt
	// err is how the send failed: a refusal, or another error (nil when
	// the receipt says it all).
	err error
}

// carry remembers a plain send for the dashboard's Messages (carried),
// and keeps it in the state folder's SentFileName (when the outbox, and
// so the folder, could be used), so that it is still shown after a
// restart. Such a message has no outbox id (0): it cannot be cancelled or
// retried.
func (s *Server) carry(cs carriedSend) {
	m := carried(cs, s.now())
	s.mu.Lock()
	defer s.mu.Unlock()
	s.carried = append(s.carried, m)
	if len(s.carried) > maxCarried {
		s.carried = slices.Delete(s.carried, 0, len(s.carried)-maxCarried)
	}
	if s.sentPath == "" {
		return
	}
	if err := s.keepSent(m); err != nil {
		fmt.Fprintf(s.o.Log, "peerctl serve: a plain send is shown on the page until the service stops only: %s\n", wire.Safe(err.Error()))
	}
}

// keepSent appends m to the sent file, rewritten with the newest
// maxCarried when it holds twice as many. s.mu is held.
func (s *Server) keepSent(m wire.OutboxMessage) error {
	if s.sentLines >= 2*maxCarried {
		var buf bytes.Buffer
		for _, c := range s.carried {
			if err := WriteLine(&buf, c); err != nil {
				return err
			}
		}
		tmp := s.sentPath + ".new"
		if err := os.WriteFile(tmp, buf.Bytes(), 0o600); err != nil {
			return err
		}
		if err := os.Rename(tmp, s.sentPath); err != nil {
			return err
		}
		s.sentLines = len(s.carried)
		return nil
	}
	f, err := os.OpenFile(s.sentPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	err = WriteLine(f, m)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	s.sentLines++
	return err
}

// loadSent reads the plain sends kept in dir's SentFileName by an earlier
// run, the newest maxCarried of them, those updated within retention (0:
// every one), and keeps new ones there. A line that cannot be read (cut
// short by a crash) is skipped; a file that cannot be read is an error,
// and then sends are not kept.
func (s *Server) loadSent(dir string, retention time.Duration) error {
	path := filepath.Join(dir, SentFileName)
	f, err := os.Open(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	var kept []wire.OutboxMessage
	lines := 0
	if f != nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, maxLine)
		for sc.Scan() {
			lines++
			var m wire.OutboxMessage
			if json.Unmarshal(sc.Bytes(), &m) != nil || m.CreatedAt == "" {
				continue
			}
			if retention > 0 && s.now().Sub(parseTime(m.UpdatedAt)) > retention {
				continue
			}
			kept = append(kept, m)
		}
		if err := sc.Err(); err != nil {
			return err
		}
	}
	if len(kept) > maxCarried {
		kept = kept[len(kept)-maxCarried:]
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.carried = append(kept, s.carried...)
	s.sentPath, s.sentLines = path, lines
	return nil
}

// carried is cs as the dashboard shows it, ended at ended: its chain
// starts with "sent", then says how it ended in the outbox's words, with
// the outbox's reasons: refused (the refusal's word and detail as the
// reason), outcome_unknown, or delivered (held when the target holds
// it), then taken_up when the transcript showed it taken up, replied
// when the reply came. A send that awaited a reply and got none
// (no_reply), or whose --wait ran out, stays delivered with that refusal
// as its reason. An error that is no refusal is "failed".
//
// Its times are in order: delivered at the hand-over's end (the
// receipt's elapsedMs after the start; not after a wait or a reply wait),
// taken up and replied at their own times, never before that.
func carried(cs carriedSend, ended time.Time) wire.OutboxMessage {
	out := cs.receipt
	at := wire.RFC3339(cs.started)
	m := wire.OutboxMessage{Address: cs.address, Host: cs.host, Text: cs.text, CreatedAt: at, UpdatedAt: wire.RFC3339(ended), Attempts: 1,
		SessionID: out.SessionID, Outcome: out.Outcome, Transport: out.Transport, MsgID: out.MsgID}
	if cs.sender.Entrance() != domain.EntranceUnknown {
		m.Sender = wire.SenderOf(cs.sender)
	}
	handed := ended
	if d := time.Duration(out.ElapsedMs) * time.Millisecond; d > 0 && cs.started.Add(d).Before(ended) {
		handed = cs.started.Add(d)
	}
	// next is t (RFC 3339), or the time of the step before when t is
	// before it (a harness's time to the second) or none.
	next := func(hist []wire.OutboxEvent, t string) string {
		prev := hist[len(hist)-1].At
		if parseTime(t).Before(parseTime(prev)) {
			return prev
		}
		return t
	}
	hist := []wire.OutboxEvent{{At: at, State: "sent"}}
	after := "" // a refusal that came after the hand-over
	switch r, ok := domain.AsRefusal(cs.err); {
	case ok && (r.Reason == domain.ReasonNoReply || r.Reason == domain.ReasonWaitTimeout):
		after = r.Error()
	case ok && r.Reason == domain.ReasonOutcomeUnknown:
		hist = append(hist, wire.OutboxEvent{At: m.UpdatedAt, State: domain.OutboxOutcomeUnknown.String(), Reason: r.Error()})
	case ok:
		hist = append(hist, wire.OutboxEvent{At: m.UpdatedAt, State: domain.OutboxRefused.String(), Reason: r.Error()})
	case cs.err != nil:
		hist = append(hist, wire.OutboxEvent{At: m.UpdatedAt, State: "failed", Reason: cs.err.Error()})
	}
	if f := out.Refusal; f != nil && after == "" {
		after = f.Reason + ": " + f.Detail
	}
	if len(hist) == 1 {
		state, why := domain.OutboxDelivered, out.Detail
		if out.Outcome == domain.OutcomeHeld.String() {
			state = domain.OutboxHeld
		}
		if why == "" {
			why = "the harness took it"
			if out.Outcome != "" {
				why += " (" + out.Outcome + ")"
			}
			if out.ConfirmNote != "" {
				why += ": " + out.ConfirmNote
			}
		}
		if after != "" {
			why, handed = after, ended // said at the end of the wait
		}
		hist = append(hist, wire.OutboxEvent{At: wire.RFC3339(handed), State: state.String(), Reason: why})
		if w := out.Wait; w != nil && w.TakenUp {
			hist = append(hist, wire.OutboxEvent{At: next(hist, w.TakenUpAt), State: domain.OutboxTakenUp.String(),
				Reason: "the transcript shows the session took it up (its user line)"})
		}
		if rep := out.Reply; rep != nil {
			hist = append(hist, wire.OutboxEvent{At: next(hist, rep.At), State: domain.OutboxReplied.String(),
				Reason: wire.RepliedReason(rep.FromName, rep.Text)})
		}
	}
	last := hist[len(hist)-1]
	m.State, m.Reason, m.History = last.State, last.Reason, hist
	return m
}

// carriedSends are the remembered plain sends, newest first.
func (s *Server) carriedSends() []wire.OutboxMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.carried)
	slices.Reverse(out)
	return out
}
