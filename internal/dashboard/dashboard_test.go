package dashboard

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/ports/wire"
)

const (
	testAddr  = "127.0.0.1:4711"
	testToken = "0123456789abcdef"
)

func newTest(t *testing.T, b Backend) *Dashboard {
	t.Helper()
	d, err := New(b, Options{Addr: testAddr, Token: testToken})
	require.NoError(t, err)
	return d
}

// do sends a request to d as a browser on the bound address would, with
// the cookie unless cookie is false; change edits it first.
func do(d http.Handler, method, target string, cookie bool, body string, change func(*http.Request)) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, "http://"+testAddr+target, strings.NewReader(body))
	if cookie {
		r.AddCookie(&http.Cookie{Name: "peerctl-4711", Value: testToken})
	}
	if method == http.MethodPost {
		r.Header.Set("Origin", "http://"+testAddr)
		r.Header.Set("Content-Type", "application/json")
	}
	if change != nil {
		change(r)
	}
	w := httptest.NewRecorder()
	d.ServeHTTP(w, r)
	return w
}

func TestTokenInURLSetsCookieAndDropsIt(t *testing.T) {
	d := newTest(t, &fake{})
	assert.Equal(t, "http://"+testAddr+"/?token="+testToken, d.URL())
	w := do(d, http.MethodGet, "/?token="+testToken, false, "", nil)
	require.Equal(t, http.StatusSeeOther, w.Code)
	assert.Equal(t, "/", w.Header().Get("Location"), "the token leaves the URL")
	cs := w.Result().Cookies()
	require.Len(t, cs, 1)
	c := cs[0]
	assert.Equal(t, "peerctl-4711", c.Name)
	assert.Equal(t, testToken, c.Value)
	assert.True(t, c.HttpOnly)
	assert.Equal(t, http.SameSiteStrictMode, c.SameSite)
	assert.Equal(t, "/", c.Path)

	w = do(d, http.MethodGet, "/", true, "", nil)
	require.Equal(t, http.StatusOK, w.Code)
	assert.Contains(t, w.Body.String(), "<title>peerctl dashboard</title>")
}

func TestRefusedWithoutTheToken(t *testing.T) {
	d := newTest(t, &fake{})
	for _, tc := range []struct {
		name   string
		target string
		cookie *http.Cookie
		says   string
	}{
		{"no cookie", "/", nil, "no token"},
		{"no cookie, api", "/api/state", nil, "no token"},
		{"no cookie, asset", "/app.js", nil, "no token"},
		{"wrong cookie", "/", &http.Cookie{Name: "peerctl-4711", Value: testToken + "0"}, "wrong token (each run of peerctl serve makes a new one)"},
		{"cookie of another port", "/", &http.Cookie{Name: "peerctl-4712", Value: testToken}, "no token"},
		{"wrong token in URL", "/?token=" + testToken[:len(testToken)-1] + "x", nil, "wrong token"},
		{"empty cookie", "/", &http.Cookie{Name: "peerctl-4711", Value: ""}, "no token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := do(d, http.MethodGet, tc.target, false, "", func(r *http.Request) {
				if tc.cookie != nil {
					r.AddCookie(tc.cookie)
				}
			})
			assert.Equal(t, http.StatusForbidden, w.Code)
			assert.Empty(t, w.Result().Cookies())
			assert.NotContains(t, w.Body.String(), "peerctl dashboard</title>")
			assert.Contains(t, w.Body.String(), tc.says)
		})
	}
}

func TestWrongHostIsMisdirected(t *testing.T) {
	d := newTest(t, &fake{})
	for _, host := range []string{"evil.example:4711", "localhost:4711", "127.0.0.1:4712", "127.0.0.1", ""} {
		t.Run(host, func(t *testing.T) {
			w := do(d, http.MethodGet, "/?token="+testToken, true, "", func(r *http.Request) { r.Host = host })
			assert.Equal(t, http.StatusMisdirectedRequest, w.Code)
			assert.Empty(t, w.Result().Cookies(), "no cookie for a rebound name")
		})
	}
}

