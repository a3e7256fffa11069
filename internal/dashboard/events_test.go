package dashboard

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// event is one server-sent event as it came, with its size on the wire.
type event struct {
	name string
	data []byte
	size int
}

// openEvents runs d (reading every 20 ms) behind a test server and opens
// its event stream with query ("" or "?state=…"); events come on the
// channel until the test ends.
func openEvents(t *testing.T, d *Dashboard, query string) <-chan event {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	go d.Run(ctx)
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/api/events"+query, nil)
	require.NoError(t, err)
	req.Host = testAddr
	req.AddCookie(&http.Cookie{Name: "peerctl-4711", Value: testToken})
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { _ = res.Body.Close() })
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "text/event-stream", res.Header.Get("Content-Type"))
	events := make(chan event, 64)
	go func() {
		defer close(events)
		r := bufio.NewReader(res.Body)
		var ev event
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			ev.size += len(line)
			switch {
			case line == "\n":
				if ev.name != "" {
					select {
					case events <- ev:
					case <-ctx.Done():
						return
					}
				}
				ev = event{}
			case strings.HasPrefix(line, "event: "):
				ev.name = strings.TrimSpace(line[len("event: "):])
			case strings.HasPrefix(line, "data: "):
				ev.data = []byte(strings.TrimSuffix(line[len("data: "):], "\n"))
			}
		}
	}()
	return events
}

// pageModel is the data as the page holds it: the first event's, with
// each delta applied.
type pageModel struct {
	seq      int
	hosts    []HostView
	sessions map[string]SessionView
	msgs     map[string]MessageView
	more     bool
	err      string
}

// apply applies ev as the page does; a delta out of order fails.
func (p *pageModel) apply(t *testing.T, ev event) {
	t.Helper()
	switch ev.name {
	case "state":
		var st State
		require.NoError(t, json.Unmarshal(ev.data, &st))
		*p = pageModel{seq: st.Seq, hosts: st.Hosts, sessions: map[string]SessionView{}, msgs: map[string]MessageView{}, more: st.Page.More, err: st.OutboxError}
		for _, s := range st.Sessions {
			p.sessions[s.Key] = s
		}
		for _, m := range st.Messages {
			p.msgs[m.Key] = m
		}
	case "delta":
		var dl Delta
		require.NoError(t, json.Unmarshal(ev.data, &dl))
		require.Equal(t, p.seq+1, dl.Seq, "the events come in order")
		p.seq = dl.Seq
		if dl.Hosts != nil {
			p.hosts = dl.Hosts
		}
		if c := dl.Sessions; c != nil {
			for _, k := range c.Del {
				delete(p.sessions, k)
			}
			for _, s := range c.Set {
				p.sessions[s.Key] = s
			}
		}
		if c := dl.Messages; c != nil {
			for _, k := range c.Del {
				delete(p.msgs, k)
			}
			for _, m := range c.Set {
				p.msgs[m.Key] = m
			}
		}
		if dl.More != nil {
			p.more = *dl.More
		}
		if dl.OutboxError != nil {
			p.err = *dl.OutboxError
		}
	default:
		t.Fatalf("an event %q", ev.name)
	}
}

// until applies events until ok says the page shows what is awaited, and
// returns the bytes the events took after the first.
func (p *pageModel) until(t *testing.T, events <-chan event, what string, ok func() bool) int {
	t.Helper()
	n := 0
	deadline := time.After(time.Minute)
	for !ok() {
		select {
		case ev, open := <-events:
			require.True(t, open, "the stream ended waiting for %s", what)
			p.apply(t, ev)
			n += ev.size
		case <-deadline:
			t.Fatalf("no event brought %s", what)
		}
	}
	return n
}

// manyMessages is n outbox messages, newest (id n) first, each with a
// history of three changes, in the states of states in turn.
func manyMessages(n int, states ...string) []Message {
	if len(states) == 0 {
		states = []string{"delivered"}
	}
	out := make([]Message, n)
	for i := range out {
		id := int64(n - i)
		at := time.Unix(1_770_000_000+id, 0).UTC().Format(time.RFC3339Nano)
		st := states[int(id)%len(states)]
		out[i] = Message{ID: id, State: st, Address: "proj-" + fmt.Sprint(id%50), Text: "the API changed, rebase onto main before you push",
			CreatedAt: at, UpdatedAt: at, ExpiresAt: at, Attempts: 1, Outcome: "queued", Transport: "courier",
			History: []Event{{At: at, State: "stored"}, {At: at, State: "delivering"}, {At: at, State: st, Reason: "the harness took it (queued)"}}}
	}
	return out
}

