package cli

import (
	"fmt"

	"go.uber.org/fx"
	"go.uber.org/fx/fxevent"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/internal/wiring"
)

// graph builds the fx app from the harness flags and opts, populating the
// given targets, and prints the harnesses' warnings to stderr (unless
// opts.quiet). Commands whose components have a lifecycle (watch) Start
// and Stop the app; the others only use what was populated.
func (c *cli) graph(opts options, populate ...any) (*fx.App, error) {
	cfg := app.Config{Flags: c.flagValues(), Getenv: c.getenv, Transport: opts.transport, Timeout: opts.timeout,
		ReceiptWindow: opts.receiptWindow, From: opts.from, Only: opts.only}
	var hs app.Harnesses
	fxOpts := []fx.Option{fx.Supply(cfg), fx.Populate(append(populate, &hs)...), fx.NopLogger}
	if c.debug.fx {
		fxOpts[2] = fx.WithLogger(func() fxevent.Logger { return &fxevent.ConsoleLogger{W: c.stderr} })
	}
	module := wiring.Module
	if opts.readOnly {
		module = wiring.ReadModule
	} else if c.debug.send {
		fxOpts = append(fxOpts, fx.Replace(debugLogger(c.stderr)))
	}
	fxApp := fx.New(append([]fx.Option{module}, fxOpts...)...)
	if err := fxApp.Err(); err != nil {
		return nil, fmt.Errorf("build peerctl: %w", wiring.Cause(err))
	}
	for _, h := range hs {
		for _, w := range h.Warnings() {
			if !opts.quiet {
				fmt.Fprintf(c.stderr, "peerctl: warning: %s\n", w)
			}
		}
	}
	return fxApp, nil
}
