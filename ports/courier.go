package ports

import (
	"context"

	"github.com/peerctl/peerctl/domain"
)

// Courier is one long-lived courier: a transport process kept running for
// many sends, which is also a peer that other sessions can answer. Send
// may be called many times, one at a time (calls are serialized).
type Courier interface {
	// Send hands msg to target and returns the receipt as soon as the
	// other side accepted it (Claude Code's courier: outcome "queued", with
	// its msg_id; Qwen Code's reply inbox: the session's receipt word,
	// delivered, held or posted, with the frame's msgId).
	// Failures are *domain.Refusal values (ReasonDeliveryFailed when the
	// courier ended or did not deliver). It honours ctx.
	Send(ctx context.Context, target domain.Session, msg domain.Message) (domain.Receipt, error)
	// Inbound delivers, in arrival order, every cross-session message that
	// reaches the courier (domain.Inbound.IsReplyFrom tells a target's
	// reply); it is closed by Close.
	Inbound() <-chan domain.Inbound
	// Notices delivers the delivery notices about messages the courier
	// sent (held, refused…), in arrival order; it is closed by Close.
	Notices() <-chan domain.Notice
	// Done is closed once the courier process has ended (on its own, killed,
	// or by Close).
	Done() <-chan struct{}
	// Close ends the courier and releases everything it holds; it is safe
	// to call more than once.
	Close() error
}

// Couriers starts long-lived couriers.
type Couriers interface {
	// StartCourier starts one courier; ctx bounds its whole life. Failures
	// are *domain.Refusal values with ReasonDeliveryFailed.
	StartCourier(ctx context.Context) (Courier, error)
}