// TestEventsCarryWhatChanged: after the first event, a session that
// starts comes as that session alone, and with 10,000 messages in the
// outbox one message changing sends a few KB (not the page's whole data
// again), which the page applies to what it has.
func TestEventsCarryWhatChanged(t *testing.T) {
	f := &fake{hosts: manySessions(2, 1), msgs: manyMessages(10_000)}
	d, err := New(f, Options{Addr: testAddr, Token: testToken, Every: 20 * time.Millisecond})
	require.NoError(t, err)
	events := openEvents(t, d, "")
	var p pageModel
	first := <-events
	require.Equal(t, "state", first.name)
	p.apply(t, first)
	assert.Len(t, p.sessions, 2)
	assert.Len(t, p.msgs, 500, "one page of the outbox")
	assert.True(t, p.more, "older messages than the page's")
	t.Logf("the first event: %d bytes", first.size)

	f.setHosts(manySessions(3, 1))
	p.until(t, events, "the third session", func() bool { return len(p.sessions) == 3 })

	f.move(9_990, "replied")
	n := p.until(t, events, "message 9990 replied", func() bool { return p.msgs["m 9990"].State == "replied" })
	t.Logf("one message changing: %d bytes of events (the first event: %d)", n, first.size)
	assert.Less(t, n, 8<<10, "one message changing sent more than a few KB")
	assert.Len(t, p.msgs, 500)

	f.mu.Lock()
	f.msgs = append(manyMessages(1, "stored"), f.msgs...)
	f.msgs[0].ID = 10_001
	f.mu.Unlock()
	p.until(t, events, "a new message on top, the oldest of the page gone", func() bool {
		_, in := p.msgs["m 10001"]
		_, out := p.msgs["m 9501"]
		return in && !out
	})
	assert.Len(t, p.msgs, 500)

	// What the page holds is what a fresh read gives.
	w := do(d, http.MethodGet, "/api/state", true, "", nil)
	require.Equal(t, http.StatusOK, w.Code)
	var st State
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &st))
	require.Len(t, st.Messages, len(p.msgs))
	for _, m := range st.Messages {
		assert.Equal(t, m, p.msgs[m.Key])
	}
	for _, s := range st.Sessions {
		assert.Equal(t, s, p.sessions[s.Key])
	}
}

// TestMessagesPageAndFilterOnTheServer: the messages beyond the newest
// page are reached page by page (before=ID), and the state filter is the
// outbox's query, not a look through the page shown.
func TestMessagesPageAndFilterOnTheServer(t *testing.T) {
	f := &fake{hosts: manySessions(1, 1), msgs: manyMessages(1_200, "delivered", "delivered", "delivered", "outcome_unknown")}
	f.msgs = append([]Message{{State: "refused", Address: "gone", Text: "a plain send", CreatedAt: "2026-03-01T10:00:00Z"}}, f.msgs...)
	d, err := New(f, Options{Addr: testAddr, Token: testToken})
	require.NoError(t, err)
	get := func(query string) State {
		t.Helper()
		w := do(d, http.MethodGet, "/api/state"+query, true, "", nil)
		require.Equal(t, http.StatusOK, w.Code, w.Body.String())
		var st State
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &st))
		return st
	}
	ids := func(st State) (lo, hi int64, n int) {
		lo = 1 << 62
		for _, m := range st.Messages {
			if m.ID != 0 {
				lo, hi, n = min(lo, m.ID), max(hi, m.ID), n+1
			}
		}
		return lo, hi, n
	}
	st := get("")
	lo, hi, n := ids(st)
	assert.Equal(t, []int64{701, 1200, 500}, []int64{lo, hi, int64(n)}, "the newest page")
	assert.Len(t, st.Messages, 501, "and the plain send beside it")
	assert.Equal(t, PageView{More: true, Total: 1200}, st.Page, "of how many in all")

	st = get(fmt.Sprintf("?before=%d", lo))
	lo, hi, n = ids(st)
	assert.Equal(t, []int64{201, 700, 500}, []int64{lo, hi, int64(n)}, "the next page")
	assert.Len(t, st.Messages, 500, "the plain sends are on the first page only")
	assert.Equal(t, PageView{Before: 701, More: true, Total: 1200}, st.Page)
	st = get(fmt.Sprintf("?before=%d", lo))
	lo, hi, n = ids(st)
	assert.Equal(t, []int64{1, 200, 200}, []int64{lo, hi, int64(n)}, "the last page")
	assert.False(t, st.Page.More)

	st = get("?state=outcome_unknown")
	lo, hi, n = ids(st)
	assert.Equal(t, []int64{3, 1199, 300}, []int64{lo, hi, int64(n)}, "every outcome_unknown message, though the newest page holds 125")
	for _, m := range st.Messages {
		assert.Equal(t, "outcome_unknown", m.State)
	}
	assert.Equal(t, PageView{State: "outcome_unknown", Total: 300}, st.Page)
	f.mu.Lock()
	last := f.queries[len(f.queries)-1]
	f.mu.Unlock()
	assert.Equal(t, MessageQuery{State: "outcome_unknown", Limit: 501}, last, "the backend got the filter")
	st = get("?state=refused")
	assert.Len(t, st.Messages, 1, "a plain send in that state")

	for _, bad := range []string{"?state=Stored", "?state=a%20b", "?before=x", "?before=0", "?before=-3"} {
		w := do(d, http.MethodGet, "/api/state"+bad, true, "", nil)
		assert.Equal(t, http.StatusBadRequest, w.Code, bad)
		w = do(d, http.MethodGet, "/api/events"+bad, true, "", nil)
		assert.Equal(t, http.StatusBadRequest, w.Code, bad)
	}

	// The stream of a filtered page: a message that leaves the state
	// leaves the page, and the next older one that is in it comes.
	events := openEvents(t, d, "?state=outcome_unknown&before=1000")
	var p pageModel
	p.apply(t, <-events)
	require.Equal(t, 250, len(p.msgs), "3, 7, … 999")
	assert.False(t, p.more)
	f.move(995, "stored")
	p.until(t, events, "message 995 gone from the outcome_unknown page", func() bool { _, in := p.msgs["m 995"]; return !in })
	assert.Equal(t, 249, len(p.msgs))
}