func TestPostNeedsTheOrigin(t *testing.T) {
	f := &fake{msgs: []Message{{ID: 3, State: "stored", Address: "x", Text: "t"}}}
	d := newTest(t, f)
	for _, tc := range []struct {
		name, origin string
		want         int
	}{
		{"no origin", "", http.StatusForbidden},
		{"other origin", "http://evil.example", http.StatusForbidden},
		{"other port", "http://127.0.0.1:4712", http.StatusForbidden},
		{"https", "https://" + testAddr, http.StatusForbidden},
		{"null", "null", http.StatusForbidden},
		{"own origin", "http://" + testAddr, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := do(d, http.MethodPost, "/api/send", true, `{"address":"a","text":"hi"}`, func(r *http.Request) {
				r.Header.Del("Origin")
				if tc.origin != "" {
					r.Header.Set("Origin", tc.origin)
				}
			})
			assert.Equal(t, tc.want, w.Code)
		})
	}
	assert.Equal(t, []string{"a\x00hi"}, f.sent, "only the page's own send went through")
	w := do(d, http.MethodPost, "/api/outbox/3/cancel", false, "{}", nil)
	assert.Equal(t, http.StatusForbidden, w.Code, "a POST without the cookie")
	w = do(d, http.MethodDelete, "/api/outbox/3/cancel", true, "", func(r *http.Request) { r.Header.Set("Origin", "http://"+testAddr) })
	assert.Equal(t, http.StatusMethodNotAllowed, w.Code)
	assert.Equal(t, "stored", f.msgs[0].State)
}

func TestSecurityHeadersOnEveryAnswer(t *testing.T) {
	d := newTest(t, &fake{})
	for _, w := range []*httptest.ResponseRecorder{
		do(d, http.MethodGet, "/", true, "", nil),
		do(d, http.MethodGet, "/app.js", true, "", nil),
		do(d, http.MethodGet, "/api/state", true, "", nil),
		do(d, http.MethodGet, "/", false, "", nil),
		do(d, http.MethodGet, "/", true, "", func(r *http.Request) { r.Host = "evil:1" }),
		do(d, http.MethodGet, "/api/nothing", true, "", nil),
	} {
		h := w.Header()
		assert.Equal(t, "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'", h.Get("Content-Security-Policy"))
		assert.Equal(t, "nosniff", h.Get("X-Content-Type-Options"))
		assert.Equal(t, "no-referrer", h.Get("Referrer-Policy"))
		for k := range h {
			assert.False(t, strings.HasPrefix(k, "Access-Control-"), "no CORS header: %s", k)
		}
	}
	w := do(d, http.MethodGet, "/", true, "", func(r *http.Request) { r.Header.Set("Origin", "http://evil.example") })
	assert.Empty(t, w.Header().Get("Access-Control-Allow-Origin"))
}

func TestPageHasNoInlineScriptOrRemoteAsset(t *testing.T) {
	d := newTest(t, &fake{})
	page := do(d, http.MethodGet, "/", true, "", nil).Body.String()
	assert.NotContains(t, page, "<script>", "inline script would be blocked by the CSP")
	assert.NotContains(t, page, "style=")
	assert.NotContains(t, page, "http")
	js := do(d, http.MethodGet, "/app.js", true, "", nil).Body.String()
	assert.NotContains(t, js, "innerHTML")
	assert.NotContains(t, js, "insertAdjacentHTML")
	assert.NotContains(t, js, "document.write")
}

func TestStateEscapesHostileText(t *testing.T) {
	hostile := "<img src=x onerror=alert(1)>\x1b]0;pwn\x07\u202e"
	f := &fake{hosts: []HostListing{{Sessions: []wire.Session{{SessionID: "aaaaaaaa-1", Name: hostile, Cwd: "/x\x1b[31m", Verdict: "live", Status: "idle", Addressable: true, Endpoint: "cc-peer:v1:1:x:/s"}}}},
		msgs: []Message{{ID: 1, State: "stored", Address: "a\x1b[2J", Text: "line one\nline\x07two"}}}
	d := newTest(t, f)
	w := do(d, http.MethodGet, "/api/state", true, "", nil)
	require.Equal(t, http.StatusOK, w.Code)
	assert.Equal(t, "application/json", w.Header().Get("Content-Type"))
	var st State
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &st))
	require.Len(t, st.Sessions, 1)
	assert.Equal(t, wire.Safe(hostile), st.Sessions[0].Name)
	assert.NotContains(t, st.Sessions[0].Name, "\x1b")
	assert.NotContains(t, st.Sessions[0].Cwd, "\x1b")
	assert.Equal(t, `a\x1b[2J`, st.Messages[0].Address)
	assert.Equal(t, "line one\nline\\atwo", st.Messages[0].Text, "newlines kept, other controls escaped")
}

