package natsbus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports/wire"
)

// Answering is what a node's service answers requests with: its own use
// cases as its command line runs them (app.LocalNode), with the trust
// policy of a message from another node.
type Answering interface {
	List(ctx context.Context, q wire.ListQuery) (wire.Listing, error)
	Show(ctx context.Context, address string) (wire.Show, error)
	Enrich(ctx context.Context, ids []string) (map[string]wire.LiveInfo, error)
	Send(ctx context.Context, q wire.SendQuery) (wire.Sent, error)
	Doctor(ctx context.Context) (wire.Doctor, error)
}

// answerQueue is the queue group of a node's services on its requests.
const answerQueue = "peerctl-serve"

// maxAnswering bounds the requests a service works on at once; more wait.
const maxAnswering = 16

// Answer takes node's requests (RequestSubject(node, *)) until ctx ends
// or stop is called (in the queue group answerQueue: a request reaches
// one subscriber), each answered by what from gives for its sender (a
// node name, as its subject says it: the one the servers' permissions
// let it use), bounded by the request's budget (at most an hour), at most
// maxAnswering at once. A request that is not this build's, from a name
// that is none, or with an op it does not know is answered with a usage
// error; a send order's Durable, Key and Settings are refused or unused
// (see Request). version is this build's, named in every answer; logf
// gets a line per request that could not be answered. stop waits for the
// requests being answered.
func (b *Bus) Answer(ctx context.Context, node, version string, from func(sender string) Answering, logf func(string)) (stop func(), err error) {
	if _, err := domain.ParseNode(node); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	slots := make(chan struct{}, maxAnswering)
	var wg sync.WaitGroup
	// One queue group: should two services answer for one node, each
	// request still reaches one of them, and is run once.
	sub, err := b.nc.QueueSubscribe(RequestSubject(node, "*"), answerQueue, func(m *nats.Msg) {
		if m.Reply == "" {
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-slots }()
			a := answer(ctx, m, from)
			a.V, a.Version = RequestVersion, version
			data, err := json.Marshal(a)
			if err == nil && len(data) > MaxAnswerBytes {
				data, err = json.Marshal(failed(RequestVersion, version, fmt.Errorf("the answer is %d bytes, over the bus's %d", len(data), MaxAnswerBytes)))
			}
			if err == nil {
				err = m.Respond(data)
			}
			if err != nil {
				logf(fmt.Sprintf("answer a request on %s: %s", m.Subject, err))
			}
		}()
	})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("take node %s's requests: %w", node, err)
	}
	if err := b.nc.FlushTimeout(b.timeout); err != nil {
		_ = sub.Unsubscribe()
		cancel()
		return nil, fmt.Errorf("take node %s's requests: %w", node, err)
	}
	return func() {
		_ = sub.Unsubscribe()
		cancel()
		wg.Wait()
	}, nil
}

// answer runs m's request on what from gives for its sender.
func answer(ctx context.Context, m *nats.Msg, from func(string) Answering) Answer {
	sender, err := untoken(m.Subject[strings.LastIndexByte(m.Subject, '.')+1:])
	if err != nil {
		return usage(fmt.Errorf("a request from %w", err))
	}
	var r Request
	if err := json.Unmarshal(m.Data, &r); err != nil {
		return usage(fmt.Errorf("a request this build cannot read: %w", err))
	}
	if r.V != RequestVersion {
		return usage(fmt.Errorf("a request of version %d; this peerctl reads %d (run the same build on every node)", r.V, RequestVersion))
	}
	budget := min(max(r.Budget, time.Second), maxBudget)
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	h := from(sender)
	switch r.Op {
	case "list":
		q, err := r.ListQuery()
		if err != nil {
			return usage(err)
		}
		l, err := h.List(ctx, q)
		if err != nil {
			return failed(0, "", err)
		}
		code := wire.ExitOK
		if l.Partial {
			code = wire.ExitError
		}
		if l.Sessions == nil {
			l.Sessions = []wire.Session{}
		}
		return doc(code, l.Sessions, prefixed(l.Notes))
	case "show":
		d, err := h.Show(ctx, string(r.Address))
		if err != nil {
			return failed(0, "", err)
		}
		return doc(wire.ExitOK, d, nil)
	case "enrich":
		live, err := h.Enrich(ctx, r.IDs)
		if err != nil {
			return failed(0, "", err)
		}
		return doc(wire.ExitOK, live, nil)
	case "doctor":
		d, err := h.Doctor(ctx)
		if err != nil {
			return failed(0, "", err)
		}
		code := wire.ExitOK
		if !d.OK {
			code = wire.ExitError
		}
		return doc(code, d, d.Notes)
	case "send":
		switch {
		case r.Send == nil:
			return usage(errors.New("a send request without its order"))
		case r.Send.Durable > 0 || r.Send.Key != "":
			return usage(errors.New("durable sends across machines are not built yet (docs/FLEET.md)"))
		}
		sent, err := h.Send(ctx, r.Send.Query)
		if err != nil {
			return failed(0, "", err)
		}
		return doc(sent.Code, sent.Receipt, sent.Notes)
	}
	return usage(fmt.Errorf("a request for %q, which this peerctl does not answer", wire.Clip(r.Op, 40)))
}

// doc is an answer of v as the command's --json document.
func doc(code int, v any, stderr []string) Answer {
	b, err := json.Marshal(v)
	if err != nil {
		return failed(0, "", err)
	}
	if stderr == nil {
		stderr = []string{}
	}
	return Answer{Code: code, Doc: b, Stderr: stderr}
}

// prefixed are notes as the command line prints them ("peerctl: note").
func prefixed(notes []string) []string {
	out := make([]string, 0, len(notes))
	for _, n := range notes {
		out = append(out, "peerctl: "+n)
	}
	return out
}

// usage is the answer of a request refused as a usage error (exit 2).
func usage(err error) Answer {
	return Answer{Code: wire.ExitUsage, Doc: json.RawMessage("null"), Stderr: []string{"peerctl: " + err.Error()}}
}

// failed is the answer of err as the command line prints it with --json:
// a refusal's document and its exit code; a bad address a usage error;
// any other error exit 1 with its words.
func failed(v int, version string, err error) Answer {
	a := Answer{V: v, Version: version, Code: wire.ExitError, Doc: json.RawMessage("null"), Stderr: []string{"peerctl: " + err.Error()}}
	switch r, ok := domain.AsRefusal(err); {
	case ok:
		a.Code = wire.ExitCode(r.Reason)
		a.Doc, _ = json.Marshal(wire.RefusalDoc{Refusal: wire.RefusalBody{Reason: r.Reason.String(), Detail: r.Detail, ExitCode: a.Code,
			Candidates: r.Candidates, Suggestions: r.Suggestions, Status: r.Status, StatusReason: r.StatusReason}})
	case errors.Is(err, domain.ErrBadAddress), errors.Is(err, domain.ErrBadEndpoint):
		a.Code = wire.ExitUsage
	}
	return a
}
