package dashboard

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports/wire"
)

// HostListing is what one machine's listing gave: its sessions (every
// record, `list --all --json`'s entries, docs/OUTPUT.md), its notes, or
// the error that kept it from being listed.
type HostListing struct {
	// Host is the machine's DEST ("" for this machine).
	Host     string
	Sessions []wire.Session
	// Notes are the node's warnings and notes ("warning: …"), not escaped.
	Notes []string
	// Err is why the host could not be listed ("" when it was).
	Err string
	// Version is the peerctl there ("" when unknown).
	Version string
}

// Message is one message of the outbox, as `peerctl outbox show --json`
// gives it (docs/OUTPUT.md), with its history oldest first.
type Message = wire.OutboxMessage

// Event is one change of a message's state (in State: a run of the same
// state, its latest time and reason, Count times).
type Event = wire.OutboxEvent

// State is the page's data, the document /api/state and the first
// server-sent event ("state") carry; later events carry a Delta. Every
// text that came from a registry, a host or a message is escaped as the
// CLI prints it (wire.Safe); the page puts it in the document as text
// only.
type State struct {
	// Seq numbers the events of one stream from 1 (absent in /api/state).
	Seq int `json:"seq,omitempty"`
	// At is when the data was read (RFC 3339, UTC).
	At       string        `json:"at"`
	Hosts    []HostView    `json:"hosts"`
	Sessions []SessionView `json:"sessions"`
	// Messages are one page of the outbox (Page), in no order: the page
	// shows them newest first (createdAt, then id).
	Messages []MessageView `json:"messages"`
	// OutboxError is why the outbox could not be read ("" when it was).
	OutboxError string `json:"outboxError,omitempty"`
	// Exposed is the bound address when it is not loopback only.
	Exposed string `json:"exposed,omitempty"`
	// Page is the page of the outbox Messages are.
	Page PageView `json:"page"`
	// Fleet is every node's live sessions on the fleet's bus (serve
	// --nats: the service's live view of the presence bucket), by node
	// name; absent when the service is on no bus or has no view now.
	Fleet []NodeView `json:"fleet,omitempty"`
}

// Delta is a server-sent event ("delta") after the first: what changed
// since the event before it (Seq one less). A field left out did not
// change.
type Delta struct {
	Seq int    `json:"seq"`
	At  string `json:"at"`
	// Hosts is every machine again, when any changed.
	Hosts []HostView `json:"hosts,omitempty"`
	// Sessions and Messages are the ones added or changed (whole, by
	// their key) and the keys of those removed.
	Sessions *Changes[SessionView] `json:"sessions,omitempty"`
	Messages *Changes[MessageView] `json:"messages,omitempty"`
	// OutboxError, More and Total are State's, Page.More and
	// Page.Total, when they changed.
	OutboxError *string `json:"outboxError,omitempty"`
	More        *bool   `json:"more,omitempty"`
	Total       *int    `json:"total,omitempty"`
	// Fleet is every node again, when any changed (null when the fleet
	// is no longer known: the service's view of the bus is away).
	Fleet []NodeView `json:"fleet,omitempty"`
}

// Changes are the items of a Delta: Set added or changed, Del the keys
// of those removed.
type Changes[T any] struct {
	Set []T      `json:"set"`
	Del []string `json:"del"`
}

// PageView is the page of the outbox a State shows: the query
// (?state=WORD&before=ID) and whether older messages match it.
type PageView struct {
	// State is the state the messages are in ("" or absent: any).
	State string `json:"state,omitempty"`
	// Before: the messages are older than message Before (0 or absent:
	// the newest). The next page is before the oldest id shown.
	Before int64 `json:"before,omitempty"`
	// More: older messages match beyond this page.
	More bool `json:"more"`
	// Total is how many outbox messages are in State on every page (the
	// plain sends aside): the page shows "the newest N of Total".
	Total int `json:"total"`
}