func TestBuildGroupsByHostLiveFirst(t *testing.T) {
	seen := time.Unix(0, 0)
	hosts := []HostRead{
		{Listing: HostListing{Sessions: []wire.Session{
			{SessionID: "bbbbbbbb-2222", Name: "b", Verdict: "stale", Reason: "pid 9 is gone"},
			{SessionID: "aaaaaaaa-1111", Name: "z", Verdict: "live", Addressable: true, Endpoint: "cc-peer:v1:1:z:/s"},
			{SessionID: "aaaaaaaa-1112", Name: "a", Verdict: "live", Unaddressable: "socket /s does not exist"},
		}}, SeenAt: seen},
		{Listing: HostListing{Host: "dev-box"}, Err: "host_unreachable: ssh: connect refused", LastErr: "host_unreachable: ssh: connect refused", LastErrAt: seen},
	}
	st := Build(seen, hosts, nil, "", time.Minute, "")
	require.Len(t, st.Sessions, 3)
	assert.Equal(t, []string{"a", "z", "b"}, []string{st.Sessions[0].Name, st.Sessions[1].Name, st.Sessions[2].Name})
	assert.Equal(t, "aaaaaaaa-1112", st.Sessions[0].ShortID, "the shortest unique prefix, as list shows it")
	assert.Equal(t, "", st.Sessions[0].Address, "not addressable: nothing to send to")
	assert.Equal(t, "cc-peer:v1:1:z:/s", st.Sessions[1].Address)
	require.Len(t, st.Hosts, 2)
	assert.Equal(t, HostView{Host: ".", Reachable: true, Live: 2, Records: 3, SeenAt: "1970-01-01T00:00:00.000Z"}, st.Hosts[0])
	assert.False(t, st.Hosts[1].Reachable)
	assert.Equal(t, "host_unreachable: ssh: connect refused", st.Hosts[1].Error)
	assert.NotNil(t, st.Messages)
}

// A session stopped on its user is shown waiting, with what it waits on
// (escaped as every registry text is).
func TestBuildSaysWhatAWaitingSessionWaitsOn(t *testing.T) {
	hosts := []HostRead{{Listing: HostListing{Sessions: []wire.Session{
		{SessionID: "aaaaaaaa-1111", Name: "a", Verdict: "live", Status: "waiting", WaitingFor: "dialog open\x1b[2J"},
	}}, SeenAt: time.Unix(0, 0)}}
	st := Build(time.Unix(0, 0), hosts, nil, "", time.Minute, "")
	require.Len(t, st.Sessions, 1)
	assert.Equal(t, "waiting", st.Sessions[0].Status)
	assert.Equal(t, `dialog open\x1b[2J`, st.Sessions[0].WaitingFor)
}

// TestBuildFoldsRepeatedStates: a message tried again and again (each
// attempt an event "stored" with its reason) shows each run of one state
// once, with how many times and the latest time and reason.
func TestBuildFoldsRepeatedStates(t *testing.T) {
	hist := []Event{{At: "t1", State: "stored"}, {At: "t2", State: "stored", Reason: "not_live: a"}, {At: "t3", State: "stored", Reason: "not_live: b"},
		{At: "t4", State: "delivering"}, {At: "t5", State: "stored", Reason: "delivery_failed: x"}, {At: "t6", State: "delivered"}}
	st := Build(time.Unix(0, 0), nil, []Message{{ID: 1, State: "delivered", History: hist}}, "", time.Minute, "")
	assert.Equal(t, []Event{{At: "t3", State: "stored", Reason: "not_live: b", Count: 3}, {At: "t4", State: "delivering"},
		{At: "t5", State: "stored", Reason: "delivery_failed: x"}, {At: "t6", State: "delivered"}}, st.Messages[0].History)
}

