package app_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/portsmock"
)

const (
	idA = "26df9a5b-d23c-4223-a45d-b9ec61fda652"
	idB = "a8f89b60-f614-4b1f-b979-950c805fd8b1"
	idC = "c0ffee00-0000-4000-8000-000000000003"
)

func record(pid int, id, name string) domain.Record {
	return domain.Record{File: strconv.Itoa(pid) + ".json", PID: pid, SessionID: id, Name: name,
		Kind: domain.KindInteractive, ProcStart: "100", SocketPath: "/tmp/cc-socks/" + strconv.Itoa(pid) + ".sock",
		Cwd: "/home/dev/src/shop", Version: "2.1.328"}
}

// world is a Service over gomock doubles of the three ports.
type world struct {
	reg   *portsmock.MockRegistry
	live  *portsmock.MockLiveness
	trans *portsmock.MockTransport
	svc   *app.Service
}

func newWorld(t *testing.T, configDir string) world {
	ctrl := gomock.NewController(t)
	w := world{reg: portsmock.NewMockRegistry(ctrl), live: portsmock.NewMockLiveness(ctrl), trans: portsmock.NewMockTransport(ctrl)}
	w.svc = app.New(w.reg, w.live, w.trans, configDir)
	return w
}

// registry makes the fake registry return recs on every read, and the fake
// liveness call every pid in dead dead and the rest alive.
func (w world) registry(recs []domain.Record, dead ...int) {
	w.reg.EXPECT().Read(gomock.Any()).Return(ports.Snapshot{Dir: "/cfg/sessions", Records: recs}, nil).AnyTimes()
	w.live.EXPECT().Check(gomock.Any()).DoAndReturn(func(r domain.Record) domain.Liveness {
		for _, d := range dead {
			if r.PID == d {
				return domain.Liveness{Alive: domain.No}
			}
		}
		return domain.Liveness{Alive: domain.Yes, StartMatches: domain.Yes}
	}).AnyTimes()
}

func TestSendRefusesBeforeAnyTransport(t *testing.T) {
	noSocket := record(7000, idC, "old-cc")
	noSocket.SocketPath, noSocket.Version = "", "2.1.224"
	tests := []struct {
		name    string
		recs    []domain.Record
		dead    []int
		address string
		reason  domain.Reason
		detail  string
	}{
		{"nothing live matches", []domain.Record{record(4652, idA, "proj-89")}, nil, "nobody", domain.ReasonNotLive, "no live session matches"},
		{"target is stale", []domain.Record{record(4652, idA, "proj-89")}, []int{4652}, "proj-89", domain.ReasonNotLive, "4652.json is stale"},
		{"name shared by two live sessions", []domain.Record{record(4652, idA, "proj-89"), record(5031, idB, "proj-89")}, nil, "proj-89", domain.ReasonIdentityMismatch, "matches 2 live sessions"},
		{"name shared", []domain.Record{record(4652, idA, "proj-89"), record(5031, idB, "proj-89")}, nil, "proj-89", domain.ReasonIdentityMismatch, "matches 2 live sessions"},
		{"endpoint whose name moved", []domain.Record{record(4652, idA, "proj-89")}, nil, "cc-peer:v1:4652:renamed:/tmp/cc-socks/4652.sock", domain.ReasonIdentityMismatch, "is now named"},
		{"live but no socket", []domain.Record{noSocket}, nil, "old-cc", domain.ReasonNotAddressable, "no messagingSocketPath (Claude Code 2.1.224"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, "/cfg")
			w.registry(tt.recs, tt.dead...)
			// w.trans has no expectations: any Deliver or Plan call fails the test.
			for _, dry := range []bool{false, true} {
				_, err := w.svc.Send(context.Background(), app.SendRequest{Address: tt.address, Text: "hello", DryRun: dry})
				r, ok := domain.AsRefusal(err)
				require.True(t, ok, "want a refusal, got %v", err)
				assert.Equal(t, tt.reason, r.Reason)
				assert.Contains(t, r.Detail, tt.detail)
			}
		})
	}
}

func TestSendInvalidMessageRefusedBeforeReading(t *testing.T) {
	for _, text := range []string{"", "  \n", "a\x00b", "\xff"} {
		t.Run(strconv.Quote(text), func(t *testing.T) {
			w := newWorld(t, "/cfg") // no expectations at all: reading the registry fails the test
			_, err := w.svc.Send(context.Background(), app.SendRequest{Address: idA, Text: text})
			r, ok := domain.AsRefusal(err)
			require.True(t, ok, "want a refusal, got %v", err)
			assert.Equal(t, domain.ReasonInvalidMessage, r.Reason)
		})
	}
}

