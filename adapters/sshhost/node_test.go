package sshhost_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/sshhost"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/wire"
)

// answering is a Remote whose every call ends with res.
type answering struct{ res ports.RemoteResult }

func (a answering) Call(context.Context, ports.RemoteCall) (ports.RemoteResult, error) {
	return a.res, nil
}

func (a answering) Stream(context.Context, ports.RemoteCall) (ports.RemoteStream, error) {
	panic("not called")
}

// TestNodeListKeepsTheFarVersion: a listing says which peerctl the far
// side runs, as its hello named it (the dashboard's Hosts show it).
func TestNodeListKeepsTheFarVersion(t *testing.T) {
	dest, err := domain.ParseDest("dev-box")
	require.NoError(t, err)
	n := sshhost.NewNode(answering{ports.RemoteResult{Stdout: []byte("[]\n"), Version: "v1.4.0"}}, dest, time.Minute)
	got, err := n.List(context.Background(), wire.ListQuery{})
	require.NoError(t, err)
	assert.Equal(t, "v1.4.0", got.Version)
	assert.Empty(t, got.Sessions)
}

// A far peerctl that had the text and then failed without a receipt or a
// refusal (a panic is exit 2, a kill 137, exit 1) is outcome_unknown naming
// the host, its exit code and its last words, never a usage error; a dry
// run's failure stays the far side's own (issue 27, bad 3).
func TestNodeSendOfAFarSideThatFailedAfterTheText(t *testing.T) {
	d, err := domain.ParseDest("box")
	require.NoError(t, err)
	for _, tc := range []struct {
		code   int
		stderr string
		words  string
	}{
		{2, "panic: boom\n\ngoroutine 1 [running]:\nmain.main()\n\t/x.go:3 +0x1d\nexit status 2\n", "its last words: panic: boom"},
		{1, "", "it said nothing"},
		{137, "killed \x1b[2J\n", "killed"},
	} {
		n := sshhost.NewNode(answering{ports.RemoteResult{Code: tc.code, Stderr: []byte(tc.stderr)}}, d, time.Minute)
		_, err := n.Send(context.Background(), wire.SendQuery{Address: "proj-89", Text: "hi"})
		r, ok := domain.AsRefusal(err)
		require.True(t, ok, "exit %d: %v", tc.code, err)
		assert.Equal(t, domain.ReasonOutcomeUnknown, r.Reason, "exit %d", tc.code)
		assert.Contains(t, r.Detail, "peerctl on box ended with exit "+strconv.Itoa(tc.code))
		assert.Contains(t, r.Detail, tc.words)
		assert.NotContains(t, r.Detail, "\x1b")
	}
	n := sshhost.NewNode(answering{ports.RemoteResult{Code: 2, Stderr: []byte("peerctl: bad flag\n")}}, d, time.Minute)
	_, err = n.Send(context.Background(), wire.SendQuery{Address: "proj-89", Text: "hi", DryRun: true})
	_, isRefusal := domain.AsRefusal(err)
	assert.False(t, isRefusal, "a dry run sent nothing: its failure is the far side's own")
}

// The far side's command line: the text travels on stdin, announced by its
// length, after "--" and the address, so no TEXT is ever read as a flag.
func TestNodeSendArgs(t *testing.T) {
	d, err := domain.ParseDest("box")
	require.NoError(t, err)
	rec := &recording{res: ports.RemoteResult{Stdout: []byte("{}")}}
	n := sshhost.NewNode(rec, d, time.Minute)
	_, _ = n.Send(context.Background(), wire.SendQuery{Address: "proj-89", Text: "--stdin-bytes=3", Timeout: 30 * time.Second,
		ConfirmTimeout: 5 * time.Second, Wait: time.Minute, From: "ci", NoConfirm: true})
	require.NotNil(t, rec.call.Stdin)
	b, _ := io.ReadAll(rec.call.Stdin)
	assert.Equal(t, "--stdin-bytes=3", string(b))
	a := rec.call.Args
	assert.Equal(t, []string{"--", "proj-89", "-"}, a[len(a)-3:])
	assert.Equal(t, "--stdin-bytes=15", a[1])
	for _, want := range []string{"--timeout=30s", "--confirm-timeout=5s", "--json", "--from=ci", "--no-confirm", "--wait=1m0s"} {
		assert.Contains(t, a, want)
	}
	assert.NotContains(t, a, "--dry-run")
}

