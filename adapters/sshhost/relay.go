package sshhost

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/jsonexact"
	"github.com/peerctl/peerctl/ports/lines"
	"github.com/peerctl/peerctl/ports/wire"
)

// errRelayEnded ends the feed of requests once the far relay has ended.
var errRelayEnded = errors.New("the relay there has ended")

// Relay runs `peerctl relay --timeout=T [--name=NAME]` there (its courier,
// its inbox; its start bounded by the node's timeout; then, while a request
// awaits its answer or the far relay its end, each silence bounded by T
// plus the node's timeout), as app.Node says: requests go there line by line as they come, and its
// lines come back read with exact keys (wire.ReadRelayLine), each handed
// to emit with its host, one at a time. A request line over
// lines.MaxRequest is refused here (the far side would refuse it too)
// and a blank line goes in its place, so that the far side's line numbers
// stay those of requests. When the far relay ends (or its output is not
// this build's: wire.Broken, such as an answer to a line that awaits
// none, or with another id), or is silent past its bound, with requests
// handed over and unanswered, each gets a refusal line outcome_unknown (it
// may have been sent there; never resent) and the error is a
// host_unreachable refusal; when ctx ends with some unanswered, the same
// lines, and an outcome_unknown refusal. A receipt for another session
// than its request's address names (wire.Agrees; the request's "to" as
// read here) is not passed on: its line is refused outcome_unknown naming
// both (its text went there), and the relay ends so, with the rest
// unanswered as above and an outcome_unknown refusal. It returns nil when the far relay
// ended by itself with every request answered, or ctx ended with none
// unanswered.
func (n *Node) Relay(ctx context.Context, q wire.RelayQuery, requests io.Reader, emit func(wire.RelayLine) error) error {
	host := n.dest.String()
	var emitMu sync.Mutex
	put := func(l wire.RelayLine) error {
		emitMu.Lock()
		defer emitMu.Unlock()
		return emit(l.OnHost(host))
	}
	args := []string{"relay", "--timeout=" + q.Timeout.String()}
	if q.Name != "" {
		args = append(args, "--name="+q.Name)
	}
	in, feed := io.Pipe()
	defer in.Close() // a feed left writing ends
	s, err := n.remote.Stream(ctx, ports.RemoteCall{Dest: n.dest, Args: args, Stdin: in, EndInput: true, StartTimeout: n.timeout})
	if err != nil {
		_ = feed.Close()
		return err
	}
	defer s.Close()
	var mu sync.Mutex
	pending := map[int]request{} // handed over, not answered: by line
	ended := false               // the requests have ended here
	go func() {
		defer feed.Close()
		defer func() { mu.Lock(); ended = true; mu.Unlock() }()
		lr := lines.NewReader(requests, lines.MaxRequest)
		for {
			line, long, err := lr.Next()
			if err != nil {
				return
			}
			if long {
				_ = put(wire.RelayRefusal{Type: "refusal", Line: lr.N(), Reason: wire.RelayInvalidRequest,
					Detail: fmt.Sprintf("line %d is over %d bytes", lr.N(), lines.MaxRequest)})
				line = nil
			}
			if len(bytes.TrimSpace(line)) > 0 {
				var req request
				_ = jsonexact.Unmarshal(line, &req) // its id and address, when the line has them
				mu.Lock()
				pending[lr.N()] = req
				mu.Unlock()
			}
			if !bytes.HasSuffix(line, []byte("\n")) {
				line = append(line, '\n')
			}
			if _, err := feed.Write(line); err != nil {
				return
			}
		}
	}()
	// answer takes l's answer off pending: an answer must be to a line
	// handed over and not answered yet, with that line's id (or none); a
	// receipt must be for a session the line's address names (wire.Agrees;
	// a durable request's that names none yet, stored, names none to
	// check), else it is taken off and its refusal is other (an
	// outcome_unknown line naming both).
	answer := func(l wire.RelayLine) (other *wire.RelayRefusal, err error) {
		var id json.RawMessage
		var named *wire.Named
		switch x := l.(type) {
		case wire.RelayReceipt:
			id = x.ID
			if x.SessionID != "" || x.Outbox == nil {
				named = &wire.Named{PID: x.PID, SessionID: x.SessionID, Name: x.Name}
			}
		case wire.RelayRefusal:
			id = x.ID
		default:
			return nil, nil
		}
		line := l.Answers()
		mu.Lock()
		defer mu.Unlock()
		want, ok := pending[line]
		switch {
		case !ok:
			return nil, fmt.Errorf("an answer to line %d, which awaits none", line)
		case hasID(id) && !sameJSON(want.ID, id):
			// (No id: the far relay could not read the request's.)
			return nil, fmt.Errorf("an answer to line %d with another id", line)
		}
		delete(pending, line)
		if named == nil {
			return nil, nil
		}
		if why := wire.Agrees(want.To, *named); why != nil {
			// Its text went there, to some session.
			return &wire.RelayRefusal{Type: "refusal", ID: want.ID, Line: line, Reason: domain.ReasonOutcomeUnknown.String(),
				Detail: fmt.Sprintf("the relay on %s answered line %d with a receipt for another session: %v; its text was sent there and may have been delivered, to either: look before sending it again", n.dest, line, why)}, nil
		}
		return nil, nil
	}
	// silence bounds a wait for the far relay's next line while a request
	// awaits its answer, or the far relay its end: one send's bound there
	// and the host's.
	silence := q.Timeout + n.timeout
	quiet := time.NewTimer(silence)
	defer quiet.Stop()
	var broken error
	out := s.Lines()
read:
	for {
		select {
		case b, ok := <-out:
			if !ok {
				break read
			}
			l, err := wire.ReadRelayLine(b)
			var other *wire.RelayRefusal
			if err == nil {
				other, err = answer(l)
			}
			if err != nil {
				broken = wire.Broken(n.dest, err)
				s.Close()
				break read
			}
			if other != nil {
				// The far relay cannot be trusted with the rest.
				broken = domain.Refuse(domain.ReasonOutcomeUnknown, "%s", other.Detail)
				s.Close()
				if err := put(*other); err != nil {
					return err
				}
				break read
			}
			if err := put(l); err != nil {
				return err
			}
			quiet.Reset(silence)
		case <-ctx.Done():
			s.Close()
			break read
		case <-quiet.C:
			mu.Lock()
			waiting := len(pending) > 0 || ended
			mu.Unlock()
			if waiting {
				broken = domain.Refuse(domain.ReasonHostUnreachable, "no word from the relay on %s within %s, with requests unanswered or its end awaited", n.dest, silence)
				s.Close()
				break read
			}
			quiet.Reset(silence)
		}
	}
	// The far relay has ended: so does the feed to it, or Wait, which
	// waits for the request stream to be read out, would wait for the
	// next request (an open stdin here, a hung network there).
	_ = in.CloseWithError(errRelayEnded)
	res, err := s.Wait()
	if broken != nil {
		err = broken
	}
	mu.Lock()
	defer mu.Unlock()
	switch {
	case broken == nil && ctx.Err() != nil:
		if len(pending) == 0 {
			return nil
		}
		// Interrupted: what was handed over may have been sent there.
		err = domain.Refuse(domain.ReasonOutcomeUnknown, "the relay on %s was interrupted with %d request(s) handed over and unanswered", n.dest, len(pending))
	case err == nil && res.Code == 0 && len(pending) == 0:
		return nil
	case err == nil:
		err = domain.Refuse(domain.ReasonHostUnreachable, "the relay on %s ended (exit %d: %s)", n.dest, res.Code, wire.Message(res.Stderr))
	}
	for _, line := range slices.Sorted(maps.Keys(pending)) {
		_ = put(wire.RelayRefusal{Type: "refusal", ID: pending[line].ID, Line: line, Reason: domain.ReasonOutcomeUnknown.String(),
			Detail: fmt.Sprintf("the relay on %s ended before it answered line %d: its text may have been sent; look before sending it again (%v)", n.dest, line, err)})
	}
	return err
}

// request is what Relay keeps of a request it handed over: its id and
// address, when it has them.
type request struct {
	ID json.RawMessage `json:"id"`
	To string          `json:"to"`
}

// hasID reports whether an answer carries an id.
func hasID(id json.RawMessage) bool {
	t := bytes.TrimSpace(id)
	return len(t) > 0 && string(t) != "null"
}

// sameJSON reports whether a and b are one JSON value: an id as the
// request wrote it and as the far relay wrote it back.
func sameJSON(a, b json.RawMessage) bool {
	var x, y bytes.Buffer
	if json.Compact(&x, a) != nil || json.Compact(&y, b) != nil {
		return false
	}
	return bytes.Equal(x.Bytes(), y.Bytes())
}
