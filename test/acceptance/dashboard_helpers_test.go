//go:build unix

package acceptance

// The dashboard (peerctl serve --http) in a real browser: Debian's
// chromium, headless, driven with chromedp.

import (
	"bufio"
	"context"
	"io"
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
