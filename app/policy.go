package app

import (
	"context"
	"fmt"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// Sending says who sends through a Service (WithPolicy): the entrance,
// what narrows it (a host's DEST, a node's name), and, for mcp and relay,
// the process whose parents are walked for the sending session.
type Sending struct {
	Entrance domain.Entrance
	// Where is the DEST of EntranceHost or the node's name of
	// EntranceNode; "" otherwise.
	Where string
	// PID is the process whose nearest ancestor that is a live session
	// is the sending session (0: none is looked for); Procs reads its
	// parents. Only the process tree is trusted for this, never a
	// variable of the environment alone (docs/POLICY.md).
	PID   int
	Procs ports.Processes
	// SessionName and SessionID are the sending session as the entrance
	// found it already, when PID is 0: peerctl serve decides with the
	// sender its client's order carries (docs/POLICY.md says what that
	// proves).
	SessionName, SessionID string
	// Approved says a person approved this message (outbox approve): a
	// hold rule lets it pass; a deny rule still refuses it.
	Approved bool
	// Decided is the decision the message's entrance made already, with
	// its own reading of the policy, before it handed the message over
	// (nil: none, or allow): the Service's own decision is never weaker
	// (domain.Stricter), whatever policy file each of them read.
	Decided *domain.Decision
}

// WithPolicy makes every send of the Service (Send, a Relay's, an outbox
// attempt) ask the trust policy first (Allowed): p holds the rules (nil:
// the defaults alone), from says who sends.
func WithPolicy(p ports.Policy, from Sending) Option {
	return func(s *Service) { s.policy, s.from = p, from }
}

// Decide is the trust policy's decision (the one use case every entrance
// asks, directly or through Allowed): the first of the policy's rules,
// then of domain.DefaultRules, that matches a message from from to to. A
// policy file that cannot be used is the error (a *domain.Refusal with
// ReasonNotAllowed: nothing is sent while the rules cannot be read).
func (s *Service) Decide(from domain.Sender, to domain.Target) (domain.Decision, error) {
	var rules []domain.Rule
	if s.policy != nil {
		var err error
		if rules, err = s.policy.Rules(); err != nil {
			return domain.Decision{}, &domain.Refusal{Reason: domain.ReasonNotAllowed, Err: err,
				Detail: fmt.Sprintf("the trust policy cannot be used, so nothing is sent: %v", err)}
		}
	}
	return domain.Decide(rules, from, to), nil
}

// Sender is who sends through the Service, on the listing l: the
// entrance, and the sending session when Sending.PID runs inside one
// (found by process ancestry alone).
func (s *Service) Sender(l Listing) domain.Sender {
	from := domain.NewSender(s.from.Entrance, s.from.Where).WithSession(s.from.SessionName, s.from.SessionID)
	if s.from.PID <= 0 || s.from.Procs == nil {
		return from
	}
	if self, err := whoami(l, s.from.Procs, s.from.PID, nil); err == nil {
		from = from.WithSession(self.Entry.Record.Name, self.Entry.Record.SessionID)
	}
	return from
}

// Who is who sends through the Service, found now (Sender on a fresh
// read of the registry when the sending session is looked for): what an
// entrance puts in the order it hands to peerctl serve.
func (s *Service) Who(ctx context.Context) domain.Sender {
	var l Listing
	if s.from.PID > 0 && s.from.Procs != nil {
		l, _, _ = s.readLive(ctx)
	}
	return s.Sender(l)
}

// AllowedTo is nil when the trust policy allows a message from the
// Service's sender to address on host (the zero Dest: this machine),
// else a *domain.Refusal (ReasonNotAllowed) naming the rule that denies
// or holds it. It is for a send that leaves this process before its
// target is resolved here (to another machine; to peerctl serve): a
// target here that resolves on a fresh read is decided as that session
// (domain.TargetOf), any other by its address alone
// (domain.AddressTarget).
//
// When the rules allow every target here for this sender, whatever its
// session (domain.AllowsEvery: with no policy file, every entrance but
// a node's), and the entrance decided nothing stricter, the registry is not read: the decision could not differ, and
// the send's own fresh read (Send) resolves and verifies the target.
func (s *Service) AllowedTo(ctx context.Context, address string, host domain.Dest) error {
	if host.IsLocal() && s.from.Decided == nil && s.allowsEvery() {
		return nil
	}
	var l Listing
	if host.IsLocal() || s.from.PID > 0 && s.from.Procs != nil {
		var err error
		if l, _, err = s.readLive(ctx); err != nil {
			return err
		}
	}
	return s.allowed(l, policyTarget(l, address, host))
}

// allowsEvery reports whether the policy allows a message from the
// Service's sender to every target here (domain.AllowsEvery), its session
// not looked for; false when the rules cannot be read (Decide says why).
func (s *Service) allowsEvery() bool {
	var rules []domain.Rule
	if s.policy != nil {
		var err error
		if rules, err = s.policy.Rules(); err != nil {
			return false
		}
	}
	return domain.AllowsEvery(rules, s.Sender(Listing{}))
}

// Check is `policy check`: the decision for a message from from to
// address on host (the zero Dest: this machine), the target found as
// AllowedTo finds it.
func (s *Service) Check(ctx context.Context, from domain.Sender, address string, host domain.Dest) (domain.Decision, error) {
	var l Listing
	if host.IsLocal() {
		var err error
		if l, _, err = s.readLive(ctx); err != nil {
			return domain.Decision{}, err
		}
	}
	return s.Decide(from, policyTarget(l, address, host))
}

// policyTarget is address on host as the policy sees it: the session here
// it resolves to on l, else known by its address alone.
func policyTarget(l Listing, address string, host domain.Dest) domain.Target {
	if host.IsLocal() {
		if target, err := domain.Resolve(l.Entries, address); err == nil {
			return domain.TargetOf(target, "")
		}
	}
	return domain.AddressTarget(address, host.String())
}

func (s *Service) allowed(l Listing, to domain.Target) error {
	d, err := s.Decide(s.Sender(l), to)
	if err != nil {
		return err
	}
	if e := s.from.Decided; e != nil {
		d = domain.Stricter(d, *e)
	}
	s.log.Debug("trust policy", "decision", d.Why(), "approved", s.from.Approved)
	if d.Action == domain.ActionAllow || d.Action == domain.ActionHold && s.from.Approved {
		return nil
	}
	return d.NotAllowed()
}