// MessageView is one message on the page: the outbox's (Message), with
// the key a Delta names it by ("m <id>", or "s …" for a plain send), and
// its reply when it has one.
type MessageView struct {
	Key string `json:"key"`
	Message
	// Reply is the reply its replied line quotes (its first
	// wire.ReplyQuote bytes), here or on the node that took it; absent
	// when none came.
	Reply *ReplyView `json:"reply,omitempty"`
	// Far is, for a message sent to a node of the fleet's bus, its chain
	// on that node (its receipts), out of History; absent when none came.
	Far []FarView `json:"far,omitempty"`
}

// FarView is a message's chain on the machine that took it: Where (its
// DEST, "nats:NODE"), the message's id there (0 or absent: not known),
// and each change there, folded as History is, its reason without the
// "on WHERE (message ID there): " the outbox heads it with.
type FarView struct {
	Where   string  `json:"where"`
	ID      int64   `json:"id,omitempty"`
	History []Event `json:"history"`
}

// ReplyView is a message's reply: who replied (the name it gave) and its
// words, escaped as a message's text is (newlines kept).
type ReplyView struct {
	From string `json:"from"`
	Text string `json:"text"`
}

// HostView is one machine in the Hosts section. Times are RFC 3339, UTC.
type HostView struct {
	// Host is the DEST, "." for this machine.
	Host string `json:"host"`
	// Reachable: its latest answer listed it. Error is that answer's
	// error when it did not.
	Reachable bool     `json:"reachable"`
	Error     string   `json:"error,omitempty"`
	Version   string   `json:"version,omitempty"`
	Notes     []string `json:"notes,omitempty"`
	// Live is how many live sessions it has, Records how many records.
	Live    int `json:"live"`
	Records int `json:"records"`
	// Pending: it has not answered yet.
	Pending bool `json:"pending,omitempty"`
	// Stale: the sessions shown are its last good listing (of SeenAt),
	// since its latest answer failed or its read is late (running since
	// ListingSince).
	Stale        bool   `json:"stale,omitempty"`
	ListingSince string `json:"listingSince,omitempty"`
	// SeenAt is when it last listed; LastError and LastErrorAt the last
	// error it gave and when, kept after it lists again.
	SeenAt      string `json:"seenAt,omitempty"`
	LastError   string `json:"lastError,omitempty"`
	LastErrorAt string `json:"lastErrorAt,omitempty"`
}

// SessionView is one record in the Sessions section.
type SessionView struct {
	// Key names the record in a Delta (host, session id and pid).
	Key       string `json:"key"`
	Host      string `json:"host"`
	Harness   string `json:"harness"`
	Name      string `json:"name"`
	SessionID string `json:"sessionId"`
	ShortID   string `json:"shortId"`
	PID       int    `json:"pid"`
	Cwd       string `json:"cwd"`
	Status    string `json:"status"`
	// WaitingFor is, for a waiting session, what it waits on.
	WaitingFor    string `json:"waitingFor,omitempty"`
	Kind          string `json:"kind,omitempty"`
	StartedAt     string `json:"startedAt,omitempty"`
	Endpoint      string `json:"endpoint,omitempty"`
	Addressable   bool   `json:"addressable"`
	Unaddressable string `json:"unaddressable,omitempty"`
	Live          bool   `json:"live"`
	Verdict       string `json:"verdict"`
	Reason        string `json:"reason,omitempty"`
	// Stale: its host's listing is not current (HostView.Stale).
	Stale bool `json:"stale,omitempty"`
	// Address is what send takes for it: its endpoint, else its short id.
	Address string `json:"address,omitempty"`
}

// localHost is how this machine is named in the page, as `list` does.
const localHost = "."