// recording is a Remote that keeps the call it got and answers with res.
type recording struct {
	call ports.RemoteCall
	res  ports.RemoteResult
}

func (r *recording) Call(_ context.Context, c ports.RemoteCall) (ports.RemoteResult, error) {
	r.call = c
	return r.res, nil
}

func (r *recording) Stream(context.Context, ports.RemoteCall) (ports.RemoteStream, error) {
	panic("not called")
}

// A far side's doctor comes back as its document: its own keys read
// exactly, each harness's object kept in its order, its table and summary
// (output protocol 4), its stderr as notes but for the problems the
// document holds; an ok that disagrees with the exit code, a document of
// another shape, or an exit that is neither 0 nor 1 is no report.
func TestNodeDoctor(t *testing.T) {
	d, err := domain.ParseDest("box")
	require.NoError(t, err)
	doc := wire.Doctor{OK: false, Problems: []string{"claude: find: not found"}, Warnings: []string{},
		SocketDirs: []wire.DoctorSocket{}, Reach: wire.DoctorReach{Health: "skip", Unreachable: []wire.DoctorUnreachable{}},
		Session:   wire.DoctorSession{EnvVars: []string{}, Via: "none"},
		Rows:      []wire.DoctorRow{{Check: "claude", Health: "fail", Text: "not found"}, {Check: "mcp", Health: "skip", Text: "none"}},
		Summary:   "peerctl cannot work as configured here: 1 problem.",
		Harnesses: []wire.DoctorHarness{{Key: "zeta", JSON: map[string]string{"health": "fail"}}, {Key: "alpha", JSON: map[string]string{"health": "ok"}}}}
	b, err := json.Marshal(doc)
	require.NoError(t, err)
	stderr := "peerctl: note: registry folder missing\npeerctl: problem: claude: find: not found\n"
	n := sshhost.NewNode(answering{ports.RemoteResult{Code: 1, Stdout: b, Stderr: []byte(stderr)}}, d, time.Minute)
	got, err := n.Doctor(context.Background())
	require.NoError(t, err)
	assert.Equal(t, doc.Rows, got.Rows)
	assert.Equal(t, doc.Summary, got.Summary)
	assert.Equal(t, []string{"peerctl: note: registry folder missing"}, got.Notes, "the problem line is the document's")
	require.Len(t, got.Harnesses, 2)
	assert.Equal(t, "zeta", got.Harnesses[0].Key, "the far side's order")
	again, err := json.Marshal(got)
	require.NoError(t, err)
	assert.JSONEq(t, string(b), string(again), "printed here as it was printed there")

	for name, res := range map[string]ports.RemoteResult{
		"ok with exit 1":  {Code: 1, Stdout: bytes.Replace(b, []byte(`"ok":false`), []byte(`"ok":true`), 1)},
		"an unknown key":  {Code: 1, Stdout: bytes.Replace(b, []byte(`"summary"`), []byte(`"sumary"`), 1)},
		"a key twice":     {Code: 1, Stdout: bytes.Replace(b, []byte(`"alpha"`), []byte(`"zeta"`), 1)},
		"two objects":     {Code: 1, Stdout: append(append([]byte{}, b...), b...)},
		"no object":       {Code: 1, Stdout: []byte("[]")},
		"a harness array": {Code: 1, Stdout: bytes.Replace(b, []byte(`{"health":"ok"}`), []byte(`[1]`), 1)},
	} {
		_, err := sshhost.NewNode(answering{res}, d, time.Minute).Doctor(context.Background())
		r, ok := domain.AsRefusal(err)
		require.True(t, ok, "%s: %v", name, err)
		assert.Equal(t, domain.ReasonHostUnreachable, r.Reason, name)
	}
	_, err = sshhost.NewNode(answering{ports.RemoteResult{Code: 2, Stderr: []byte("peerctl: unknown flag: --json\n")}}, d, time.Minute).Doctor(context.Background())
	assert.ErrorContains(t, err, "unknown flag")
}