func TestSendDelivers(t *testing.T) {
	w := newWorld(t, "/cfg")
	w.registry([]domain.Record{record(4652, idA, "proj-89"), record(5031, idB, "build:main 50% ünï")})
	w.trans.EXPECT().Deliver(gomock.Any(), gomock.Any(), gomock.Any()).DoAndReturn(
		func(_ context.Context, s domain.Session, m domain.Message) (domain.Receipt, error) {
			assert.Equal(t, 5031, s.PID())
			assert.Equal(t, idB, s.ID())
			assert.Equal(t, "the API changed, rebase", m.Text())
			return domain.Receipt{Transport: "fake", Outcome: "posted"}, nil
		}).Times(1)
	res, err := w.svc.Send(context.Background(), app.SendRequest{Address: "build:main 50% ünï", Text: "the API changed, rebase"})
	require.NoError(t, err)
	assert.Equal(t, "posted", res.Receipt.Outcome)
	assert.Equal(t, 5031, res.Target.PID())
	assert.Nil(t, res.Plan)
}

// A registry that cannot be read any more ends a wait as "failed", saying
// why, not as a timeout (the deadline was an hour away).
func TestSendWaitFailsWhenTheRegistryCannotBeRead(t *testing.T) {
	w := newWorld(t, "/cfg")
	recs := []domain.Record{record(4652, idA, "proj-89")}
	first := w.reg.EXPECT().Read(gomock.Any()).Return(ports.Snapshot{Dir: "/cfg/sessions", Records: recs}, nil).Times(1)
	w.reg.EXPECT().Read(gomock.Any()).Return(ports.Snapshot{}, errors.New("open /cfg/sessions: permission denied")).After(first).AnyTimes()
	w.live.EXPECT().Check(gomock.Any()).Return(domain.Liveness{Alive: domain.Yes, StartMatches: domain.Yes}).AnyTimes()
	w.trans.EXPECT().Deliver(gomock.Any(), gomock.Any(), gomock.Any()).Return(domain.Receipt{Transport: "fake", Outcome: "posted"}, nil).Times(1)
	res, err := w.svc.Send(context.Background(), app.SendRequest{Address: "proj-89", Text: "go",
		ConfirmOptions: app.ConfirmOptions{NoConfirm: true, Wait: time.Hour}})
	require.NoError(t, err, "the message was delivered; only the wait failed")
	assert.Equal(t, domain.WaitFailed, res.WaitEnd)
	assert.Contains(t, res.WaitNote, "stopped waiting: open /cfg/sessions: permission denied")
	assert.Less(t, res.WaitElapsed, time.Minute)
}

func TestSendDryRunPlansAndNeverDelivers(t *testing.T) {
	w := newWorld(t, "/cfg")
	w.registry([]domain.Record{record(4652, idA, "proj-89")})
	w.trans.EXPECT().Plan(gomock.Any(), gomock.Any()).DoAndReturn(func(s domain.Session, m domain.Message) (domain.Plan, error) {
		return domain.Plan{Transport: "fake", Socket: s.SocketPath(), Frame: m.Text()}, nil
	}).Times(1)
	res, err := w.svc.Send(context.Background(), app.SendRequest{Address: idA[:8], Text: "hi", DryRun: true})
	require.NoError(t, err)
	require.NotNil(t, res.Plan)
	assert.Equal(t, domain.Plan{Transport: "fake", Socket: "/tmp/cc-socks/4652.sock", Frame: "hi"}, *res.Plan)
	assert.Zero(t, res.Receipt)
}