// Build makes the page's data at time at from what is known of each
// machine and the outbox: hosts in the order given, sessions grouped by
// host (in that order), live ones first, then by name and pid; messages as
// given (newest first). A machine whose latest answer failed, or whose
// read has run longer than stale, shows its last good listing marked
// stale. Every text is shown (safe): escaped, home ("": none) written "~".
func Build(at time.Time, hosts []HostRead, msgs []Message, outboxErr string, stale time.Duration, home string) State {
	show := func(s string) string { return safe(s, home) }
	st := State{At: wire.RFC3339(at), Hosts: make([]HostView, 0, len(hosts)), Messages: messageViews(msgs, home), OutboxError: show(outboxErr)}
	n := 0
	for _, h := range hosts {
		n += len(h.Listing.Sessions)
	}
	st.Sessions = make([]SessionView, 0, n)
	var entries []domain.Entry
	for _, r := range hosts {
		h := r.Listing
		name := h.Host
		if name == "" {
			name = localHost
		}
		hv := HostView{Host: show(name), Reachable: r.Err == "" && !r.SeenAt.IsZero(), Error: show(r.Err), Version: show(h.Version),
			Records: len(h.Sessions), Pending: r.Err == "" && r.SeenAt.IsZero(), SeenAt: stamp(r.SeenAt), LastError: show(r.LastErr), LastErrorAt: stamp(r.LastErrAt)}
		if late := !r.Since.IsZero() && at.Sub(r.Since) > stale; late {
			hv.ListingSince = stamp(r.Since)
			hv.Stale = !r.SeenAt.IsZero()
		}
		hv.Stale = hv.Stale || r.Err != "" && !r.SeenAt.IsZero()
		for _, note := range h.Notes {
			hv.Notes = append(hv.Notes, show(note))
		}
		entries = slices.Grow(entries[:0], len(h.Sessions))[:len(h.Sessions)]
		for i, s := range h.Sessions {
			entries[i] = domain.Entry{}
			entries[i].Record.SessionID = s.SessionID
			entries[i].Record.Name = s.Name
		}
		short := domain.ShortIDs(entries)
		first := len(st.Sessions)
		for i, s := range h.Sessions {
			live := s.Verdict == "live"
			if live {
				hv.Live++
			}
			v := SessionView{Host: hv.Host, Harness: s.Harness, Name: show(s.Name), SessionID: show(s.SessionID), ShortID: show(short[i]),
				PID: s.PID, Cwd: show(s.Cwd), Status: show(s.Status), WaitingFor: show(s.WaitingFor), Kind: show(s.Kind), StartedAt: s.StartedAt,
				Endpoint: show(s.Endpoint), Addressable: s.Addressable, Unaddressable: show(s.Unaddressable), Live: live,
				Verdict: s.Verdict, Reason: show(s.Reason), Stale: hv.Stale}
			if live && s.Addressable {
				v.Address = v.Endpoint
				if v.Address == "" {
					v.Address = v.ShortID
				}
			}
			st.Sessions = append(st.Sessions, v)
		}
		slices.SortStableFunc(st.Sessions[first:], func(a, b SessionView) int {
			if a.Live != b.Live {
				if a.Live {
					return -1
				}
				return 1
			}
			return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.PID, b.PID))
		})
		st.Hosts = append(st.Hosts, hv)
	}
	keys := map[string]int{}
	for i := range st.Sessions {
		sv := &st.Sessions[i]
		sv.Key = unique(keys, sv.Host+" "+sv.SessionID+" "+strconv.Itoa(sv.PID))
	}
	return st
}

// safeMessage makes m's texts safe to show (safe, home "" for none
// written "~"; its text, the sender's words as sent, with safeText), and
// folds its history.
func safeMessage(m *Message, home string) {
	show := func(s string) string { return safe(s, home) }
	m.Key, m.Reason, m.Address, m.Host, m.SessionID, m.Text = show(m.Key), show(m.Reason), show(m.Address), show(m.Host), show(m.SessionID), safeText(m.Text, "")
	m.MsgID, m.Rule, m.ApprovedBy = show(m.MsgID), show(m.Rule), show(m.ApprovedBy)
	if f := m.Sender; f != nil {
		m.Sender = &wire.Sender{Entrance: show(f.Entrance), Where: show(f.Where), SessionName: show(f.SessionName),
			SessionID: show(f.SessionID), As: show(f.As)} // the caller's stays as it is
	}
	m.History = safeHistory(m.History, home)
}