// A far doctor's document that is incomplete, names a harness as none is
// named, or nests too deep is no report; a far side's stderr lines pass
// as it printed them, its problem lines left to the document.
func TestNodeDoctorRefusesOtherShapes(t *testing.T) {
	d, err := domain.ParseDest("box")
	require.NoError(t, err)
	good := wire.Doctor{OK: true, Problems: []string{}, Warnings: []string{}, SocketDirs: []wire.DoctorSocket{},
		Reach: wire.DoctorReach{Unreachable: []wire.DoctorUnreachable{}}, Session: wire.DoctorSession{EnvVars: []string{}},
		Rows: []wire.DoctorRow{}, Summary: "peerctl is usable here."}
	b, err := json.Marshal(good)
	require.NoError(t, err)
	deep := `{"a":` + strings.Repeat(`{"a":`, 40) + `1` + strings.Repeat(`}`, 41)
	for name, out := range map[string]string{
		"empty":                    `{}`,
		"no summary":               strings.Replace(string(b), `,"summary":"peerctl is usable here."`, ``, 1),
		"null problems":            strings.Replace(string(b), `"problems":[]`, `"problems":null`, 1),
		"an escape key":            strings.Replace(string(b), `"ok":true`, `"ok":true,"x\u001b[2J":{}`, 1),
		"an upper key":             strings.Replace(string(b), `"ok":true`, `"ok":true,"Claude":{}`, 1),
		"a deep harness":           strings.Replace(string(b), `"ok":true`, `"ok":true,"deep":`+deep, 1),
		"an own key twice":         strings.Replace(string(b), `"ok":true`, `"ok":true,"ok":true`, 1),
		"a key twice in a harness": strings.Replace(string(b), `"ok":true`, `"ok":true,"qwen":{"health":"skip","health":"ok"}`, 1),
	} {
		_, err := sshhost.NewNode(answering{ports.RemoteResult{Stdout: []byte(out)}}, d, time.Minute).Doctor(context.Background())
		r, ok := domain.AsRefusal(err)
		require.True(t, ok, "%s: %v", name, err)
		assert.Equal(t, domain.ReasonHostUnreachable, r.Reason, name)
	}

	stderr := "warning: a banner line of the far shell\npeerctl: problem: a \\nb is bad\npeerctl: note: folder missing\n"
	got, err := sshhost.NewNode(answering{ports.RemoteResult{Stdout: b, Stderr: []byte(stderr)}}, d, time.Minute).Doctor(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []string{"warning: a banner line of the far shell", "peerctl: note: folder missing"}, got.Notes)
	again, err := json.Marshal(got)
	require.NoError(t, err)
	assert.JSONEq(t, string(b), string(again))
}

