package dashboard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"time"
)

// snapshot is the page's data at one time, each session and message
// encoded on its own so that a stream sends only the ones that changed.
// A published snapshot is never changed.
type snapshot struct {
	at       string
	hosts    []byte  // []HostView as JSON
	sessions []keyed // SessionView as JSON, by key
	exposed  string
	views    map[view]*viewSnap
	fleet    []byte // []NodeView as JSON; nil: no fleet
}

// viewSnap is one view of the outbox in a snapshot.
type viewSnap struct {
	msgs  []keyed // MessageView as JSON, by key
	err   string  // escaped
	more  bool
	total int
	read  bool
}

// keyed is one item as JSON with its key.
type keyed struct {
	key string
	raw json.RawMessage
}

// has says whether s holds view v, read.
func (s *snapshot) has(v view) bool {
	if s == nil {
		return false
	}
	vs := s.views[v]
	return vs != nil && vs.read
}

// same says whether s and t hold the same data (their times aside).
func (s *snapshot) same(t *snapshot) bool {
	if s == nil || t == nil || !bytes.Equal(s.hosts, t.hosts) || !bytes.Equal(s.fleet, t.fleet) || s.exposed != t.exposed || !sameItems(s.sessions, t.sessions) || len(s.views) != len(t.views) {
		return false
	}
	for v, a := range s.views {
		b := t.views[v]
		if b == nil || a.err != b.err || a.more != b.more || a.total != b.total || a.read != b.read || !sameItems(a.msgs, b.msgs) {
			return false
		}
	}
	return true
}

func sameItems(a, b []keyed) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].key != b[i].key || !bytes.Equal(a[i].raw, b[i].raw) {
			return false
		}
	}
	return true
}

// view is the view v of s (an empty one when s does not hold it).
func (s *snapshot) view(v view) *viewSnap {
	if vs := s.views[v]; vs != nil {
		return vs
	}
	return &viewSnap{}
}

// state writes s as State JSON for view v, with seq when it is not 0.
func (s *snapshot) state(w *bytes.Buffer, v view, seq int) {
	vs := s.view(v)
	w.WriteByte('{')
	if seq != 0 {
		fmt.Fprintf(w, `"seq":%d,`, seq)
	}
	w.WriteString(`"at":`)
	writeString(w, s.at)
	w.WriteString(`,"hosts":`)
	w.Write(s.hosts)
	w.WriteString(`,"sessions":`)
	writeItems(w, s.sessions)
	w.WriteString(`,"messages":`)
	writeItems(w, vs.msgs)
	if vs.err != "" {
		w.WriteString(`,"outboxError":`)
		writeString(w, vs.err)
	}
	if s.exposed != "" {
		w.WriteString(`,"exposed":`)
		writeString(w, s.exposed)
	}
	w.WriteString(`,"page":`)
	b, _ := json.Marshal(PageView{State: v.state, Before: v.before, More: vs.more, Total: vs.total})
	w.Write(b)
	if s.fleet != nil {
		w.WriteString(`,"fleet":`)
		w.Write(s.fleet)
	}
	w.WriteByte('}')
}

// delta writes what changed from old to s in view v as Delta JSON, and
// says whether anything but the time did.
func (s *snapshot) delta(w *bytes.Buffer, old *snapshot, v view, seq int) bool {
	before, now := old.view(v), s.view(v)
	hosts := !bytes.Equal(old.hosts, s.hosts)
	sessions, sDel := changes(old.sessions, s.sessions)
	msgs, mDel := changes(before.msgs, now.msgs)
	errChanged, moreChanged, totalChanged := before.err != now.err, before.more != now.more, before.total != now.total
	fleet := !bytes.Equal(old.fleet, s.fleet)
	if !hosts && !fleet && len(sessions)+len(sDel)+len(msgs)+len(mDel) == 0 && !errChanged && !moreChanged && !totalChanged {
		return false
	}
	fmt.Fprintf(w, `{"seq":%d,"at":`, seq)
	writeString(w, s.at)
	if hosts {
		w.WriteString(`,"hosts":`)
		w.Write(s.hosts)
	}
	if len(sessions)+len(sDel) > 0 {
		w.WriteString(`,"sessions":`)
		writeChanges(w, sessions, sDel)
	}
	if len(msgs)+len(mDel) > 0 {
		w.WriteString(`,"messages":`)
		writeChanges(w, msgs, mDel)
	}
	if errChanged {
		w.WriteString(`,"outboxError":`)
		writeString(w, now.err)
	}
	if moreChanged {
		fmt.Fprintf(w, `,"more":%t`, now.more)
	}
	if totalChanged {
		fmt.Fprintf(w, `,"total":%d`, now.total)
	}
	if fleet {
		w.WriteString(`,"fleet":`)
		if s.fleet == nil {
			w.WriteString(`null`)
		}
		w.Write(s.fleet)
	}
	w.WriteByte('}')
	return true
}

