package cli

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/jsonexact"
	"github.com/peerctl/peerctl/internal/wire"
	"github.com/peerctl/peerctl/ports"
)

// eventLost is the event of a host whose watch ended: its connection was
// lost, or its peerctl stopped or printed what this build does not read.
const eventLost = "lost"

// hostEvent is one event of a watch over several hosts, or its end.
type hostEvent struct {
	ev  eventJSON
	end error // set on a host's last item: why its watch ended
}

// watchHosts watches every host of dests at once (the far sides' `peerctl
// watch --json`, read line by line with exact keys; this machine's
// watcher for "."), printing their events as they come, each with its
// host. A host whose watch ends is a "lost" event, then the whole watch
// ends: exit 10 (host_unreachable), never silence.
func (c *cli) watchHosts(ctx context.Context, dests []domain.Dest, asJSON bool) error {
	if err := c.checkHosts(dests); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	items := make(chan hostEvent)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	send := func(h hostEvent) bool {
		select {
		case items <- h:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for _, d := range dests {
		if d.IsLocal() {
			var w *app.Watcher
			fxApp, err := c.graph(options{}, &w)
			if err != nil {
				return err
			}
			wg.Go(func() { c.watchLocal(ctx, fxApp, w, send) })
			continue
		}
		wg.Go(func() { c.watchHost(ctx, d, send) })
	}
	gone, stopOut := c.streamOut()
	defer stopOut()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-gone:
			return nil
		case h := <-items:
			if err := c.printHostEvent(h.ev, asJSON); err != nil {
				return writeErr(err)
			}
			if h.end != nil {
				return h.end
			}
		}
	}
}

// watchLocal runs this machine's watcher until ctx ends, handing its
// events over.
func (c *cli) watchLocal(ctx context.Context, fxApp lifecycle, w *app.Watcher, send func(hostEvent) bool) {
	startCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := fxApp.Start(startCtx); err != nil {
		send(lostEvent(domain.Dest{}, fmt.Errorf("start watch: %w", unwrapFx(err))))
		return
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = fxApp.Stop(stopCtx)
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case n, ok := <-w.Notes():
			if ok {
				fmt.Fprintf(c.stderr, "peerctl: note: %s\n", n)
			}
		case ev, ok := <-w.Events():
			if !ok {
				err := w.Err()
				if err == nil {
					err = fmt.Errorf("this machine's watch ended")
				}
				send(lostEvent(domain.Dest{}, err))
				return
			}
			if !send(hostEvent{ev: toEventJSON(ev, time.Now())}) {
				return
			}
		}
	}
}

// watchHost streams dest's `peerctl watch --json` until it or ctx ends.
func (c *cli) watchHost(ctx context.Context, dest domain.Dest, send func(hostEvent) bool) {
	r, err := c.remote()
	if err != nil {
		send(lostEvent(dest, err))
		return
	}
	limit, err := c.hostTimeout()
	if err != nil {
		send(lostEvent(dest, err))
		return
	}
	s, err := r.Stream(ctx, ports.RemoteCall{Dest: dest, Args: []string{"watch", "--json"}, StartTimeout: limit})
	if err != nil {
		send(lostEvent(dest, err))
		return
	}
	defer s.Close()
	for line := range s.Lines() {
		var ev eventJSON
		if err := jsonexact.Exact(line, &ev); err != nil {
			s.Close()
			send(lostEvent(dest, wire.Broken(dest, err)))
			return
		}
		ep, err := wire.HostEndpoint(dest, ev.Endpoint)
		if err != nil {
			c.passStderr(dest, []byte(wire.SkipNote("event of session", ev.SessionID, err)))
			continue
		}
		ev.Host, ev.Endpoint = dest.String(), ep
		if !send(hostEvent{ev: ev}) {
			return
		}
	}
	res, err := s.Wait()
	if ctx.Err() != nil {
		return
	}
	if err == nil {
		err = domain.Refuse(domain.ReasonHostUnreachable, "the watch on %s ended (exit %d: %s)", dest, res.Code, wire.Message(res.Stderr))
	}
	send(lostEvent(dest, err))
}

// lostEvent is the "lost" event of dest's watch, ending with err (a
// host_unreachable refusal, exit 10, when it is none already).
func lostEvent(dest domain.Dest, err error) hostEvent {
	if _, ok := domain.AsRefusal(err); !ok && !dest.IsLocal() {
		err = &domain.Refusal{Reason: domain.ReasonHostUnreachable, Detail: err.Error(), Err: err}
	}
	return hostEvent{ev: eventJSON{Event: eventLost, At: wire.RFC3339(time.Now()), Host: dest.String(), Reason: err.Error()}, end: err}
}

// printHostEvent prints one event of a watch over hosts: JSON as watch
// --json prints it (with host), or a line for people led by the host.
func (c *cli) printHostEvent(ev eventJSON, asJSON bool) error {
	if asJSON {
		return encodeJSON(c.stdout, ev, "", false)
	}
	host := ev.Host
	if host == "" {
		host = localHost
	}
	at, _ := time.Parse(time.RFC3339Nano, ev.At)
	if ev.Event == eventLost {
		_, err := fmt.Fprintf(c.stdout, "%s  %-8s  host %s: %s\n", at.Local().Format("15:04:05.000"), ev.Event, cell(host), cell(ev.Reason))
		return err
	}
	detail := ev.Status
	switch ev.Event {
	case domain.EventStatus.String():
		detail = ev.PreviousStatus + " -> " + ev.Status
	case domain.EventRenamed.String():
		detail = fmt.Sprintf("from %q", ev.PreviousName)
	case domain.EventDied.String():
		detail = ev.Verdict + ": " + ev.Reason
	case domain.EventGone.String():
		detail = "record " + ev.File + " removed"
	}
	_, err := fmt.Fprintf(c.stdout, "%s  %-8s  %s  %s  session %-*s  pid %-*d  %s\n", at.Local().Format("15:04:05.000"), ev.Event, fit(cell(host), watchNameWidth),
		fit(cell(ev.Name), watchNameWidth), watchIDWidth, cell(ev.SessionID), watchPIDWidth, ev.PID, cell(detail))
	return err
}
