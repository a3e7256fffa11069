package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"go.uber.org/fx"

	"github.com/peerctl/peerctl/adapters/procliveness"
	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/wiring"
	"github.com/peerctl/peerctl/ports"
)

// inboxTransport stands in for a real transport in the example: it
// "delivers" the way a Claude Code session records an arrival, by
// appending the queue line to the target's transcript.
type inboxTransport struct{ configDir string }

func (t inboxTransport) Name() string { return "inbox" }

func (t inboxTransport) Deliver(_ context.Context, s domain.Session, m domain.Message) (domain.Receipt, error) {
	path := domain.TranscriptPath(t.configDir, s.Cwd(), s.ID())
	line, _ := json.Marshal(map[string]string{"type": "queue-operation", "operation": "enqueue",
		"timestamp": time.Now().UTC().Format(time.RFC3339Nano), "sessionId": s.ID(), "content": m.Text()})
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return domain.Receipt{}, err
	}
	if err := os.WriteFile(path, append(line, '\n'), 0o600); err != nil {
		return domain.Receipt{}, err
	}
	return domain.Receipt{Transport: "inbox", Outcome: "posted"}, nil
}

func (t inboxTransport) Plan(domain.Session, domain.Message) (domain.Plan, error) {
	return domain.Plan{Transport: "inbox"}, nil
}

// Example embeds peerctl in a host program: build the module with fx,
// swap the transport with fx.Replace, list the live sessions and send one
// a message, confirmed from the target's transcript.
func Example() {
	// A registry with one live session: this very process, so the
	// example runs anywhere. A host passes Claude Code's real config dir.
	configDir, _ := os.MkdirTemp("", "peerctl-example-")
	defer os.RemoveAll(configDir)
	writeExampleRecord(configDir)

	var svc *app.Service
	fxApp := fx.New(
		wiring.Module,
		fx.Supply(testConfig(configDir, "")),
		fx.Replace(fx.Annotate(inboxTransport{configDir}, fx.As(new(ports.Transport)))),
		fx.Populate(&svc),
		fx.NopLogger,
	)
	if err := fxApp.Err(); err != nil {
		fmt.Println("build:", err)
		return
	}
	ctx := context.Background()

	listing, err := svc.List(ctx, false)
	if err != nil {
		fmt.Println("list:", err)
		return
	}
	for _, e := range listing.Entries {
		fmt.Printf("live: %s (%s)\n", e.Record.Name, e.Record.Status)
	}

	res, err := svc.Send(ctx, app.SendRequest{Address: "example-peer", Text: "tests are green"})
	if err != nil {
		fmt.Println("send:", err)
		return
	}
	fmt.Printf("%s to %s by %s, confirmed: %t\n", res.Outcome, res.Target.Name(), res.Receipt.Transport, res.Confirmed)

	live, _ := svc.Enrich(ctx, []string{res.Target.ID(), "0badc0de-0000-4000-8000-000000000000"})
	fmt.Printf("enriched: %d of 2, status %s\n", len(live), live[res.Target.ID()].Status)
	// Output:
	// live: example-peer (idle)
	// delivered to example-peer by inbox, confirmed: true
	// enriched: 1 of 2, status idle
}

func writeExampleRecord(configDir string) {
	pid := os.Getpid()
	start, _ := procliveness.StartTime("/proc", pid)
	rec, _ := json.Marshal(map[string]any{"pid": pid, "sessionId": "4c8e1a2b-0f3d-4e5a-9b6c-7d8e9f0a1b2c",
		"cwd": filepath.Join(configDir, "work"), "procStart": start, "kind": "interactive", "name": "example-peer",
		"messagingSocketPath": filepath.Join(configDir, "example.sock"), "status": "idle", "version": "2.1.328"})
	dir := filepath.Join(configDir, "sessions")
	_ = os.MkdirAll(dir, 0o700)
	_ = os.WriteFile(filepath.Join(dir, strconv.Itoa(pid)+".json"), rec, 0o600)
}