// changes are the items of now that are new or changed since old, and the
// keys of old's that are gone.
func changes(old, now []keyed) (set []json.RawMessage, del []string) {
	was := make(map[string]json.RawMessage, len(old))
	for _, it := range old {
		was[it.key] = it.raw
	}
	for _, it := range now {
		if raw, ok := was[it.key]; !ok || !bytes.Equal(raw, it.raw) {
			set = append(set, it.raw)
		}
		delete(was, it.key)
	}
	for _, it := range old {
		if _, gone := was[it.key]; gone {
			del = append(del, it.key)
		}
	}
	return set, del
}

func writeChanges(w *bytes.Buffer, set []json.RawMessage, del []string) {
	w.WriteString(`{"set":[`)
	for i, raw := range set {
		if i > 0 {
			w.WriteByte(',')
		}
		w.Write(raw)
	}
	w.WriteString(`],"del":`)
	if del == nil {
		del = []string{}
	}
	b, _ := json.Marshal(del)
	w.Write(b)
	w.WriteByte('}')
}

func writeItems(w *bytes.Buffer, items []keyed) {
	w.WriteByte('[')
	for i, it := range items {
		if i > 0 {
			w.WriteByte(',')
		}
		w.Write(it.raw)
	}
	w.WriteByte(']')
}

func writeString(w *bytes.Buffer, s string) {
	b, _ := json.Marshal(s)
	w.Write(b)
}

// stateWord is what a state filter may be: a word of the outbox's or the
// page's.
// Compiled on first use, not in the package initialisation every command runs.
var stateWord = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z_]{1,32}$`) })

// viewOf is the view a request asks for (?state=WORD&before=ID).
func viewOf(r *http.Request) (view, error) {
	q := r.URL.Query()
	v := view{state: q.Get("state")}
	if v.state != "" && !stateWord().MatchString(v.state) {
		return v, fmt.Errorf("peerctl dashboard: state %q is not a state word (stored, delivered, outcome_unknown, …)", v.state)
	}
	if b := q.Get("before"); b != "" {
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n < 1 {
			return v, fmt.Errorf("peerctl dashboard: before %q is not a message id", b)
		}
		v.before = n
	}
	return v, nil
}

// events streams the data of the view the request asks for as
// server-sent events: the whole of it at once ("state"), then what
// changed ("delta": the sessions and messages added, changed or removed,
// the hosts when they changed), each numbered (seq) so that the page
// can tell it missed one and connect again.
func (d *Dashboard) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	v, err := viewOf(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	d.acquire(v)
	defer d.release(v)
	d.mu.Lock()
	d.readers++
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		d.readers--
		d.mu.Unlock()
	}()
	d.poke()
	w.Header().Set("Content-Type", "text/event-stream")
	ctx := r.Context()
	var sent *snapshot
	seq := 0
	keep := time.NewTicker(15 * time.Second)
	defer keep.Stop()
	var buf bytes.Buffer
	for {
		s, ch := d.ready(ctx, v, firstWait)
		if s != nil && s != sent {
			buf.Reset()
			if sent == nil {
				buf.WriteString("event: state\ndata: ")
				s.state(&buf, v, seq+1)
			} else if buf.WriteString("event: delta\ndata: "); !s.delta(&buf, sent, v, seq+1) {
				buf.Reset() // only the time changed
			}
			sent = s
			if buf.Len() > 0 {
				seq++
				buf.WriteString("\n\n")
				if _, err := w.Write(buf.Bytes()); err != nil {
					return
				}
				fl.Flush()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-ch:
		case <-keep.C:
			if _, err := io.WriteString(w, ": keep-alive\n\n"); err != nil {
				return
			}
			fl.Flush()
		}
	}
}