// safeHistory is hist (not changed) folded, its reasons shown (safe).
func safeHistory(hist []Event, home string) []Event {
	out := fold(slices.Clone(hist))
	for i := range out {
		out[i].Reason = safe(out[i].Reason, home)
	}
	return out
}

// safe is s as the page shows any text (the one rule for every text of
// its data, the answers to its requests included): each path under home
// ("": none) written "~" (tilde), then escaped as the CLI prints it
// (wire.Safe).
func safe(s, home string) string { return wire.Safe(tilde(s, home)) }

// tilde is s with each path under home (home itself, or home followed by
// "/") written "~" as a shell would: "/home/u/.claude/x" is "~/.claude/x";
// "/home/u2" and "/x/home/u" are other paths and stay.
func tilde(s, home string) string {
	home = strings.TrimRight(home, "/")
	if home == "" || !strings.Contains(s, home) {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, home)
		if i < 0 {
			break
		}
		end := i + len(home)
		starts := i == 0 || !pathByte(s[i-1])
		ends := end == len(s) || s[end] == '/' || !pathByte(s[end])
		b.WriteString(s[:i])
		if starts && ends {
			b.WriteString("~")
		} else {
			b.WriteString(home)
		}
		s = s[end:]
	}
	b.WriteString(s)
	return b.String()
}

// pathByte says whether c may be part of a path's name or separator.
func pathByte(c byte) bool {
	return c == '/' || c == '.' || c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// fold makes each run of events of one state (every attempt of a message
// whose target is away adds one) one event: the run's latest, with Count.
func fold(hist []Event) []Event {
	out := hist[:0]
	for _, e := range hist {
		if n := len(out); n > 0 && out[n-1].State == e.State {
			e.Count = max(out[n-1].Count, 1) + max(e.Count, 1)
			out[n-1] = e
			continue
		}
		out = append(out, e)
	}
	return out
}

// safeText is a message's text as the page shows it: each path under
// home ("": none) written "~" (tilde), then escaped by the CLI's rule for
// a reply (wire.SafeText: newlines and tabs kept; once anything is
// escaped, every backslash doubled).
func safeText(s, home string) string { return wire.SafeText(tilde(s, home)) }

// stamp is t as the page's times are written ("" for the zero time).
func stamp(t time.Time) string { return wire.RFC3339(t) }

// NodeView is one node of the fleet: its name and its live sessions as
// its presence on the bus says (other machines' words: escaped).
type NodeView struct {
	Node     string            `json:"node"`
	Sessions []NodeSessionView `json:"sessions"`
}

// NodeSessionView is one live session of a node.
type NodeSessionView struct {
	Harness   string `json:"harness"`
	Name      string `json:"name"`
	SessionID string `json:"sessionId"`
	PID       int    `json:"pid"`
	Status    string `json:"status"`
	// WaitingFor is, for a waiting session, what it waits on.
	WaitingFor  string `json:"waitingFor,omitempty"`
	Cwd         string `json:"cwd"`
	Endpoint    string `json:"endpoint,omitempty"`
	Addressable bool   `json:"addressable"`
}

// FleetViews is the fleet's listing (list --fleet's: each session with
// Host "nats:NODE", in node order) grouped by node, every text shown
// (safe: home, "" for none, written "~").
func FleetViews(l wire.Listing, home string) []NodeView {
	show := func(s string) string { return safe(s, home) }
	out := []NodeView{}
	for _, s := range l.Sessions {
		node := show(strings.TrimPrefix(s.Host, domain.NodePrefix))
		if len(out) == 0 || out[len(out)-1].Node != node {
			out = append(out, NodeView{Node: node, Sessions: []NodeSessionView{}})
		}
		n := &out[len(out)-1]
		n.Sessions = append(n.Sessions, NodeSessionView{Harness: show(s.Harness), Name: show(s.Name), SessionID: show(s.SessionID), PID: s.PID,
			Status: show(s.Status), WaitingFor: show(s.WaitingFor), Cwd: show(s.Cwd), Endpoint: show(s.Endpoint), Addressable: s.Addressable})
	}
	return out
}