// After the text was handed over, anything but a whole receipt that agrees
// with the call and its exit code is outcome_unknown, never a success and
// never host_unreachable: a refusal of a reason this build cannot read, a
// receipt missing its keys, an ok false that is not no_reply's with its
// exit, a plan for a send that was no dry run, a reply no one awaited.
func TestNodeSendReadsOnlyAWholeReceipt(t *testing.T) {
	d, err := domain.ParseDest("box")
	require.NoError(t, err)
	good := wire.Receipt{OK: true, Outcome: "posted", Transport: "socket", Harness: "claude-code", SessionID: "s1", PID: 7, Name: "proj"}
	doc := func(edit func(*wire.Receipt)) string {
		r := good
		edit(&r)
		b, err := json.Marshal(r)
		require.NoError(t, err)
		return string(b)
	}
	noReply := func(r *wire.Receipt) {
		r.OK, r.Refusal = false, &wire.RefusalBody{Reason: "no_reply", Detail: "none", ExitCode: 9}
	}
	q := wire.SendQuery{Address: "proj", Text: "hi"}
	for name, tc := range map[string]struct {
		out  string
		code int
		q    wire.SendQuery
	}{
		"ok false alone":         {`{"ok":false}`, 9, q},
		"an empty object":        {`{}`, 9, q},
		"an unknown reason":      {`{"ok":false,"refusal":{"reason":"bogus","detail":"x","exitCode":9}}`, 9, q},
		"a receipt missing keys": {`{"ok":true,"outcome":"posted"}`, 0, q},
		"no_reply with exit 2":   {doc(noReply), 2, wire.SendQuery{Address: "proj", Text: "hi", AwaitReply: time.Minute}},
		"ok false, no refusal":   {doc(func(r *wire.Receipt) { r.OK = false }), 9, q},
		"a plan, no dry run":     {doc(func(r *wire.Receipt) { r.Plan = &domain.Plan{Transport: "socket"} }), 0, q},
		"a reply no one awaited": {doc(func(r *wire.Receipt) { r.Reply = &wire.Inbound{Text: "x"} }), 0, q},
		"no session":             {doc(func(r *wire.Receipt) { r.SessionID = "" }), 0, q},
		"ok true with a refusal": {doc(func(r *wire.Receipt) { r.Refusal = &wire.RefusalBody{Reason: "no_reply"} }), 0, q},
	} {
		_, err := sshhost.NewNode(answering{ports.RemoteResult{Code: tc.code, Stdout: []byte(tc.out)}}, d, time.Minute).Send(context.Background(), tc.q)
		r, ok := domain.AsRefusal(err)
		require.True(t, ok, "%s: %v", name, err)
		assert.Equal(t, domain.ReasonOutcomeUnknown, r.Reason, "%s: %v", name, err)
	}
	for name, tc := range map[string]struct {
		out  string
		code int
		q    wire.SendQuery
	}{
		"a receipt":        {doc(func(*wire.Receipt) {}), 0, q},
		"no_reply, exit 9": {doc(noReply), 9, wire.SendQuery{Address: "proj", Text: "hi", AwaitReply: time.Minute}},
		"a far not_live":   {`{"ok":false,"refusal":{"reason":"not_live","detail":"no session","exitCode":3}}`, 3, q},
	} {
		sent, err := sshhost.NewNode(answering{ports.RemoteResult{Code: tc.code, Stdout: []byte(tc.out)}}, d, time.Minute).Send(context.Background(), tc.q)
		if name == "a far not_live" {
			r, ok := domain.AsRefusal(err)
			require.True(t, ok, "%s: %v", name, err)
			assert.Equal(t, domain.ReasonNotLive, r.Reason, name)
			continue
		}
		require.NoError(t, err, name)
		assert.Equal(t, tc.code, sent.Code, name)
		assert.Equal(t, "box", sent.Receipt.Host, name)
	}
}