// TestRetryOfOutcomeUnknownNeedsConfirmation: the page's retry of an
// outcome_unknown message (it may have arrived) is refused unless the
// request says the user confirmed it; other retries need no confirmation.
// The confirmation goes to the use case, which decides on the message as
// it then stands: the page's backend does not look first (a message that
// became outcome_unknown after it looked would be sent again).
func TestRetryOfOutcomeUnknownNeedsConfirmation(t *testing.T) {
	f := &fake{msgs: []Message{{ID: 8, State: "refused"}, {ID: 7, State: "outcome_unknown"}}}
	d := newTest(t, f)
	for _, body := range []string{"", "{}", `{"confirmOutcomeUnknown":false}`} {
		w := do(d, http.MethodPost, "/api/outbox/7/retry", true, body, nil)
		assert.Equal(t, http.StatusConflict, w.Code, body)
		assert.Equal(t, "application/json", w.Header().Get("Content-Type"))
		var res Result
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &res))
		assert.Equal(t, 12, res.Code)
		assert.JSONEq(t, `{"id":7,"state":"outcome_unknown","needsConfirmation":true}`, string(res.JSON))
		assert.Contains(t, res.Stderr, "may have arrived already")
		assert.Contains(t, res.Stderr, "peerctl outbox show 7")
	}
	assert.Equal(t, "outcome_unknown", f.msgs[1].State, "not retried")
	assert.Equal(t, []retryCall{{7, false}, {7, false}, {7, false}}, f.retried(), "asked of the use case, unconfirmed")
	w := do(d, http.MethodPost, "/api/outbox/7/retry", true, `{"confirmOutcomeUnknown":true}`, nil)
	require.Equal(t, http.StatusOK, w.Code)
	assert.Equal(t, "stored", f.msgs[1].State, "retried once confirmed")

	w = do(d, http.MethodPost, "/api/outbox/8/retry", true, "{}", nil)
	require.Equal(t, http.StatusOK, w.Code)
	assert.Equal(t, "stored", f.msgs[0].State, "a refused message needs no confirmation")
	assert.Equal(t, http.StatusBadRequest, do(d, http.MethodPost, "/api/outbox/7/retry", true, `{"confirmOutcomeUnknown":`, nil).Code)
	w = do(d, http.MethodPost, "/api/outbox/99/retry", true, "{}", nil)
	var res Result
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &res))
	assert.Equal(t, 2, res.Code, "not in the outbox: the backend says so")
}

// TestMessageQuerySelect: the state, the page start and the limit, the
// plain sends (ID 0) on the first page only and never counted.
func TestMessageQuerySelect(t *testing.T) {
	msgs := []Message{{ID: 0, State: "refused"}, {ID: 5, State: "stored"}, {ID: 4, State: "refused"}, {ID: 3, State: "stored"}, {ID: 2, State: "stored"}}
	ids := func(q MessageQuery) []int64 {
		out := []int64{}
		for _, m := range q.Select(msgs) {
			out = append(out, m.ID)
		}
		return out
	}
	for _, tc := range []struct {
		q    MessageQuery
		want []int64
	}{
		{MessageQuery{}, []int64{0, 5, 4, 3, 2}},
		{MessageQuery{Limit: 2}, []int64{0, 5, 4}},
		{MessageQuery{State: "refused"}, []int64{0, 4}},
		{MessageQuery{State: "stored", Limit: 2}, []int64{5, 3}},
		{MessageQuery{Before: 5, Limit: 2}, []int64{4, 3}},
		{MessageQuery{Before: 4, State: "stored"}, []int64{3, 2}},
		{MessageQuery{Before: 2}, []int64{}},
	} {
		assert.Equal(t, tc.want, ids(tc.q), "%+v", tc.q)
	}
}