func TestSendTransportErrors(t *testing.T) {
	osErr := errors.New("connect: connection refused")
	tests := []struct {
		name   string
		err    error
		reason domain.Reason
		cause  error
	}{
		{"plain error becomes delivery_failed", osErr, domain.ReasonDeliveryFailed, osErr},
		{"wrapped plain error keeps its cause", errors.Join(errors.New("post"), osErr), domain.ReasonDeliveryFailed, osErr},
		{"a refusal passes through", domain.Refuse(domain.ReasonHarnessUnsupported, "claude not found"), domain.ReasonHarnessUnsupported, nil},
		{"a delivery_failed refusal passes through", domain.Refuse(domain.ReasonDeliveryFailed, "NOT SENT"), domain.ReasonDeliveryFailed, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, "/cfg")
			w.registry([]domain.Record{record(4652, idA, "proj-89")})
			w.trans.EXPECT().Deliver(gomock.Any(), gomock.Any(), gomock.Any()).Return(domain.Receipt{}, tt.err).Times(1)
			_, err := w.svc.Send(context.Background(), app.SendRequest{Address: idA, Text: "hi"})
			r, ok := domain.AsRefusal(err)
			require.True(t, ok, "want a refusal, got %v", err)
			assert.Equal(t, tt.reason, r.Reason)
			if tt.cause != nil {
				assert.ErrorIs(t, err, tt.cause)
				assert.Contains(t, r.Detail, "connection refused")
			}
		})
	}
}

func TestSendRegistryErrorStopsEverything(t *testing.T) {
	w := newWorld(t, "/cfg")
	boom := errors.New("read registry /cfg/sessions: permission denied")
	w.reg.EXPECT().Read(gomock.Any()).Return(ports.Snapshot{}, boom).Times(1)
	_, err := w.svc.Send(context.Background(), app.SendRequest{Address: idA, Text: "hi"})
	assert.ErrorIs(t, err, boom)
	_, isRefusal := domain.AsRefusal(err)
	assert.False(t, isRefusal, "an unreadable registry is an error (exit 1), not a refusal")
}

func TestListClassifiesAndOrders(t *testing.T) {
	w := newWorld(t, "/cfg")
	malformed := domain.Record{File: "9.json", Problem: "not a JSON record", ProblemVerdict: domain.VerdictMalformed}
	misnamed := record(5031, idB, "m")
	misnamed.File, misnamed.Problem, misnamed.ProblemVerdict = "5031b.json", "file name 5031b.json is not 5031.json", domain.VerdictMisnamed
	t0 := time.Date(2026, 12, 7, 4, 0, 0, 0, time.UTC)
	gone, proj, wrapped := record(8000, idC, "gone"), record(4652, idA, "proj-89"), record(120, "d0d0d0d0-0000-4000-8000-000000000004", "after-the-wrap")
	proj.StartedAt, misnamed.StartedAt, gone.StartedAt, wrapped.StartedAt = t0, t0.Add(time.Minute), t0.Add(2*time.Minute), t0.Add(3*time.Minute)
	recs := []domain.Record{gone, malformed, wrapped, proj, misnamed}
	w.reg.EXPECT().Read(gomock.Any()).Return(ports.Snapshot{Dir: "/cfg/sessions", Records: recs}, nil).Times(2)
	// Liveness is asked about parsed records only (misnamed ones included),
	// never about a file that could not be parsed.
	w.live.EXPECT().Check(gomock.Any()).DoAndReturn(func(r domain.Record) domain.Liveness {
		require.NotEqual(t, "9.json", r.File)
		if r.PID == 8000 {
			return domain.Liveness{Alive: domain.No}
		}
		return domain.Liveness{Alive: domain.Yes, StartMatches: domain.Yes}
	}).Times(8)

	all, err := w.svc.List(context.Background(), true)
	require.NoError(t, err)
	var got []string
	for _, e := range all.Entries {
		got = append(got, e.Record.File+"="+e.Verdict.String())
	}
	assert.Equal(t, []string{"4652.json=live", "5031b.json=misnamed", "8000.json=stale", "120.json=live", "9.json=malformed"}, got,
		"ordered by start time, oldest first (a pid that wrapped is still the newest), no start time last")
	assert.Equal(t, "/cfg/sessions", all.Dir)

	live, err := w.svc.List(context.Background(), false)
	require.NoError(t, err)
	require.Len(t, live.Entries, 2)
	assert.Equal(t, 4652, live.Entries[0].Record.PID)
	assert.Equal(t, 120, live.Entries[1].Record.PID)
}

// Records started at the same time (or with none known) are ordered by
// name, then pid, then file name.
func TestListOrderTies(t *testing.T) {
	w := newWorld(t, "/cfg")
	b, a, a2 := record(30, idA, "b"), record(40, idB, "a"), record(20, idC, "a")
	w.registry([]domain.Record{b, a, a2})
	l, err := w.svc.List(context.Background(), true)
	require.NoError(t, err)
	var got []int
	for _, e := range l.Entries {
		got = append(got, e.Record.PID)
	}
	assert.Equal(t, []int{20, 40, 30}, got)
}

