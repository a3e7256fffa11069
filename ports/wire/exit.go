package wire

import "github.com/peerctl/peerctl/domain"

// Exit codes: every command's, one table (ExitCodes; peerctl help
// exit-codes prints it, docs/OUTPUT.md#exit-codes keeps it as a contract
// and a test holds the two equal). A far side's peerctl ends with the
// same codes, and a refusal document carries its code ("exitCode").
const (
	ExitOK                 = 0
	ExitError              = 1
	ExitUsage              = 2
	ExitNotLive            = 3
	ExitIdentityMismatch   = 4
	ExitDeliveryFailed     = 5
	ExitHarnessUnsupported = 6
	ExitNotAddressable     = 7
	ExitInvalidMessage     = 8
	ExitNoReply            = 9
	ExitHostUnreachable    = 10
	ExitWaitTimeout        = 11
	ExitOutcomeUnknown     = 12
	ExitOutboxUnavailable  = 13
	ExitKeyConflict        = 14
	ExitNotFound           = 15
	ExitWrongState         = 16
	ExitNotAllowed         = 17
)

// ExitRow is one row of the exit-code table.
type ExitRow struct {
	Code int
	// Reason is the refusal that ends with Code (0: none, the code is not
	// a refusal's).
	Reason domain.Reason
	// Meaning is what the code says, in one line of plain text.
	Meaning string
}

// Word is the row's refusal word ("" when the code is not a refusal's).
func (r ExitRow) Word() string {
	if r.Reason == 0 {
		return ""
	}
	return r.Reason.String()
}

// ExitCodes is the exit-code table, written once, in code order: `peerctl
// help exit-codes` prints it and docs/OUTPUT.md#exit-codes is checked
// against it. Codes never change meaning; a new refusal adds a row.
var ExitCodes = []ExitRow{
	{ExitOK, 0, "ok"},
	{ExitError, 0, "unexpected error (e.g. the registry folder is unreadable); list: a harness in scope (every harness, or the one --harness names) could not be read (the rest is printed); doctor found a problem"},
	{ExitUsage, 0, "usage error (bad flag, argument or address)"},
	{ExitNotLive, domain.ReasonNotLive, "no live session answers to the address; whoami: not inside a session; serve status: no service runs for this state folder"},
	{ExitIdentityMismatch, domain.ReasonIdentityMismatch, "ambiguous address (a name several sessions share: use the full id or endpoint), a socket (the same file on disk, under any path) or session id another record also carries, the session changed between reads, or a name sent to while another harness's registry could not be read; whoami: the process it runs under holds several sessions"},
	{ExitDeliveryFailed, domain.ReasonDeliveryFailed, "the transport could not start (courier program or socket missing) or did not deliver (a Qwen Code receipt said refused, denied, misaddressed, expired or dropped), or --require-confirm saw no confirmation"},
	{ExitHarnessUnsupported, domain.ReasonHarnessUnsupported, "the session or program cannot do this"},
	{ExitNotAddressable, domain.ReasonNotAddressable, "live, but the record has no messaging socket, name or id, or its socket is another user's"},
	{ExitInvalidMessage, domain.ReasonInvalidMessage, "empty, NUL, invalid UTF-8 or over the 64 KiB cap"},
	{ExitNoReply, domain.ReasonNoReply, "send --await-reply: no reply came in time, the session ended first, or Ctrl-C ended the wait (Ctrl-C during send --wait exits 0)"},
	{ExitHostUnreachable, domain.ReasonHostUnreachable, "--host: ssh could not connect or authenticate, the host key is unknown or changed, the connection was lost before the far side answered, or no peerctl of this output protocol is there (peerctl hosts install DEST)"},
	{ExitWaitTimeout, domain.ReasonWaitTimeout, "send --wait: the message was handed over but the turn on it had not ended in time"},
	{ExitOutcomeUnknown, domain.ReasonOutcomeUnknown, "the send ended (Ctrl-C, time-out, the courier died; with --host, the connection broke, the far peerctl failed without a receipt, or its receipt named another session) after the text was handed over and before the other side acknowledged it: it may have arrived; sending again may deliver it twice"},
	{ExitOutboxUnavailable, domain.ReasonOutboxUnavailable, "send --durable, outbox cancel/retry: the outbox cannot be used (peerctl serve could not start, or its database fails its integrity check, the disk is full, the folder is read-only): nothing was stored, the file is kept as it is; a send without --durable still works"},
	{ExitKeyConflict, domain.ReasonKeyConflict, "send --durable --key: the key names a stored message with another target or text: nothing was stored or sent; a new message needs a new key"},
	{ExitNotFound, domain.ReasonNotFound, "no such outbox message, host (hosts remove) or policy rule"},
	{ExitWrongState, domain.ReasonWrongState, "outbox cancel/retry/approve/deny: the message's state does not allow it (cancel: not stored, or on the bus to `nats:NODE`, that node's to cancel; retry: delivered, held, taken up, replied, on its way, awaiting approval or denied, or waiting for its node; approve/deny: not awaiting approval)"},
	{ExitNotAllowed, domain.ReasonNotAllowed, "the trust policy refuses this sender this target (a deny rule; a hold that cannot be kept: a dry run, PEERCTL_SERVE=off), naming the rule; nothing was stored or sent (a kept hold exits 0)"},
}

// ExitCode is the exit code of a refusal's reason (ExitError for none of
// the table's).
func ExitCode(r domain.Reason) int {
	for _, row := range ExitCodes {
		if row.Reason != 0 && row.Reason == r {
			return row.Code
		}
	}
	return ExitError
}

// KnownExit keeps a far side's exit code when it is one of the table's,
// else ExitError.
func KnownExit(code int) int {
	for _, row := range ExitCodes {
		if row.Code == code {
			return code
		}
	}
	return ExitError
}
