package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/peerctl/peerctl/adapters/sshhost"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/wire"
)

// sendQuery is send's flags as a node takes them.
func sendQuery(address, text, transport, from string, timeout time.Duration, dryRun bool, confirm confirmFlags, await time.Duration) wire.SendQuery {
	return wire.SendQuery{Address: address, Text: text, Transport: transport, From: from, Timeout: timeout, ConfirmTimeout: confirm.timeout,
		Wait: confirm.wait, AwaitReply: await, DryRun: dryRun, NoConfirm: confirm.noConfirm, RequireConfirm: confirm.require}
}

// hostSend is send --host: dest's peerctl sends q (sshhost.Node.Send);
// its receipt (printHostSend prints it), or its refusal.
func (c *cli) hostSend(ctx context.Context, dest domain.Dest, q wire.SendQuery) (wire.Sent, error) {
	n, err := c.hostNode(dest)
	if err != nil {
		return wire.Sent{}, err
	}
	return n.Send(ctx, q)
}

// printHostSend prints a far side's receipt (given c.outbox, for a durable
// send) and passes its stderr on; its exit code is this one's.
func (c *cli) printHostSend(sent wire.Sent, asJSON, awaited bool) error {
	c.passLines(sent.Stderr)
	out := sent.Receipt
	out.Outbox = c.outbox
	var err error
	if asJSON {
		err = c.writeJSON(out)
	} else {
		err = c.printHostReceipt(out, awaited)
	}
	if err != nil {
		return err
	}
	if code := remoteExitCode(sent.Code); code != exitOK {
		return silentError{code: code}
	}
	return nil
}

// hostNode is dest's peerctl as a node (nodes), for the use cases only a
// host's node has yet.
func (c *cli) hostNode(dest domain.Dest) (*sshhost.Node, error) {
	n, err := c.node(dest)
	if err != nil {
		return nil, err
	}
	h, ok := n.(*sshhost.Node)
	if !ok {
		return nil, fmt.Errorf("%s is this machine, not a host", dest)
	}
	return h, nil
}

// printHostReceipt prints a far side's receipt as text (printReceiptText):
// on stdout, or on stderr when the reply takes stdout (--await-reply),
// then the reply on stdout.
func (c *cli) printHostReceipt(out wire.Receipt, awaited bool) error {
	w := c.stdout
	if awaited {
		w = c.stderr
	}
	printReceiptText(w, out)
	if out.Reply == nil || out.Plan != nil {
		return nil
	}
	return c.printReplyText(*out.Reply)
}

// passLines prints a far side's stderr as it is, line by line, escaped:
// its refusal word stays first ("peerctl: not_live: ...").
func (c *cli) passLines(stderr []byte) {
	for _, l := range strings.Split(strings.TrimRight(string(stderr), "\n"), "\n") {
		if l != "" {
			fmt.Fprintln(c.stderr, safe(clipText(l, 4000)))
		}
	}
}
