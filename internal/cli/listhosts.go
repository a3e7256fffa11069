package cli

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
)

// listFlags are list's flags, for listing several hosts.
type listFlags struct {
	all, wide, asJSON bool
	harness           string
	only              []domain.Harness
}

// maxParallelHosts bounds how many hosts one list reaches at once: the
// hosts of a hosts file are reached in parallel, so a host that hangs
// costs one host timeout, not one for each host after it.
const maxParallelHosts = 16

// hostListing is what one host's listing gave.
type hostListing struct {
	dest domain.Dest
	rows []sessionJSON
	// partial: a harness there could not be read (its warning is printed);
	// err: nothing came from the host.
	partial bool
	err     error
	// print writes the host's messages (warnings, notes) to stderr.
	print func()
}

// listHosts lists every host of dests at once (at most maxParallelHosts
// at a time; the far sides' peerctl, and this machine for "."), then
// prints what every host that answered gave, in the order given (each
// host's by pid), one warning per host that did not; the exit is 10 when a host could not be reached, otherwise 1
// when a listing is partial, as a local one's. One far side alone that
// failed ends it as that failure (its exit code, its message once).
func (c *cli) listHosts(ctx context.Context, dests []domain.Dest, f listFlags) error {
	if err := c.checkHosts(dests); err != nil {
		return err
	}
	got := make([]hostListing, len(dests))
	var wg sync.WaitGroup
	slots := make(chan struct{}, maxParallelHosts)
	for i, d := range dests {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			got[i] = c.listHost(ctx, d, f)
		})
	}
	wg.Wait()
	if len(got) == 1 && got[0].err != nil && !got[0].dest.IsLocal() {
		return got[0].err // one far side: its refusal or failure, its exit code
	}
	var rows []sessionJSON
	code := exitOK
	for _, h := range got {
		if h.print != nil {
			h.print()
		}
		if h.err != nil {
			where := "this machine"
			if !h.dest.IsLocal() {
				where = "host " + h.dest.String()
			}
			fmt.Fprintf(c.stderr, "peerctl: warning: %s: not listed, its sessions are left out: %s\n", where, safe(h.err.Error()))
			if r, ok := domain.AsRefusal(h.err); ok && r.Reason == domain.ReasonHostUnreachable {
				code = exitHostUnreachable
			} else if code == exitOK {
				code = exitError
			}
			continue
		}
		if h.partial && code == exitOK {
			code = exitError
		}
		rows = append(rows, h.rows...)
	}
	if rows == nil {
		rows = []sessionJSON{}
	}
	var err error
	if f.asJSON {
		err = c.writeJSON(rows)
	} else {
		err = c.printHostTable(rows, f, len(dests) > 1)
	}
	if err == nil && code != exitOK {
		return silentError{code: code}
	}
	return err
}

// listHost lists one host: this machine's registries, or the far side's
// `peerctl list --json`.
func (c *cli) listHost(ctx context.Context, dest domain.Dest, f listFlags) hostListing {
	h := hostListing{dest: dest}
	if dest.IsLocal() {
		svc, err := c.service(options{readOnly: true, only: f.only})
		if err != nil {
			h.err = err
			return h
		}
		l, err := svc.List(ctx, f.all)
		if err != nil {
			h.err = err
			return h
		}
		l.Entries = app.FilterHarness(l.Entries, f.only...)
		for _, e := range l.Entries {
			h.rows = append(h.rows, toJSON(e))
		}
		h.partial = len(l.UnreadIn(f.only...)) > 0
		h.print = func() {
			c.warnUnread(l.Unread)
			c.warnRead(l.Warnings)
			if l.Missing && len(l.Entries) == 0 && (len(f.only) == 0 || slices.Contains(f.only, l.DirHarness)) {
				fmt.Fprintf(c.stderr, "peerctl: note: %s\n", app.MissingFolderNote(l.Dir))
			}
		}
		return h
	}
	rows, partial, stderr, err := c.hostSessions(ctx, dest, f.all, f.harness)
	h.rows, h.partial, h.err = rows, partial, err
	if err == nil { // a failure's message already holds its stderr
		h.print = func() { c.passStderr(dest, stderr) }
	}
	return h
}

// hostSessions is the far side's `list --json` with each session's host
// and endpoint set; partial when a harness there could not be read (its
// exit 1, with the listing).
func (c *cli) hostSessions(ctx context.Context, dest domain.Dest, all bool, harness string) (rows []sessionJSON, partial bool, stderr []byte, err error) {
	args := []string{"list", "--json"}
	if all {
		args = append(args, "--all")
	}
	if harness != "" {
		args = append(args, "--harness="+harness)
	}
	res, err := c.callHost(ctx, dest, args, nil, 0)
	if err != nil {
		return nil, false, res.Stderr, err
	}
	if res.Code == exitError && len(res.Stdout) > 0 {
		res.Code, partial = exitOK, true // the far side printed what it read
	}
	if err := remoteDoc(dest, res, &rows); err != nil {
		return nil, false, res.Stderr, err
	}
	stderr = res.Stderr
	kept := rows[:0]
	for _, r := range rows {
		ep, err := hostEndpoint(dest, r.Endpoint)
		if err != nil {
			stderr = append(stderr, skipNote("session", r.SessionID, err)...)
			continue
		}
		r.Host, r.Endpoint = dest.String(), ep
		kept = append(kept, r)
	}
	return kept, partial, stderr, nil
}

// printHostTable prints a listing of several hosts for people: list's
// columns, with HOST first when more than one host was listed.
func (c *cli) printHostTable(rows []sessionJSON, f listFlags, withHost bool) error {
	entries := make([]domain.Entry, len(rows))
	for i, r := range rows {
		entries[i].Record.SessionID = r.SessionID
	}
	short := domain.ShortIDs(entries)
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	host := func(r sessionJSON) string {
		if !withHost {
			return ""
		}
		if r.Host == "" {
			return localHost + "\t"
		}
		return cut(cell(r.Host), widthName) + "\t"
	}
	head := ""
	if withHost {
		head = "HOST\t"
	}
	now := time.Now()
	if f.all {
		fmt.Fprintln(tw, head+"VERDICT\tHARNESS\tNAME\tSESSION\tPID\tFILE\tREASON")
	} else {
		fmt.Fprintln(tw, head+"NAME\tHARNESS\tSESSION\tPID\tSTATUS\tAGE\tCWD")
	}
	for i, r := range rows {
		id := short[i]
		if f.wide {
			id = r.SessionID
		}
		if f.all {
			reason := r.Reason
			if r.Verdict == domain.VerdictLive.String() && !r.Addressable {
				reason = "not addressable: " + r.Unaddressable
			}
			fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\t%d\t%s\t%s\n", host(r), cell(r.Verdict), cell(r.Harness), cut(cell(r.Name), widthName), cut(cell(id), widthID),
				r.PID, cut(cell(r.File), widthName), cut(cell(reason), widthText))
			continue
		}
		status := r.Status
		if !r.Addressable {
			status += " (not addressable)"
		}
		started, _ := time.Parse(time.RFC3339Nano, r.StartedAt)
		fmt.Fprintf(tw, "%s%s\t%s\t%s\t%d\t%s\t%s\t%s\n", host(r), cut(cell(r.Name), widthName), cell(r.Harness), cut(cell(id), widthID), r.PID,
			cell(status), age(now, started), cut(cell(r.Cwd), widthText))
	}
	return tw.Flush()
}