func TestCancelAndRetryGoToTheBackend(t *testing.T) {
	f := &fake{msgs: []Message{{ID: 7, State: "stored", Address: "x", Text: "t"}}}
	d := newTest(t, f)
	w := do(d, http.MethodPost, "/api/outbox/7/cancel", true, "{}", nil)
	require.Equal(t, http.StatusOK, w.Code)
	var res Result
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &res))
	assert.Equal(t, 0, res.Code)
	assert.JSONEq(t, `"cancelled"`, string(mustField(t, res.JSON, "state")))
	w = do(d, http.MethodPost, "/api/outbox/7/retry", true, "{}", nil)
	require.Equal(t, http.StatusOK, w.Code)
	assert.Equal(t, "stored", f.msgs[0].State)
	for _, bad := range []string{"/api/outbox/x/cancel", "/api/outbox/7/delete", "/api/outbox/-1/cancel", "/api/outbox/7"} {
		assert.Equal(t, http.StatusNotFound, do(d, http.MethodPost, bad, true, "{}", nil).Code, bad)
	}
	w = do(d, http.MethodPost, "/api/outbox/99/cancel", true, "{}", nil)
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &res))
	assert.Equal(t, 2, res.Code)
	assert.Equal(t, "null", string(res.JSON))
}

func mustField(t *testing.T, raw json.RawMessage, key string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &m))
	return m[key]
}

func TestSendWithAwaitAndBadForms(t *testing.T) {
	f := &fake{}
	d := newTest(t, f)
	w := do(d, http.MethodPost, "/api/send", true, `{"address":"s","text":"q?","await":true}`, nil)
	require.Equal(t, http.StatusOK, w.Code)
	assert.Contains(t, w.Body.String(), `"reply to q?"`)
	for _, body := range []string{``, `{`, `{"address":"s"}`, `{"text":"t"}`} {
		assert.Equal(t, http.StatusBadRequest, do(d, http.MethodPost, "/api/send", true, body, nil).Code, body)
	}
}

func TestOnlyTheBoundAddressGetsTheCookie(t *testing.T) {
	d := newTest(t, &fake{})
	u, err := url.Parse(d.URL())
	require.NoError(t, err)
	assert.Equal(t, testAddr, u.Host)
	assert.Equal(t, testToken, u.Query().Get("token"))
	d2, err := New(&fake{}, Options{Addr: testAddr})
	require.NoError(t, err)
	u2, _ := url.Parse(d2.URL())
	assert.Len(t, u2.Query().Get("token"), 64, "a fresh 256-bit token")
	assert.NotEqual(t, testToken, u2.Query().Get("token"))
	_ = io.Discard
}

// TestMessagesReadably: the messages' document shows the user's home as
// "~" in every reason (not in the text, which is the sender's), names the
// sender, and carries the reply its replied line quotes as a field of its
// own, escaped as a text is (newlines kept).
func TestMessagesReadably(t *testing.T) {
	reply := wire.RepliedReason("rev", "on main\nall green \x1b[31m")
	f := &fake{msgs: []Message{{ID: 4, State: "replied", Address: "rev", Text: "see /home/u/src", Sender: &wire.Sender{Entrance: "mcp", SessionName: "reviewer-1", As: "mcp:reviewer-1"},
		Reason: "the transcript /home/u/.claude/projects/x.jsonl shows it",
		History: []Event{{At: "t1", State: "stored", Reason: "not_live: no session; registry /home/u/.claude/sessions, /home/u2/x, /x/home/u/y"},
			{At: "t2", State: "delivered", Reason: "the harness took it"}, {At: "t3", State: "replied", Reason: reply}}}}}
	d, err := New(f, Options{Addr: testAddr, Token: testToken, Home: "/home/u/"})
	require.NoError(t, err)
	w := do(d, http.MethodGet, "/api/state", true, "", nil)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	var st State
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &st))
	require.Len(t, st.Messages, 1)
	m := st.Messages[0]
	assert.Equal(t, "the transcript ~/.claude/projects/x.jsonl shows it", m.Reason)
	assert.Equal(t, "not_live: no session; registry ~/.claude/sessions, /home/u2/x, /x/home/u/y", m.History[0].Reason, "another user's home and a path that only contains it stay")
	assert.Equal(t, "see /home/u/src", m.Text, "the text is the sender's, as sent")
	require.NotNil(t, m.Sender)
	assert.Equal(t, "mcp:reviewer-1", m.Sender.As)
	require.NotNil(t, m.Reply)
	assert.Equal(t, ReplyView{From: "rev", Text: `on main` + "\n" + `all green \x1b[31m`}, *m.Reply)
	assert.NotContains(t, w.Body.String(), "/home/u/.claude")
}

