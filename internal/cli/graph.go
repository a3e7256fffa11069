package cli

import (
	"context"
	"fmt"

	"go.uber.org/fx"
	"go.uber.org/fx/fxevent"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/wiring"
)

// graph builds the fx app from the harness flags and opts, populating the
// given targets, and prints the harnesses' warnings to stderr (unless
// opts.quiet). Commands whose components have a lifecycle (watch) Start
// and Stop the app; the others only use what was populated.
func (c *factory) graph(opts options, populate ...any) (*fx.App, error) {
	cfg := app.Config{Flags: c.flags.values(), Getenv: c.getenv, Transport: opts.transport, Timeout: opts.timeout,
		ReceiptWindow: opts.receiptWindow, From: opts.from, Only: opts.only, Sending: c.sending()}
	if opts.sending != nil {
		cfg.Sending = opts.sending
	}
	var hs app.Harnesses
	fxOpts := []fx.Option{fx.Supply(cfg), fx.Populate(append(populate, &hs)...), fx.NopLogger}
	if c.debug.fx {
		fxOpts[2] = fx.WithLogger(func() fxevent.Logger { return &fxevent.ConsoleLogger{W: c.io.errOut} })
	}
	module := wiring.Module
	if opts.readOnly {
		module = wiring.ReadModule
	} else if c.debug.send {
		fxOpts = append(fxOpts, fx.Replace(debugLogger(c.io.errOut)))
	}
	fxApp := fx.New(append([]fx.Option{module}, fxOpts...)...)
	if err := fxApp.Err(); err != nil {
		return nil, fmt.Errorf("build peerctl: %w", wiring.Cause(err))
	}
	for _, h := range hs {
		for _, w := range h.Warnings() {
			if !opts.quiet {
				fmt.Fprintf(c.io.errOut, "peerctl: warning: %s\n", w)
			}
		}
	}
	return fxApp, nil
}

// sending is who sends through this command's Service, for the trust
// policy: the command line, or c.entrance (mcp, relay) with this process,
// whose parents name the sending session, or a far side's peerctl (host)
// named by its address. (peerctl serve decides again with the sender an
// order carries: who.)
func (c *factory) sending() *app.Sending {
	switch c.entrance {
	case domain.EntranceUnknown:
		return &app.Sending{Entrance: domain.EntranceCLI}
	case domain.EntranceHost:
		return &app.Sending{Entrance: c.entrance, Where: c.callerDest}
	}
	return &app.Sending{Entrance: c.entrance, PID: c.pid}
}

// who is who sends through this command (app.Service.Who): what its
// orders to peerctl serve carry, for the service to decide the trust
// policy again.
func (c *factory) who(ctx context.Context) domain.Sender {
	svc, err := c.service(options{readOnly: true, quiet: true})
	if err != nil {
		return domain.NewSender(c.sending().Entrance, "")
	}
	return svc.Who(ctx)
}

// allowedTo is the trust policy's decision (app.Service.AllowedTo) for a
// send of this command to address on dest that leaves this process before
// its target is resolved here: to another machine, or to peerctl serve.
func (c *factory) allowedTo(ctx context.Context, address string, dest domain.Dest) error {
	svc, err := c.service(options{readOnly: true, quiet: true})
	if err != nil {
		return err
	}
	return svc.AllowedTo(ctx, address, dest)
}