// A far receipt for another session than the call named (by full id, by
// endpoint, by a name or an id prefix it does not carry) is
// outcome_unknown: the far side had the text; the refusal names both
// sessions. A dry run sent nothing: such a receipt is a far side this
// build cannot trust (host_unreachable). (Issue 41.)
func TestNodeSendRefusesAReceiptForAnotherSession(t *testing.T) {
	d, err := domain.ParseDest("box")
	require.NoError(t, err)
	const id, other = "26df9a5b-d23c-4223-a45d-b9ec61fda652", "a8f89b60-f614-4b1f-b979-950c805fd8b1"
	ep := "cc-peer:v1:4652:proj-89:/tmp/s.sock"
	receipt := func(id, name, endpoint string, pid int) []byte {
		b, err := json.Marshal(wire.Receipt{OK: true, Outcome: "posted", Transport: "socket", Harness: "claude-code", SessionID: id, PID: pid, Name: name, Endpoint: endpoint})
		require.NoError(t, err)
		return b
	}
	wrong := receipt(other, "proj-90", "cc-peer:v1:5031:proj-90:/tmp/t.sock", 5031)
	for _, address := range []string{id, ep, "proj-89", "26df9a5b"} {
		n := sshhost.NewNode(answering{ports.RemoteResult{Stdout: wrong}}, d, time.Minute)
		_, err := n.Send(context.Background(), wire.SendQuery{Address: address, Text: "hi"})
		r, ok := domain.AsRefusal(err)
		require.True(t, ok, "%s: %v", address, err)
		assert.Equal(t, domain.ReasonOutcomeUnknown, r.Reason, address)
		assert.Equal(t, 12, wire.ExitCode(r.Reason), address)
		assert.Contains(t, r.Detail, "session "+other, address)
		assert.Contains(t, r.Detail, address, address)
		assert.Contains(t, r.Detail, "peerctl show --host box", address)

		_, err = n.Send(context.Background(), wire.SendQuery{Address: address, Text: "hi", DryRun: true})
		r, ok = domain.AsRefusal(err)
		require.True(t, ok, "%s: %v", address, err)
		assert.Equal(t, domain.ReasonHostUnreachable, r.Reason, "a dry run: %s", address)
	}
	// The same session, however the call named it, is its receipt.
	right := receipt(id, "proj-89", ep, 4652)
	for _, address := range []string{id, ep, "proj-89", "26df9a5b"} {
		sent, err := sshhost.NewNode(answering{ports.RemoteResult{Stdout: right}}, d, time.Minute).Send(context.Background(), wire.SendQuery{Address: address, Text: "hi"})
		require.NoError(t, err, address)
		assert.Equal(t, "ssh:v1:box:"+ep, sent.Receipt.Endpoint, address)
	}
}

// show --host refuses a far document for another session than the one
// named, naming both (host_unreachable: it sent nothing, and the answer is
// not one this build's peerctl gives); the session's own passes.
func TestNodeShowRefusesAnotherSessionsDocument(t *testing.T) {
	d, err := domain.ParseDest("box")
	require.NoError(t, err)
	const id, other = "26df9a5b-d23c-4223-a45d-b9ec61fda652", "a8f89b60-f614-4b1f-b979-950c805fd8b1"
	ep := "cc-peer:v1:4652:proj-89:/tmp/s.sock"
	doc := func(id, name, endpoint string, pid int) []byte {
		b, err := json.Marshal(wire.Show{Session: wire.Session{Harness: "claude-code", SessionID: id, PID: pid, Name: name, Endpoint: endpoint}})
		require.NoError(t, err)
		return b
	}
	wrong := doc(other, "proj-90", "cc-peer:v1:5031:proj-90:/tmp/t.sock", 5031)
	right := doc(id, "proj-89", ep, 4652)
	for _, address := range []string{id, ep, "proj-89", "26df9a5b"} {
		_, err := sshhost.NewNode(answering{ports.RemoteResult{Stdout: wrong}}, d, time.Minute).Show(context.Background(), address)
		r, ok := domain.AsRefusal(err)
		require.True(t, ok, "%s: %v", address, err)
		assert.Equal(t, domain.ReasonHostUnreachable, r.Reason, address)
		assert.Contains(t, r.Detail, "session "+other, address)
		assert.Contains(t, r.Detail, address, address)

		got, err := sshhost.NewNode(answering{ports.RemoteResult{Stdout: right}}, d, time.Minute).Show(context.Background(), address)
		require.NoError(t, err, address)
		assert.Equal(t, id, got.SessionID, address)
	}
	// show also finds a record by its pid or its file's name.
	for _, address := range []string{"5031", "5031.json"} {
		byPlace, err := json.Marshal(wire.Show{Session: wire.Session{Harness: "claude-code", SessionID: other, PID: 5031, Name: "proj-90", File: "5031.json"}})
		require.NoError(t, err)
		got, err := sshhost.NewNode(answering{ports.RemoteResult{Stdout: byPlace}}, d, time.Minute).Show(context.Background(), address)
		require.NoError(t, err, address)
		assert.Equal(t, other, got.SessionID, address)
		_, err = sshhost.NewNode(answering{ports.RemoteResult{Stdout: wrong}}, d, time.Minute).Show(context.Background(), "4652")
		assert.Error(t, err, "another pid")
	}
}
