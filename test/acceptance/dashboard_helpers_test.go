//go:build unix

package acceptance

// The dashboard (peerctl serve --http) in a real browser: Debian's
// chromium, headless, driven with chromedp.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/internal/dashboard"
	"github.com/peerctl/peerctl/ports/wire"
	"github.com/peerctl/peerctl/test/livecc"
)

// chromium is the browser's program; the browser tests need it. Outside
// CI and PEERCTL_LIVE=1 a missing one skips them; there it fails them.
func chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if livecc.Enabled() || os.Getenv("CI") != "" {
		t.Fatal("the browser tests need chromium (apt-get install chromium; scripts/install-test-deps.sh installs it)")
	}
	t.Skip("browser test: chromium is not installed (apt-get install chromium)")
	return ""
}

// browser is one headless chromium for a test, with a fresh profile.
type browser struct {
	ctx context.Context
	// dialogs are the JavaScript dialogs (alert, confirm) a page opened.
	mu      sync.Mutex
	dialogs []string
}

// newBrowser starts chromium (ended at the test's end) with the flags a
// machine without a display, as root, offline, needs.
func newBrowser(t testing.TB) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium(t)), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-dev-shm-usage", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelA() })
	b := &browser{ctx: ctx}
	// The first Run starts the browser; its context must not end before.
	require.NoError(t, chromedp.Do(ctx), "start chromium")
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for d, err := range dialogs {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.dialogs = append(b.dialogs, d.Message)
			b.mu.Unlock()
			go func() {
				_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
			}()
		}
	}()
	return b
}

// do runs actions with a deadline of d.
func (b *browser) do(t testing.TB, d time.Duration, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, d)
	defer cancel()
	require.NoError(t, chromedp.Do(ctx, actions...))
}

// eval is what expr gives in the page.
func eval[T any](t testing.TB, b *browser, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	require.NoError(t, err, "evaluate %s", expr)
	return v
}

// until polls expr in the page until it is true or d passes (then the
// test fails), and returns how long it took.
func (b *browser) until(t testing.TB, d time.Duration, what, expr string) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		cancel()
		if err == nil && ok {
			return time.Since(start)
		}
		if time.Since(start) > d {
			body, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
			require.FailNowf(t, "timed out in the browser", "waiting for %s (%s); last error %v; the page says:\n%s", what, expr, err, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (b *browser) seenDialogs() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.dialogs...)
}

// dashURL matches the line serve --http prints.
var dashURL = regexp.MustCompile(`dashboard on (http://\S+/\?token=[0-9a-f]+)`)

// startDashboard runs `peerctl [pre...] serve --http` with env in a
// process group of its own (killed at the test's end) and returns the URL
// it printed; its stderr is logged when the test fails.
func startDashboard(t testing.TB, env []string, pre ...string) string {
	t.Helper()
	cmd := exec.Command(peerctlBin(t), append(pre, "serve", "--http")...)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	errPipe, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
	urls := make(chan string, 1)
	var logMu sync.Mutex
	var log strings.Builder
	go func() {
		sc := bufio.NewScanner(errPipe)
		for sc.Scan() {
			logMu.Lock()
			log.WriteString(sc.Text() + "\n")
			logMu.Unlock()
			if m := dashURL.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case urls <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, errPipe)
	}()
	t.Cleanup(func() {
		if t.Failed() {
			logMu.Lock()
			t.Logf("peerctl serve --http said:\n%s", log.String())
			logMu.Unlock()
		}
	})
	select {
	case u := <-urls:
		return u
	case <-time.After(60 * time.Second):
		require.FailNow(t, "peerctl serve --http printed no URL in 60s")
		return ""
	}
}

// pageBackend is a dashboard.Backend over data a test sets: the page in
// the browser without a service, sessions or hosts behind it. A host in
// block does not answer until its channel is closed.
type pageBackend struct {
	mu    sync.Mutex
	hosts []dashboard.HostListing
	msgs  []dashboard.Message
	block map[string]chan struct{}
	reads map[string]int
	send  func(address, text string, await time.Duration) dashboard.Result
	// retried are the ids Retry was asked for, with the confirmation.
	retried []string
	// fleet is the fleet's listing (nil: no bus).
	fleet *wire.Listing
}

var _ dashboard.Backend = (*pageBackend)(nil)