func TestTilde(t *testing.T) {
	for _, tc := range []struct{ in, home, want string }{
		{"/home/u", "/home/u", "~"},
		{"/home/u/", "/home/u", "~/"},
		{"at /home/u/x and (/home/u/y)", "/home/u", "at ~/x and (~/y)"},
		{"cc-peer:v1:7:p:/home/u/.s.sock", "/home/u", "cc-peer:v1:7:p:~/.s.sock"},
		{"/home/user/x /home/u.old", "/home/u", "/home/user/x /home/u.old"},
		{"/root/x", "", "/root/x"},
		{"/x", "/", "/x"},
	} {
		assert.Equal(t, tc.want, tilde(tc.in, tc.home), "%q with home %q", tc.in, tc.home)
	}
}

// TestApproveAndDenyGoToTheBackend: a held message's Approve and Deny
// are the backend's (outbox approve|deny), with the token and from the
// page's own origin only, as every change.
func TestApproveAndDenyGoToTheBackend(t *testing.T) {
	f := &fake{msgs: []Message{{ID: 8, State: "awaiting_approval"}, {ID: 7, State: "awaiting_approval"}}}
	d := newTest(t, f)
	other := func(r *http.Request) { r.Header.Set("Origin", "http://evil.example") }
	for _, op := range []string{"approve", "deny"} {
		assert.Equal(t, http.StatusForbidden, do(d, http.MethodPost, "/api/outbox/7/"+op, true, "{}", other).Code, op)
		assert.Equal(t, http.StatusForbidden, do(d, http.MethodPost, "/api/outbox/7/"+op, false, "{}", nil).Code, op)
		assert.Equal(t, http.StatusNotFound, do(d, http.MethodGet, "/api/outbox/7/"+op, true, "", nil).Code, op)
	}
	assert.Equal(t, "awaiting_approval", f.msgs[1].State, "refused requests changed nothing")
	w := do(d, http.MethodPost, "/api/outbox/7/approve", true, "", nil)
	require.Equal(t, http.StatusOK, w.Code)
	assert.Equal(t, "stored", f.msgs[1].State, "approved: stored for delivery")
	w = do(d, http.MethodPost, "/api/outbox/8/deny", true, "{}", nil)
	require.Equal(t, http.StatusOK, w.Code)
	assert.Equal(t, "denied", f.msgs[0].State)
}

// A message's text, its reply and a command's answer are escaped by the
// CLI's rule for a reply (wire.SafeText): newlines and tabs kept; once
// anything is escaped, every backslash is doubled, on every line, and
// quotes stay as they are; with nothing to escape the text is as sent.
func TestTextsEscapedByTheCLIsRule(t *testing.T) {
	hostile := `C:\dir "q"` + "\n" + `bell` + "\a"
	want := `C:\\dir "q"` + "\n" + `bell\a`
	reply := wire.RepliedReason("rev", hostile)
	f := &fake{msgs: []Message{{ID: 4, State: "replied", Address: "rev", Text: hostile, History: []Event{{At: "t3", State: "replied", Reason: reply}}},
		{ID: 3, State: "stored", Address: "rev", Text: `C:\dir "q"` + "\n\tok"}}}
	d := newTest(t, f)
	w := do(d, http.MethodGet, "/api/state", true, "", nil)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	var st State
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &st))
	require.Len(t, st.Messages, 2)
	byID := map[int64]MessageView{st.Messages[0].ID: st.Messages[0], st.Messages[1].ID: st.Messages[1]}
	assert.Equal(t, want, byID[4].Text)
	require.NotNil(t, byID[4].Reply)
	assert.Equal(t, want, byID[4].Reply.Text)
	assert.Equal(t, `C:\dir "q"`+"\n\tok", byID[3].Text, "nothing to escape: as sent")
	assert.Equal(t, wire.SafeText(hostile), want, "the CLI's rule")
}
