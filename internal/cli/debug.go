package cli

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"
)

// debugEnv holds --debug's value when the flag is not given.
const debugEnv = "PEERCTL_DEBUG"

// What --debug (or $PEERCTL_DEBUG) turns on: a comma-separated list.
const (
	// debugSend is the send trail: the resolved target, the courier's argv
	// and exit status, socket connects, confirmation reads (bare --debug).
	debugSend = "send"
	// debugFx is the dependency wiring, fx's own log.
	debugFx = "fx"
)

// debugOn is what --debug asked for.
type debugOn struct{ send, fx bool }

func (d debugOn) any() bool { return d.send || d.fx }

// parseDebug reads --debug's value, else $PEERCTL_DEBUG ("1" and "true"
// mean send): a list of send and fx. Anything else is a usage error.
func parseDebug(flag string, changed bool, getenv func(string) string) (debugOn, error) {
	v, from := flag, "--debug"
	if !changed {
		v, from = getenv(debugEnv), "$"+debugEnv
		if v == "1" || v == "true" {
			v = debugSend
		}
	}
	var d debugOn
	if v == "" || v == "0" || v == "false" {
		return d, nil
	}
	for _, w := range strings.Split(v, ",") {
		switch strings.TrimSpace(w) {
		case debugSend:
			d.send = true
		case debugFx:
			d.fx = true
		default:
			return debugOn{}, usageError{fmt.Errorf("%s %q: want %q (the send trail), %q (dependency wiring) or both, comma-separated", from, v, debugSend, debugFx)}
		}
	}
	return d, nil
}

// debugLogger writes the send trail to w: one line per step, with the time
// of day to the millisecond.
func debugLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) > 0 {
				return a
			}
			switch a.Key {
			case slog.TimeKey:
				return slog.String("time", a.Value.Time().Format(time.TimeOnly+".000"))
			case slog.LevelKey:
				return slog.Attr{}
			}
			return a
		}}))
}
