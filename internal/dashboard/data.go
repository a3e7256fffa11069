package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/peerctl/peerctl/ports/wire"
)

// view is one page of the outbox as a page asks for it: a state ("":
// every one) and where it starts (before a message's ID; 0: the newest).
type view struct {
	state  string
	before int64
}

// viewState is what is known of one view across its reads.
type viewState struct {
	// users are the event streams (and state reads) showing it; a view
	// no one shows is dropped.
	users int
	msgs  []Message
	more  bool   // older messages match it beyond msgs
	total int    // the outbox messages in its state, on every page
	err   string // why the outbox could not be read
	read  bool   // a read has answered
	// done is closed when the read under way ends (nil: none runs).
	done chan struct{}
}

// acquire marks v shown by one more reader.
func (d *Dashboard) acquire(v view) {
	d.mu.Lock()
	defer d.mu.Unlock()
	vs := d.views[v]
	if vs == nil {
		vs = &viewState{}
		d.views[v] = vs
	}
	vs.users++
}

// release undoes acquire; a view no one shows is dropped.
func (d *Dashboard) release(v view) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if vs := d.views[v]; vs != nil {
		if vs.users--; vs.users <= 0 {
			delete(d.views, v)
		}
	}
}

// refresh starts a read of each machine and of each view shown that is
// not being read already, and returns a channel closed when every read
// under way has ended. Each answer is published by Run as it comes.
func (d *Dashboard) refresh(ctx context.Context) <-chan struct{} {
	names := d.b.Hosts(ctx)
	d.mu.Lock()
	defer d.mu.Unlock()
	var waits []chan struct{}
	known := make(map[string]bool, len(names))
	d.order = d.order[:0]
	for _, name := range names {
		if known[name] {
			continue
		}
		known[name] = true
		d.order = append(d.order, name)
		st := d.hosts[name]
		if st == nil {
			st = &hostState{HostRead: HostRead{Listing: HostListing{Host: name}}}
			d.hosts[name] = st
		}
		if st.done == nil {
			st.done, st.Since = make(chan struct{}), d.opt.Now()
			go d.list(name, st)
		}
		waits = append(waits, st.done)
	}
	for name := range d.hosts {
		if !known[name] {
			delete(d.hosts, name) // no longer asked for; a read under way is dropped
		}
	}
	for v, vs := range d.views {
		if vs.done == nil {
			vs.done = make(chan struct{})
			go d.readMessages(v, vs)
		}
		waits = append(waits, vs.done)
	}
	all := make(chan struct{})
	go func() {
		for _, w := range waits {
			<-w
		}
		close(all)
	}()
	return all
}

// list reads one machine and records its answer.
func (d *Dashboard) list(name string, st *hostState) {
	d.mu.Lock()
	life := d.life
	d.mu.Unlock()
	ctx, cancel := context.WithTimeout(life, listBound)
	l := d.b.Sessions(ctx, name)
	cancel()
	now := d.opt.Now()
	d.mu.Lock()
	if l.Err == "" {
		st.Listing, st.SeenAt, st.Err = l, now, ""
	} else {
		st.Err, st.LastErr, st.LastErrAt = l.Err, l.Err, now
	}
	st.Listing.Host = name
	st.Since = time.Time{}
	done := st.done
	st.done = nil
	d.mu.Unlock()
	close(done)
	d.answered()
}

// readMessages reads one page of the outbox, a message more than the
// page holds to know whether older ones match, and records it.
func (d *Dashboard) readMessages(v view, vs *viewState) {
	d.mu.Lock()
	life := d.life
	d.mu.Unlock()
	ctx, cancel := context.WithTimeout(life, listBound)
	q := MessageQuery{State: v.state, Before: v.before, Limit: d.opt.Page + 1}
	msgs, err := d.b.Messages(ctx, q)
	total := 0
	if err == nil {
		total, err = d.b.Count(ctx, q)
	}
	cancel()
	msgs, more := page(msgs, d.opt.Page)
	d.mu.Lock()
	vs.msgs, vs.more, vs.total, vs.err, vs.read = msgs, more, total, "", true
	if err != nil {
		vs.err = err.Error()
	}
	done := vs.done
	vs.done = nil
	d.mu.Unlock()
	close(done)
	d.answered()
}

// page keeps the first n messages with an ID of msgs (and every one
// without: the plain sends beside them), and says whether there were more.
func page(msgs []Message, n int) ([]Message, bool) {
	kept := 0
	out := msgs[:0:0]
	more := false
	for _, m := range msgs {
		if m.ID != 0 {
			if kept == n {
				more = true
				continue
			}
			kept++
		}
		out = append(out, m)
	}
	return out, more
}