func (p *pageBackend) Hosts(context.Context) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, len(p.hosts))
	for i, h := range p.hosts {
		out[i] = h.Host
	}
	return out
}

func (p *pageBackend) Sessions(ctx context.Context, host string) dashboard.HostListing {
	p.mu.Lock()
	if p.reads == nil {
		p.reads = map[string]int{}
	}
	p.reads[host]++
	wait := p.block[host]
	p.mu.Unlock()
	if wait != nil {
		select {
		case <-wait:
		case <-ctx.Done():
			return dashboard.HostListing{Host: host, Err: "host_unreachable: " + ctx.Err().Error()}
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, h := range p.hosts {
		if h.Host == host {
			return h
		}
	}
	return dashboard.HostListing{Host: host, Err: "no such host"}
}

// Messages is msgs as the outbox lists them (in the order msgs has
// them).
func (p *pageBackend) Messages(_ context.Context, q dashboard.MessageQuery) ([]dashboard.Message, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return q.Select(p.msgs), nil
}

// Count is how many of msgs are in q's state.
func (p *pageBackend) Count(_ context.Context, q dashboard.MessageQuery) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return q.Total(p.msgs), nil
}

func (p *pageBackend) Cancel(context.Context, int64) dashboard.Result {
	return dashboard.Result{Code: 2}
}

// Retry records id, and whether the user confirmed it; it changes nothing.
func (p *pageBackend) Retry(_ context.Context, id int64, confirmed bool) dashboard.Result {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.retried = append(p.retried, fmt.Sprintf("%d confirmed=%t", id, confirmed))
	return dashboard.Result{JSON: []byte(fmt.Sprintf(`{"id":%d,"state":"stored"}`, id))}
}

// Approve and Deny record the message ("approve ID", "deny ID") among
// the retries; they change nothing.
func (p *pageBackend) Approve(_ context.Context, id int64) dashboard.Result {
	return p.decide("approve", id)
}

func (p *pageBackend) Deny(_ context.Context, id int64) dashboard.Result { return p.decide("deny", id) }

func (p *pageBackend) decide(op string, id int64) dashboard.Result {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.retried = append(p.retried, fmt.Sprintf("%s %d", op, id))
	return dashboard.Result{JSON: []byte(fmt.Sprintf(`{"id":%d,"state":"stored"}`, id))}
}

// retriedIDs are the messages Retry was asked for, in order ("ID
// confirmed=BOOL").
func (p *pageBackend) retriedIDs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.retried...)
}

func (p *pageBackend) Send(_ context.Context, address, text string, await time.Duration) dashboard.Result {
	p.mu.Lock()
	send := p.send
	p.mu.Unlock()
	if send == nil {
		return dashboard.Result{Code: 1, Stderr: "no send here"}
	}
	return send(address, text, await)
}

func (p *pageBackend) Fleet() (wire.Listing, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fleet == nil {
		return wire.Listing{}, false
	}
	return *p.fleet, true
}

// set changes the data under the lock.
func (p *pageBackend) set(change func(p *pageBackend)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	change(p)
}

// servePage serves the dashboard over b on a free loopback port for the
// test's life and returns the URL to open (with the token).
func servePage(t testing.TB, b dashboard.Backend, opt dashboard.Options) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	opt.Addr = ln.Addr().String()
	d, err := dashboard.New(b, opt)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	srv := &http.Server{Handler: d, ReadHeaderTimeout: 10 * time.Second}
	var wg sync.WaitGroup
	wg.Go(func() { d.Run(ctx) })
	wg.Go(func() { _ = srv.Serve(ln) })
	t.Cleanup(func() { cancel(); _ = srv.Close(); wg.Wait() })
	return d.URL()
}

// pageHost is a machine's listing of live, addressable sessions named
// names (each its id too, "<name>-id").
func pageHost(host string, names ...string) dashboard.HostListing {
	h := dashboard.HostListing{Host: host}
	for i, n := range names {
		h.Sessions = append(h.Sessions, wire.Session{Host: host, Harness: "claude-code", SessionID: n + "-id", PID: 100 + i, Name: n,
			Cwd: "/src/" + n, Status: "idle", Verdict: "live", Addressable: true, Endpoint: "cc-peer:v1:" + fmt.Sprint(100+i) + ":" + n + ":/tmp/" + n + ".sock"})
	}
	return h
}
