package cli

import (
	"fmt"

	"go.uber.org/fx"
	"go.uber.org/fx/fxevent"

	"github.com/peerctl/peerctl/adapters/courierexec"
	"github.com/peerctl/peerctl/adapters/fsregistry"
	"github.com/peerctl/peerctl/adapters/qwenregistry"
	"github.com/peerctl/peerctl/app"
)

// graph resolves the config dir (warnings to stderr) and builds the fx app,
// populating the given targets. Commands whose components have a lifecycle
// (watch) Start and Stop the app; the others only use what was populated.
func (c *cli) graph(opts options, populate ...any) (*fx.App, error) {
	dir, warnings, err := fsregistry.ConfigDir(c.configDir, c.getenv)
	if err != nil {
		return nil, err
	}
	for _, w := range warnings {
		if opts.quiet {
			break
		}
		fmt.Fprintf(c.stderr, "peerctl: warning: %s\n", w)
	}
	claude := opts.claude
	if claude == "" {
		claude = c.getenv(courierexec.ProgramEnv)
	}
	// A Qwen Code home that cannot be located is that harness's trouble
	// alone: reported unread, never the end of the command.
	qwenHome, qwenErr := qwenregistry.Home(c.qwenHome, c.getenv)
	cfg := app.Config{ConfigDir: dir, QwenHome: qwenHome, QwenHomeErr: qwenErr, Transport: opts.transport, Timeout: opts.timeout, Claude: claude, Qwen: opts.qwen, InboxWindow: opts.inboxWindow, From: opts.from}
	fxOpts := []fx.Option{fx.Supply(cfg), fx.Populate(populate...), fx.NopLogger}
	if c.debug.fx {
		fxOpts[2] = fx.WithLogger(func() fxevent.Logger { return &fxevent.ConsoleLogger{W: c.stderr} })
	}
	module := app.Module
	if opts.readOnly {
		module = app.ReadModule
	} else if c.debug.send {
		fxOpts = append(fxOpts, fx.Replace(debugLogger(c.stderr)))
	}
	fxApp := fx.New(append([]fx.Option{module}, fxOpts...)...)
	if err := fxApp.Err(); err != nil {
		return nil, fmt.Errorf("build peerctl: %w", unwrapFx(err))
	}
	return fxApp, nil
}