// publish builds the data from what is known now and, when it changed,
// tells the listeners.
func (d *Dashboard) publish() {
	d.pubMu.Lock()
	defer d.pubMu.Unlock()
	d.mu.Lock()
	reads := make([]HostRead, 0, len(d.order))
	for _, name := range d.order {
		reads = append(reads, d.hosts[name].HostRead)
	}
	type got struct {
		v  view
		vs viewState
	}
	views := make([]got, 0, len(d.views))
	for v, vs := range d.views {
		views = append(views, got{v, viewState{msgs: slices.Clone(vs.msgs), more: vs.more, total: vs.total, err: vs.err, read: vs.read}})
	}
	last := d.snap
	d.mu.Unlock()
	now := d.opt.Now()
	st := Build(now, reads, nil, "", d.opt.Stale, d.opt.Home)
	s := &snapshot{at: st.At, exposed: wire.Safe(d.opt.Exposed), views: make(map[view]*viewSnap, len(views))}
	var err error
	if s.hosts, err = json.Marshal(st.Hosts); err != nil {
		return
	}
	if l, ok := d.b.Fleet(); ok {
		if s.fleet, err = json.Marshal(FleetViews(l, d.opt.Home)); err != nil {
			return
		}
	}
	for i := range st.Sessions {
		sv := &st.Sessions[i]
		b, err := json.Marshal(sv)
		if err != nil {
			return
		}
		s.sessions = append(s.sessions, keyed{sv.Key, b})
	}
	for _, g := range views {
		vs := &viewSnap{more: g.vs.more, total: g.vs.total, err: safe(g.vs.err, d.opt.Home), read: g.vs.read}
		for _, m := range messageViews(g.vs.msgs, d.opt.Home) {
			b, err := json.Marshal(m)
			if err != nil {
				return
			}
			vs.msgs = append(vs.msgs, keyed{m.Key, b})
		}
		s.views[g.v] = vs
	}
	if last.same(s) {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.snap = s
	close(d.changed)
	d.changed = make(chan struct{})
}

// messageViews is msgs as the page shows them: escaped, history folded,
// the changes on the node that took a message (farChains) apart from its
// own, every text shown (safe: home, "" for none, written "~"), each with
// its key and its reply.
func messageViews(msgs []Message, home string) []MessageView {
	out := make([]MessageView, len(msgs))
	keys := map[string]int{}
	for i, m := range msgs {
		reply := replyOf(m, home)
		var far []FarView
		m.History, far = farChains(m)
		if _, _, ok := wire.FarOf(m.Reason, m.Host); ok && m.Host != "" {
			m.Reason = "" // the far chain's last line
		}
		safeMessage(&m, home)
		for j := range far {
			far[j].Where = safe(far[j].Where, home)
			far[j].History = safeHistory(far[j].History, home)
		}
		k := "m " + strconv.FormatInt(m.ID, 10)
		if m.ID == 0 {
			k = "s " + m.CreatedAt + " " + m.Host + " " + m.Address
		}
		out[i] = MessageView{Key: unique(keys, k), Message: m, Reply: reply, Far: far}
	}
	return out
}

// farChains splits m's history (not changed) into its own changes and
// those on the machine that took it (m.Host's, each reason headed by
// wire.FarHead: the sender's record of the node's receipts), grouped by
// the message's id there in the order they came, their reasons without
// the head.
func farChains(m Message) ([]Event, []FarView) {
	if m.Host == "" {
		return m.History, nil
	}
	own := make([]Event, 0, len(m.History))
	var far []FarView
	for _, e := range m.History {
		id, rest, ok := wire.FarOf(e.Reason, m.Host)
		if !ok {
			own = append(own, e)
			continue
		}
		if n := len(far); n == 0 || far[n-1].ID != id {
			far = append(far, FarView{Where: m.Host, ID: id})
		}
		e.Reason = rest
		far[len(far)-1].History = append(far[len(far)-1].History, e)
	}
	return own, far
}

// replyOf is m's reply as its latest replied line says it (nil: none),
// there (a far chain's) or here: who from shown (safe; home, "" for
// none, written "~"), its words as sent (safeText).
func replyOf(m Message, home string) *ReplyView {
	for i := len(m.History) - 1; i >= 0; i-- {
		if m.History[i].State != "replied" {
			continue
		}
		reason := m.History[i].Reason
		if _, rest, ok := wire.FarOf(reason, m.Host); ok && m.Host != "" {
			reason = rest
		}
		if from, words, ok := wire.ReplyOf(reason); ok {
			return &ReplyView{From: safe(from, home), Text: safeText(words, "")}
		}
		return nil
	}
	return nil
}

// unique is k, or k with "#n" when it was given before (two records of
// one session, say).
func unique(seen map[string]int, k string) string {
	n := seen[k]
	seen[k] = n + 1
	if n == 0 {
		return k
	}
	return unique(seen, k+"#"+strconv.Itoa(n+1))
}

// current is the latest data and the channel closed when it changes.
func (d *Dashboard) current() (*snapshot, <-chan struct{}) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.snap, d.changed
}

// ready is the latest data with view v read, and the channel closed when
// it changes; when v has not been read yet, it reads it (and whatever
// else is not being read) now, waiting at most wait (or until ctx ends).
// v must be acquired.
func (d *Dashboard) ready(ctx context.Context, v view, wait time.Duration) (*snapshot, <-chan struct{}) {
	if s, ch := d.current(); s.has(v) {
		return s, ch
	}
	return d.read(ctx, wait)
}

// read reads what is not being read already, waits for it at most wait
// (or until ctx ends), publishes it and returns the latest data.
func (d *Dashboard) read(ctx context.Context, wait time.Duration) (*snapshot, <-chan struct{}) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	done := d.refresh(ctx)
	select {
	case <-done:
	case <-ctx.Done():
	}
	d.publish()
	return d.current()
}

// Data reads every machine and the newest page of the outbox, waiting for
// them until ctx ends, and returns the page's data, State as JSON.
func (d *Dashboard) Data(ctx context.Context) ([]byte, error) {
	v := view{}
	d.acquire(v)
	defer d.release(v)
	s, _ := d.read(ctx, listBound)
	return s.json(v)
}

// stateOf is State as JSON for view v, read now when it is not known
// (waiting at most firstWait for it).
func (d *Dashboard) stateOf(ctx context.Context, v view) ([]byte, error) {
	d.acquire(v)
	defer d.release(v)
	s, _ := d.ready(ctx, v, firstWait)
	return s.json(v)
}

// json is State as JSON for view v.
func (s *snapshot) json(v view) ([]byte, error) {
	if s == nil {
		return nil, errors.New("dashboard: no data")
	}
	var buf bytes.Buffer
	s.state(&buf, v, 0)
	return buf.Bytes(), nil
}
