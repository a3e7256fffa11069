package cli

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
	"github.com/peerctl/peerctl/internal/jsonexact"
	"github.com/peerctl/peerctl/internal/lines"
	"github.com/peerctl/peerctl/internal/wire"
	"github.com/peerctl/peerctl/ports"
)

// relayHost is relay --host: the relay runs on dest (its peerctl, its
// courier), requests go there line by line as they come, and its lines
// come back read with exact keys and printed with "host". The protocol is
// the local relay's. When the connection ends, every request handed over
// and not answered gets a refusal line outcome_unknown (it may have been
// sent; never resent), and the relay exits 10.
func (c *cli) relayHost(ctx context.Context, dest domain.Dest, name string, timeout time.Duration) error {
	r, err := c.remote()
	if err != nil {
		return err
	}
	args := []string{"relay", durationArg("timeout", timeout)}
	if name != "" {
		args = append(args, "--name="+name)
	}
	limit, err := c.hostTimeout()
	if err != nil {
		return err
	}
	in, feed := io.Pipe()
	s, err := r.Stream(ctx, ports.RemoteCall{Dest: dest, Args: args, Stdin: in, EndInput: true, StartTimeout: limit})
	if err != nil {
		_ = feed.Close()
		return err
	}
	defer s.Close()
	_, stopOut := c.streamOut()
	defer stopOut()
	out := &relayOut{w: c.stdout, failed: make(chan struct{})}
	var mu sync.Mutex
	pending := map[int]json.RawMessage{} // handed over, not answered: line → id
	go func() {
		defer feed.Close()
		lr := lines.NewReader(c.stdin, lines.MaxRequest)
		for {
			line, long, err := lr.Next()
			if err != nil {
				return
			}
			if long {
				// The far side would refuse it too; a blank line keeps the numbering.
				_ = out.line(relayRefusal{Type: "refusal", Host: dest.String(), Line: lr.N(), Reason: reasonInvalidRequest,
					Detail: fmt.Sprintf("line %d is over %d bytes", lr.N(), lines.MaxRequest)})
				line = nil
			}
			var id struct {
				ID json.RawMessage `json:"id"`
			}
			if len(bytes.TrimSpace(line)) > 0 {
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
	for l := range s.Lines() {
		v, line, err := relayLineOf(l)
		if err != nil {
			broken = wire.Broken(dest, err)
			s.Close()
			break
		}
		if line > 0 {
			mu.Lock()
			delete(pending, line)
			mu.Unlock()
		}
		if err := out.line(withHost(v, dest.String())); err != nil {
			return errRelayOutput(err, line)
		}
	}
	res, err := s.Wait()
	if broken != nil {
		err = broken
	}
	if err == nil && (res.Code == wire.ExitOK || ctx.Err() != nil) {
		mu.Lock()
		n := len(pending)
		mu.Unlock()
		if n == 0 || ctx.Err() != nil {
			return nil
		}
	}
	if err == nil {
		err = domain.Refuse(domain.ReasonHostUnreachable, "the relay on %s ended (exit %d: %s)", dest, res.Code, wire.Message(res.Stderr))
	}
	mu.Lock()
	open := slices.Sorted(maps.Keys(pending))
	for _, line := range open {
		_ = out.line(relayRefusal{Type: "refusal", Host: dest.String(), ID: pending[line], Line: line, Reason: domain.ReasonOutcomeUnknown.String(),
			Detail: fmt.Sprintf("the relay on %s ended before it answered line %d: its text may have been sent; look before sending it again (%v)", dest, line, err)})
	}
	mu.Unlock()
	return err
}

// relayLineOf reads one line a far side's relay printed, by its type,
// with exact keys; line is the input line it answers (0: none).
func relayLineOf(b []byte) (v any, line int, err error) {
	var t struct {
		Type string `json:"type"`
	}
	if err := jsonexact.Unmarshal(b, &t); err != nil {
		return nil, 0, err
	}
	switch t.Type {
	case "ready":
		var x relayReady
		err = jsonexact.Exact(b, &x)
		return x, 0, err
	case "receipt":
		var x relayReceipt
		err = jsonexact.Exact(b, &x)
		return x, x.Line, err
	case "refusal":
		var x relayRefusal
		err = jsonexact.Exact(b, &x)
		return x, x.Line, err
	case "inbound":
		var x relayInbound
		err = jsonexact.Exact(b, &x)
		return x, 0, err
	}
	return nil, 0, errors.New("a relay line of unknown type " + safe(clipText(t.Type, 40)))
}

// withHost sets the host of a relay line.
func withHost(v any, host string) any {
	switch x := v.(type) {
	case relayReady:
		x.Host = host
		return x
	case relayReceipt:
		x.Host = host
		return x
	case relayRefusal:
		x.Host = host
		return x
	case relayInbound:
		x.Host = host
		return x
	}
	return v
}
