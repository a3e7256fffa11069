package wire

import "github.com/peerctl/peerctl/domain"

// Exit codes: every command's, one table (peerctl help exit-codes prints
// it; docs/OUTPUT.md#exit-codes keeps it as a contract). A far side's
// peerctl ends with the same codes, and a refusal document carries its
// code ("exitCode").
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
)

// ExitCode is the exit code of a refusal's reason (ExitError for none of
// the table's).
func ExitCode(r domain.Reason) int {
	switch r {
	case domain.ReasonNotLive:
		return ExitNotLive
	case domain.ReasonIdentityMismatch:
		return ExitIdentityMismatch
	case domain.ReasonDeliveryFailed:
		return ExitDeliveryFailed
	case domain.ReasonHarnessUnsupported:
		return ExitHarnessUnsupported
	case domain.ReasonNotAddressable:
		return ExitNotAddressable
	case domain.ReasonInvalidMessage:
		return ExitInvalidMessage
	case domain.ReasonNoReply:
		return ExitNoReply
	case domain.ReasonWaitTimeout:
		return ExitWaitTimeout
	case domain.ReasonOutcomeUnknown:
		return ExitOutcomeUnknown
	case domain.ReasonHostUnreachable:
		return ExitHostUnreachable
	case domain.ReasonOutboxUnavailable:
		return ExitOutboxUnavailable
	default:
		return ExitError
	}
}

// KnownExit keeps a far side's exit code when it is one of the table's,
// else ExitError.
func KnownExit(code int) int {
	if code < ExitOK || code > ExitOutboxUnavailable {
		return ExitError
	}
	return code
}