func TestListMissingFolder(t *testing.T) {
	w := newWorld(t, "/cfg")
	w.reg.EXPECT().Read(gomock.Any()).Return(ports.Snapshot{Dir: "/cfg/sessions", Missing: true}, nil)
	l, err := w.svc.List(context.Background(), true)
	require.NoError(t, err)
	assert.True(t, l.Missing)
	assert.Empty(t, l.Entries)
}

func TestShow(t *testing.T) {
	cfg := t.TempDir()
	sockDir, err := os.MkdirTemp("", "sock") // short: a Unix socket path has a ~108-byte limit
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	ln, err := net.Listen("unix", filepath.Join(sockDir, "4652.sock"))
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })

	withSocket := record(4652, idA, "proj-89")
	withSocket.SocketPath = filepath.Join(sockDir, "4652.sock")
	transcript := domain.TranscriptPath(cfg, withSocket.Cwd, idA)
	require.NoError(t, os.MkdirAll(filepath.Dir(transcript), 0o700))
	require.NoError(t, os.WriteFile(transcript, []byte("{}\n"), 0o600))
	regularFile := record(5031, idB, "build")
	regularFile.SocketPath = transcript // exists, but is not a socket
	missing := record(6000, idC, "nosock")
	missing.SocketPath = filepath.Join(sockDir, "absent.sock")
	stale := record(8000, "dead0000-0000-4000-8000-000000000008", "gone")
	noPath := record(9000, "f0000000-0000-4000-8000-000000000009", "old")
	noPath.SocketPath = ""

	tests := []struct {
		address    string
		pid        int
		verdict    domain.Verdict
		socket     domain.Tri
		note       string
		transcript bool
	}{
		{"proj-89", 4652, domain.VerdictLive, domain.Yes, "present", true},
		{idB, 5031, domain.VerdictLive, domain.No, "not a socket", false},
		{"nosock", 6000, domain.VerdictLive, domain.No, "no such file", false},
		{"gone", 8000, domain.VerdictStale, domain.No, "absent", false},
		{"8000", 8000, domain.VerdictStale, domain.No, "absent", false},
		{"8000.json", 8000, domain.VerdictStale, domain.No, "absent", false},
		{"old", 9000, domain.VerdictLive, domain.Unknown, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.address, func(t *testing.T) {
			w := newWorld(t, cfg)
			w.registry([]domain.Record{withSocket, regularFile, missing, stale, noPath}, 8000)
			d, err := w.svc.Show(context.Background(), tt.address)
			require.NoError(t, err)
			assert.Equal(t, tt.pid, d.Entry.Record.PID)
			assert.Equal(t, tt.verdict, d.Entry.Verdict)
			assert.Equal(t, tt.socket, d.SocketOnDisk)
			assert.Contains(t, d.SocketNote, tt.note)
			assert.Equal(t, domain.TranscriptPath(cfg, "/home/dev/src/shop", d.Entry.Record.SessionID), d.Transcript)
			assert.Equal(t, tt.transcript, d.TranscriptExists)
		})
	}
	t.Run("a pid shared by a live record and a misnamed copy shows the live one", func(t *testing.T) {
		w := newWorld(t, cfg)
		copyOf := record(4652, idB, "proj-89-old")
		copyOf.File, copyOf.Problem, copyOf.ProblemVerdict = "4652b.json", "file name is not <pid>.json", domain.VerdictMisnamed
		w.registry([]domain.Record{withSocket, copyOf})
		d, err := w.svc.Show(context.Background(), "4652")
		require.NoError(t, err)
		assert.Equal(t, "4652.json", d.Entry.Record.File)
		assert.Equal(t, domain.VerdictLive, d.Entry.Verdict)
	})
	t.Run("several records that are not live: refused, saying so", func(t *testing.T) {
		w := newWorld(t, cfg)
		copyOf := record(8000, idB, "gone-too")
		copyOf.File, copyOf.Problem, copyOf.ProblemVerdict = "8000b.json", "file name is not <pid>.json", domain.VerdictMisnamed
		w.registry([]domain.Record{stale, copyOf}, 8000)
		_, err := w.svc.Show(context.Background(), "8000")
		r, ok := domain.AsRefusal(err)
		require.True(t, ok)
		assert.Equal(t, domain.ReasonNotLive, r.Reason)
		assert.Contains(t, r.Detail, `2 records match "8000": name one by its file`)
	})
	t.Run("a pid that is also another record's name is refused, not guessed", func(t *testing.T) {
		w := newWorld(t, cfg)
		namedLikeThePid := record(8000, idB, "4652")
		w.registry([]domain.Record{withSocket, namedLikeThePid}, 8000)
		_, err := w.svc.Show(context.Background(), "4652")
		r, ok := domain.AsRefusal(err)
		require.True(t, ok, "got %v", err)
		assert.Contains(t, r.Detail, `2 records match "4652"`)
	})
	t.Run("a live session found by pid or file keeps its shared-name warning", func(t *testing.T) {
		w := newWorld(t, cfg)
		copyOf := record(1, idA, "twin")
		copyOf.File, copyOf.Problem, copyOf.ProblemVerdict = "1b.json", "file name is not <pid>.json", domain.VerdictMisnamed
		w.registry([]domain.Record{record(1, idA, "twin"), record(2, idB, "twin"), copyOf})
		for _, addr := range []string{"1", "1.json"} {
			d, err := w.svc.Show(context.Background(), addr)
			require.NoError(t, err, addr)
			assert.Equal(t, "1.json", d.Entry.Record.File)
			require.Len(t, d.Warnings, 1, addr)
			assert.Contains(t, d.Warnings[0], `name "twin" is carried by 2 live sessions`)
		}
	})
	t.Run("ambiguous refuses", func(t *testing.T) {
		w := newWorld(t, cfg)
		w.registry([]domain.Record{record(1, idA, "twin"), record(2, idB, "twin")})
		_, err := w.svc.Show(context.Background(), "twin")
		r, ok := domain.AsRefusal(err)
		require.True(t, ok)
		assert.Equal(t, domain.ReasonIdentityMismatch, r.Reason)
		assert.Len(t, r.Candidates, 2)
	})
	t.Run("a shared name: full id and endpoint show it with a warning", func(t *testing.T) {
		w := newWorld(t, cfg)
		w.registry([]domain.Record{record(1, idA, "twin"), record(2, idB, "twin")})
		for _, addr := range []string{idB, "cc-peer:v1:2:twin:/tmp/cc-socks/2.sock"} {
			d, err := w.svc.Show(context.Background(), addr)
			require.NoError(t, err, addr)
			assert.Equal(t, 2, d.Entry.Record.PID)
			require.Len(t, d.Warnings, 1)
			assert.Contains(t, d.Warnings[0], `name "twin" is carried by 2 live sessions`)
		}
		d, err := w.svc.Show(context.Background(), "proj-89x")
		assert.Error(t, err)
		assert.Empty(t, d.Warnings)
	})
	t.Run("nothing matches", func(t *testing.T) {
		w := newWorld(t, cfg)
		w.registry([]domain.Record{record(1, idA, "a")})
		_, err := w.svc.Show(context.Background(), "zzz")
		r, ok := domain.AsRefusal(err)
		require.True(t, ok)
		assert.Equal(t, domain.ReasonNotLive, r.Reason)
	})
}

// TestMissingFolderIsNamedInRefusals: with no registry folder at all,
// not_live says so, instead of only "no live session matches".
func TestMissingFolderIsNamedInRefusals(t *testing.T) {
	w := newWorld(t, "/cfg")
	w.reg.EXPECT().Read(gomock.Any()).Return(ports.Snapshot{Dir: "/cfg/sessions", Missing: true}, nil).AnyTimes()
	_, err := w.svc.Send(context.Background(), app.SendRequest{Address: "proj-89", Text: "hi"})
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "want a refusal, got %v", err)
	assert.Equal(t, domain.ReasonNotLive, r.Reason)
	assert.Contains(t, r.Detail, "the registry folder /cfg/sessions does not exist")

	_, err = w.svc.Show(context.Background(), "proj-89")
	r, ok = domain.AsRefusal(err)
	require.True(t, ok, "want a refusal, got %v", err)
	assert.Equal(t, domain.ReasonNotLive, r.Reason)
	assert.Contains(t, r.Detail, "the registry folder /cfg/sessions does not exist")
}
