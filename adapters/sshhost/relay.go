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

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/jsonexact"
	"github.com/peerctl/peerctl/internal/lines"
	"github.com/peerctl/peerctl/internal/wire"
	"github.com/peerctl/peerctl/ports"
)

// errRelayEnded ends the feed of requests once the far relay has ended.
var errRelayEnded = errors.New("the relay there has ended")

// Relay runs `peerctl relay --timeout=T [--name=NAME]` there (its courier,
// its inbox; its start bounded by the node's timeout, then unbounded), as
// app.Node says: requests go there line by line as they come, and its
// lines come back read with exact keys (wire.ReadRelayLine), each handed
// to emit with its host, one at a time. A request line over
// lines.MaxRequest is refused here (the far side would refuse it too)
// and a blank line goes in its place, so that the far side's line numbers
// stay those of requests. When the far relay ends (or its output is not
// this build's: wire.Broken) with requests handed over and unanswered,
// each gets a refusal line outcome_unknown (it may have been sent there;
// never resent) and the error is a host_unreachable refusal. It returns
// nil when the far relay ended by itself with every request answered, or
// when ctx ended.
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
	pending := map[int]json.RawMessage{} // handed over, not answered: line → id
	go func() {
		defer feed.Close()
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
				var id struct {
					ID json.RawMessage `json:"id"`
				}
				_ = jsonexact.Unmarshal(line, &id) // the id, when the line has one
				mu.Lock()
				pending[lr.N()] = id.ID
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
	var broken error
	for b := range s.Lines() {
		l, err := wire.ReadRelayLine(b)
		if err != nil {
			broken = wire.Broken(n.dest, err)
			s.Close()
			break
		}
		if line := l.Answers(); line > 0 {
			mu.Lock()
			delete(pending, line)
			mu.Unlock()
		}
		if err := put(l); err != nil {
			return err
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
	if err == nil && (ctx.Err() != nil || (res.Code == 0 && len(pending) == 0)) {
		return nil
	}
	if err == nil {
		err = domain.Refuse(domain.ReasonHostUnreachable, "the relay on %s ended (exit %d: %s)", n.dest, res.Code, wire.Message(res.Stderr))
	}
	for _, line := range slices.Sorted(maps.Keys(pending)) {
		_ = put(wire.RelayRefusal{Type: "refusal", ID: pending[line], Line: line, Reason: domain.ReasonOutcomeUnknown.String(),
			Detail: fmt.Sprintf("the relay on %s ended before it answered line %d: its text may have been sent; look before sending it again (%v)", n.dest, line, err)})
	}
	return err
}
