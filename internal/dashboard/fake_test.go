package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/peerctl/peerctl/ports/wire"
)

// fake is a Backend over fixed data; Cancel and Retry change it. A
// host in block waits for its channel to close (or its deadline) before
// it answers.
type fake struct {
	mu    sync.Mutex
	hosts []HostListing
	msgs  []Message
	sent  []string
	block map[string]chan struct{}
	reads map[string]int // how many listings of each host began
	send  func(address, text string, await time.Duration) Result
	// queries are the Messages asked, in order.
	queries []MessageQuery
	retries []retryCall
	// fleet is the fleet's listing (nil: no bus).
	fleet *wire.Listing
}

var _ Backend = (*fake)(nil)

func (f *fake) Hosts(context.Context) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, len(f.hosts))
	for i, h := range f.hosts {
		out[i] = h.Host
	}
	return out
}

func (f *fake) Sessions(ctx context.Context, host string) HostListing {
	f.mu.Lock()
	if f.reads == nil {
		f.reads = map[string]int{}
	}
	f.reads[host]++
	wait := f.block[host]
	f.mu.Unlock()
	if wait != nil {
		select {
		case <-wait:
		case <-ctx.Done():
			return HostListing{Host: host, Err: "host_unreachable: " + ctx.Err().Error()}
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, h := range f.hosts {
		if h.Host == host {
			h.Sessions = slices.Clone(h.Sessions)
			return h
		}
	}
	return HostListing{Host: host, Err: "no such host"}
}

func (f *fake) Fleet() (wire.Listing, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fleet == nil {
		return wire.Listing{}, false
	}
	return *f.fleet, true
}

// setFleet replaces the fleet's listing (nil: no bus).
func (f *fake) setFleet(l *wire.Listing) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fleet = l
}

// setHosts replaces the hosts' listings.
func (f *fake) setHosts(hs []HostListing) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hosts = hs
}

// Messages is the outbox's List over msgs (newest first, by id), with
// the plain sends (ID 0) on the first page, as peerctl serve gives them.
func (f *fake) Messages(_ context.Context, q MessageQuery) ([]Message, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queries = append(f.queries, q)
	return q.Select(f.msgs), nil
}

// Count is the outbox's Count over msgs.
func (f *fake) Count(_ context.Context, q MessageQuery) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return q.Total(f.msgs), nil
}

func (f *fake) move(id int64, state string) Result {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.msgs {
		if f.msgs[i].ID == id {
			f.msgs[i].State = state
			f.msgs[i].History = append(f.msgs[i].History, Event{State: state})
			b, _ := json.Marshal(f.msgs[i])
			return Result{JSON: b}
		}
	}
	return Result{Code: 2, Stderr: fmt.Sprintf("peerctl: message %d is not in the outbox\n", id)}
}

func (f *fake) Cancel(_ context.Context, id int64) Result  { return f.move(id, "cancelled") }
func (f *fake) Approve(_ context.Context, id int64) Result { return f.move(id, "stored") }
func (f *fake) Deny(_ context.Context, id int64) Result    { return f.move(id, "denied") }

// Retry is the use case's: an outcome_unknown message is refused unless
// confirmed, as the message stands when Retry runs. Each call is recorded.
func (f *fake) Retry(_ context.Context, id int64, confirmed bool) Result {
	f.mu.Lock()
	f.retries = append(f.retries, retryCall{id, confirmed})
	refuse := false
	for _, m := range f.msgs {
		refuse = refuse || m.ID == id && m.State == "outcome_unknown" && !confirmed
	}
	f.mu.Unlock()
	if refuse {
		detail := fmt.Sprintf("message %d is outcome_unknown: it may have arrived already, and sending it again may deliver it twice; look first (peerctl outbox show %d, the session's transcript), then confirm the retry", id, id)
		b, _ := json.Marshal(wire.RefusalDoc{Refusal: wire.RefusalBody{Reason: "outcome_unknown", Detail: detail, ExitCode: wire.ExitOutcomeUnknown}})
		return Result{Code: wire.ExitOutcomeUnknown, JSON: b, Stderr: "peerctl: outcome_unknown: " + detail + "\n"}
	}
	return f.move(id, "stored")
}

// retryCall is one call of Retry.
type retryCall struct {
	id        int64
	confirmed bool
}

// retried are Retry's calls, in order.
func (f *fake) retried() []retryCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.retries)
}

func (f *fake) Send(_ context.Context, address, text string, await time.Duration) Result {
	f.mu.Lock()
	f.sent = append(f.sent, address+"\x00"+text)
	send := f.send
	f.mu.Unlock()
	if send != nil {
		return send(address, text, await)
	}
	r := map[string]any{"ok": true, "outcome": "queued", "transport": "courier"}
	if await > 0 {
		r["reply"] = map[string]any{"text": "reply to " + text, "fromName": "x"}
	}
	b, _ := json.Marshal(r)
	return Result{JSON: b}
}

// manySessions is n live sessions spread over hosts machines (the first
// this one).
func manySessions(n, hosts int) []HostListing {
	out := make([]HostListing, hosts)
	for h := range out {
		if h > 0 {
			out[h].Host = "host-" + strconv.Itoa(h)
		}
	}
	for i := range n {
		h := i % hosts
		id := fmt.Sprintf("%08x-1111-2222-3333-%012d", i*7919, i)
		out[h].Sessions = append(out[h].Sessions, wire.Session{Host: out[h].Host, Harness: "claude-code", SessionID: id, PID: 1000 + i,
			Name: "proj-" + strconv.Itoa(i), Cwd: "/home/u/src/proj-" + strconv.Itoa(i), Status: "idle", Kind: "interactive",
			StartedAt: "2026-01-01T00:00:00Z", Endpoint: "cc-peer:v1:" + strconv.Itoa(1000+i) + ":proj-" + strconv.Itoa(i) + ":/tmp/s.sock",
			Addressable: true, Verdict: "live", File: strconv.Itoa(1000+i) + ".json"})
	}
	return out
}
