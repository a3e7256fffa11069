package cli

import (
	"io"
	"os"
	"testing"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/internal/wiring"
	"github.com/peerctl/peerctl/ports"
)

// BenchmarkGraph builds what one command needs, through the fx graph (as the
// CLI does: "fx" is wiring.Module, for send, show, doctor, watch, whoami;
// "fx-read" is wiring.ReadModule, for list, enrich and completion) and by
// calling the same constructors by hand: the difference is fx's cost per
// invocation.
func BenchmarkGraph(b *testing.B) {
	dir := b.TempDir()
	getenv := func(k string) string {
		if k == "CLAUDE_CONFIG_DIR" {
			return dir
		}
		return os.Getenv(k)
	}
	b.Run("fx", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c := newFactory(nil, io.Discard, io.Discard, getenv)
			if svc, err := c.service(options{}); err != nil || svc == nil {
				b.Fatalf("service: %v", err)
			}
		}
	})
	b.Run("fx-read", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c := newFactory(nil, io.Discard, io.Discard, getenv)
			if svc, err := c.service(options{readOnly: true}); err != nil || svc == nil {
				b.Fatalf("service: %v", err)
			}
		}
	})
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			cfg := app.Config{Getenv: getenv}
			var hs []ports.Harness
			for _, p := range wiring.Plugins() {
				h, err := p.New(app.NewHarnessSettings(cfg, nil))
				if err != nil {
					b.Fatal(err)
				}
				hs = append(hs, h)
			}
			set := app.NewHarnesses(hs)
			tr, err := app.NewTransport(cfg, wiring.Plugins(), set)
			if err != nil {
				b.Fatal(err)
			}
			if app.New(set.Registry(), set.Liveness(), tr, "", app.WithHarnesses(set)) == nil {
				b.Fatal("no service")
			}
		}
	})
}
