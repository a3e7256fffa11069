package domain

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The trust policy (docs/POLICY.md): rules, in order, each naming who
// sends (a SenderPattern), to whom (a TargetPattern) and what happens
// (an Action). The first rule that matches decides (Decide); after the
// rules of the file come DefaultRules.

// Entrance is the way a message comes into peerctl; a closed set.
type Entrance int

// The entrances. EntranceUnknown is a send whose entrance was not said
// (a use case called without one): only a `*` rule matches it.
const (
	EntranceUnknown Entrance = iota
	EntranceCLI
	EntranceMCP
	EntranceRelay
	EntranceDashboard
	EntranceHost
	EntranceNode
)

var entranceWords = map[Entrance]string{
	EntranceCLI: "cli", EntranceMCP: "mcp", EntranceRelay: "relay", EntranceDashboard: "dashboard",
	EntranceHost: "host", EntranceNode: "node",
}

// String returns the entrance's word in a rule: "cli", "mcp", "relay",
// "dashboard", "host", "node"; "unknown" for EntranceUnknown.
func (e Entrance) String() string {
	if w, ok := entranceWords[e]; ok {
		return w
	}
	return "unknown"
}

// narrowed says whether a rule may name something after the entrance's
// word (mcp:GLOB, relay:GLOB, host:GLOB, node:GLOB), and required says
// whether the sender itself always carries it (host, node: the DEST, the
// node's name).
func (e Entrance) narrowed() (ok, required bool) {
	switch e {
	case EntranceMCP, EntranceRelay:
		return true, false
	case EntranceHost, EntranceNode:
		return true, true
	}
	return false, false
}

// Action is what a rule does with a message; a closed set.
type Action int

// The actions. Their words never change.
const (
	ActionAllow Action = iota + 1
	ActionHold
	ActionDeny
)

// String returns "allow", "hold" or "deny".
func (a Action) String() string {
	switch a {
	case ActionAllow:
		return "allow"
	case ActionHold:
		return "hold"
	case ActionDeny:
		return "deny"
	}
	return fmt.Sprintf("action(%d)", int(a))
}

// ParseAction reads "allow", "hold" or "deny".
func ParseAction(word string) (Action, error) {
	for _, a := range []Action{ActionAllow, ActionHold, ActionDeny} {
		if word == a.String() {
			return a, nil
		}
	}
	hint := ""
	for _, a := range []Action{ActionAllow, ActionHold, ActionDeny} {
		if d := EditDistance(strings.ToLower(word), a.String()); d <= 2 && d < len(word) {
			hint = "; did you mean " + a.String() + "?"
			break
		}
	}
	return 0, fmt.Errorf("action %s: want allow, hold or deny%s", strconv.Quote(word), hint)
}

// Sender is who sends a message: the entrance and what narrows it (a
// host's DEST, a node's name) and, for mcp and relay, the sending session
// when peerctl could tell it (its name and id; both "" when not).
type Sender struct {
	entrance               Entrance
	where                  string
	sessionName, sessionID string
}

// NewSender is a sender of entrance e; where is the DEST of EntranceHost
// or the node name of EntranceNode ("" otherwise).
func NewSender(e Entrance, where string) Sender { return Sender{entrance: e, where: where} }

// ParseSender reads a sender as `policy check --from` takes it: cli,
// dashboard, mcp or relay (its session not known), mcp:NAME or relay:NAME
// (run by the session NAME: a name or an id), host:DEST, node:NAME.
func ParseSender(s string) (Sender, error) {
	p, err := ParseSenderPattern(s)
	if err != nil {
		return Sender{}, err
	}
	_, name, narrowed := strings.Cut(s, ":")
	switch {
	case p.any:
		return Sender{}, fmt.Errorf("%w: from *: name one sender (cli, mcp:NAME, host:DEST, ...)", ErrBadRule)
	case narrowed && strings.ContainsAny(name, "*?[\\"):
		return Sender{}, fmt.Errorf("%w: from %s: name one sender, not a glob", ErrBadRule, strconv.Quote(s))
	case p.entrance == EntranceHost || p.entrance == EntranceNode:
		if !narrowed {
			return Sender{}, fmt.Errorf("%w: from %s: want %s:NAME", ErrBadRule, strconv.Quote(s), s)
		}
		return NewSender(p.entrance, name), nil
	case narrowed:
		return NewSender(p.entrance, "").WithSession(name, name), nil
	}
	return NewSender(p.entrance, ""), nil
}

// WithSession is s with its sending session (name and id) known.
func (s Sender) WithSession(name, id string) Sender {
	s.sessionName, s.sessionID = name, id
	return s
}

// Entrance is the sender's entrance.
func (s Sender) Entrance() Entrance { return s.entrance }

// Where is the DEST of EntranceHost or the node's name of EntranceNode
// ("" otherwise, and for a host sender whose DEST is not known).
func (s Sender) Where() string { return s.where }

// SessionName and SessionID are the sending session's ("" when not known).
func (s Sender) SessionName() string { return s.sessionName }
func (s Sender) SessionID() string   { return s.sessionID }

// ParseEntrance reads an entrance's word ("cli", "mcp", "relay",
// "dashboard", "host", "node"); "" and "unknown" are EntranceUnknown.
func ParseEntrance(word string) (Entrance, error) {
	if word == "" || word == "unknown" {
		return EntranceUnknown, nil
	}
	for e, w := range entranceWords {
		if w == word {
			return e, nil
		}
	}
	return EntranceUnknown, fmt.Errorf("entrance %s: want cli, mcp, relay, dashboard, host or node", strconv.Quote(word))
}

// SessionKnown says whether the sending session was found.
func (s Sender) SessionKnown() bool { return s.sessionName != "" || s.sessionID != "" }

// String is the sender as a rule would name it: "cli", "host:far",
// "mcp:reviewer-1" ("mcp (its session not known)" when it is not).
func (s Sender) String() string {
	switch {
	case s.where != "":
		return s.entrance.String() + ":" + s.where
	case s.SessionKnown():
		name := s.sessionName
		if name == "" {
			name = s.sessionID
		}
		return s.entrance.String() + ":" + name
	}
	if ok, _ := s.entrance.narrowed(); ok {
		return s.entrance.String() + " (its session not known)"
	}
	return s.entrance.String()
}

// Target is what the policy knows of a message's target: a session read
// from the registry (TargetOf), or only the address a send gives and the
// host it goes to (AddressTarget: a far send, a durable send).
type Target struct {
	known         bool
	id, name, cwd string
	harness       string
	address, host string
}

// TargetOf is a resolved session on host ("" for this machine).
func TargetOf(s Session, host string) Target {
	return Target{known: true, id: s.ID(), name: s.Name(), cwd: s.Cwd(), harness: s.Harness().String(), host: host}
}

// AddressTarget is a target known only by the address a send gives, on
// host ("" for this machine): its harness, cwd and id are not known.
func AddressTarget(address, host string) Target { return Target{address: address, host: host} }

// String names the target in a decision's words.
func (t Target) String() string {
	where := ""
	if t.host != "" {
		where = " on " + t.host
	}
	if !t.known {
		return fmt.Sprintf("%s%s (known only by its address)", strconv.Quote(t.address), where)
	}
	return fmt.Sprintf("%s (%s, %s, cwd %s)%s", strconv.Quote(t.name), t.id, t.harness, t.cwd, where)
}

// SenderPattern is a rule's --from: `*`, an entrance's word, or
// ENTRANCE:GLOB for mcp and relay (the sending session's name or id) and
// host and node (the DEST, the node's name).
type SenderPattern struct {
	any      bool
	entrance Entrance
	glob     string
}

// ParseSenderPattern reads a rule's --from (see SenderPattern).
func ParseSenderPattern(s string) (SenderPattern, error) {
	if err := ruleWord("from", s); err != nil {
		return SenderPattern{}, err
	}
	if s == "*" {
		return SenderPattern{any: true}, nil
	}
	word, glob, narrowed := strings.Cut(s, ":")
	var e Entrance
	for k, w := range entranceWords {
		if w == word {
			e = k
		}
	}
	if e == EntranceUnknown {
		return SenderPattern{}, fmt.Errorf("from %s: want *, cli, mcp, relay, dashboard, host:DEST, node:NAME, or mcp:GLOB / relay:GLOB (the sending session)", strconv.Quote(s))
	}
	ok, required := e.narrowed()
	switch {
	case narrowed && !ok:
		return SenderPattern{}, fmt.Errorf("from %s: %s is not narrowed by anything after ':'", strconv.Quote(s), word)
	case narrowed:
		if err := checkGlob("from", glob); err != nil {
			return SenderPattern{}, err
		}
	}
	if glob == "" && required {
		glob = "*"
	}
	return SenderPattern{entrance: e, glob: glob}, nil
}

// String is the pattern as written.
func (p SenderPattern) String() string {
	switch {
	case p.any:
		return "*"
	case p.glob != "":
		return p.entrance.String() + ":" + p.glob
	}
	return p.entrance.String()
}

// match says whether p names s; unsure when it depends on a sending
// session peerctl could not tell.
func (p SenderPattern) match(s Sender) (match, unsure bool) {
	switch {
	case p.any:
		return true, false
	case p.entrance != s.entrance:
		return false, false
	case p.glob == "" || p.glob == "*":
		return true, false
	case s.where != "":
		return globMatch(p.glob, s.where), false
	case !s.SessionKnown():
		return false, true
	}
	return globMatch(p.glob, s.sessionName) || globMatch(p.glob, s.sessionID), false
}

// TargetPattern is a rule's --to (a glob of a session's name or id, or
// `*`) narrowed by --harness, --host (a DEST: sends there) and --cwd (a
// folder: sessions working in it or below).
type TargetPattern struct {
	glob, harness, host, cwd string
}

// ParseTargetPattern reads a rule's --to, --harness, --host and --cwd
// ("" for one not given).
func ParseTargetPattern(glob, harness, host, cwd string) (TargetPattern, error) {
	if err := checkGlob("to", glob); err != nil {
		return TargetPattern{}, err
	}
	if harness != "" {
		h, err := ParseHarness(harness)
		if err != nil {
			return TargetPattern{}, fmt.Errorf("harness: %w", err)
		}
		harness = h.String()
	}
	if host != "" {
		d, err := ParseDest(host)
		if err != nil {
			return TargetPattern{}, fmt.Errorf("host: %w", err)
		}
		host = d.String()
	}
	if cwd != "" {
		if err := ruleWord("cwd", cwd); err != nil {
			return TargetPattern{}, err
		}
		if !strings.HasPrefix(cwd, "/") {
			return TargetPattern{}, fmt.Errorf("cwd %s: want an absolute folder", strconv.Quote(cwd))
		}
		cwd = path.Clean(cwd)
	}
	return TargetPattern{glob: glob, harness: harness, host: host, cwd: cwd}, nil
}

// Glob, Harness, Host and Cwd are the pattern's parts ("" for one not given).
func (p TargetPattern) Glob() string    { return p.glob }
func (p TargetPattern) Harness() string { return p.harness }
func (p TargetPattern) Host() string    { return p.host }
func (p TargetPattern) Cwd() string     { return p.cwd }

func (p TargetPattern) match(t Target) (match, unsure bool) {
	if p.host != "" && p.host != t.host {
		return false, false
	}
	if !t.known {
		ok := p.glob == "*" || globMatch(p.glob, t.address)
		return ok && p.harness == "" && p.cwd == "", !ok || p.harness != "" || p.cwd != ""
	}
	if p.glob != "*" && !globMatch(p.glob, t.name) && !globMatch(p.glob, t.id) {
		return false, false
	}
	if p.harness != "" && p.harness != t.harness {
		return false, false
	}
	if p.cwd != "" && t.cwd != p.cwd && !strings.HasPrefix(t.cwd, strings.TrimSuffix(p.cwd, "/")+"/") {
		return false, false
	}
	return true, false
}

// Rule is one rule of the policy.
type Rule struct {
	From   SenderPattern
	To     TargetPattern
	Action Action
}

// String is the rule in its file's words: "deny from=mcp to=prod-* cwd=/srv".
func (r Rule) String() string {
	var b strings.Builder
	b.WriteString(r.Action.String() + " from=" + r.From.String() + " to=" + r.To.glob)
	for _, kv := range [][2]string{{"harness", r.To.harness}, {"host", r.To.host}, {"cwd", r.To.cwd}} {
		if kv[1] != "" {
			b.WriteString(" " + kv[0] + "=" + kv[1])
		}
	}
	return b.String()
}

// DefaultRules come after a policy's own rules, and are the whole policy
// when there is none: a message from another machine on the bus is held
// (a new entrance is closed until a rule opens it); everything else is
// allowed, as peerctl did before it had a policy.
func DefaultRules() []Rule {
	return []Rule{
		{From: SenderPattern{entrance: EntranceNode, glob: "*"}, To: TargetPattern{glob: "*"}, Action: ActionHold},
		{From: SenderPattern{any: true}, To: TargetPattern{glob: "*"}, Action: ActionAllow},
	}
}

// Decision is what the policy decides for one message.
type Decision struct {
	Action Action
	Rule   Rule
	// Number is the rule's place in the policy, from 1; 0 for a default
	// rule (Default is its place among DefaultRules, from 1).
	Number, Default int
	From            Sender
	To              Target
	// Unsure says the rule decided on a fact peerctl could not know (the
	// sending session, a far or durable target's harness, cwd or id), read
	// the safe way: a deny or hold rule applies then, an allow rule not.
	Unsure bool
	// Over is the weaker decision this one stands over (Stricter), said
	// by Why: "" when there was none.
	Over string
}

// strictness orders the actions: deny, then hold, then allow.
func (a Action) strictness() int {
	switch a {
	case ActionDeny:
		return 3
	case ActionHold:
		return 2
	case ActionAllow:
		return 1
	}
	return 0
}

// Stricter is the stricter of two decisions for one message (deny, then
// hold, then allow; own on a tie): own is this reader's of the policy,
// entrance the one the message's entrance made with its own reading
// before handing it over (another process, which may have read another
// policy file). A decision made at an entrance is never weakened by a
// later reading; when entrance's stands over own, its Over says what own
// would have decided.
func Stricter(own, entrance Decision) Decision {
	if entrance.Action.strictness() <= own.Action.strictness() {
		return own
	}
	entrance.Over = fmt.Sprintf("%s by %s (%s)", own.Action, own.RuleName(), own.Rule)
	return entrance
}

// RuleName is "rule 3" or "default rule 1".
func (d Decision) RuleName() string {
	if d.Number == 0 {
		return fmt.Sprintf("default rule %d", d.Default)
	}
	return fmt.Sprintf("rule %d", d.Number)
}

// Why says the decision in one line: "deny by rule 2 (deny from=mcp
// to=prod-*): mcp:reviewer-1 to ...".
func (d Decision) Why() string {
	s := fmt.Sprintf("%s by %s (%s): %s to %s", d.Action, d.RuleName(), d.Rule, d.From, d.To)
	if d.Unsure {
		s += "; decided on a fact peerctl cannot know, read the safe way (a deny or hold rule applies, an allow rule does not)"
	}
	if d.Over != "" {
		s += "; decided so where the message came in, by that process's reading of the trust policy, which is stricter than peerctl serve's own (" + d.Over +
			"): the stricter stands (do the two read different policy files? XDG_CONFIG_HOME)"
	}
	return s
}

// Decide returns the decision of the first of rules, then of
// DefaultRules, that matches a message from from to to. A rule that
// needs a fact peerctl does not know (Decision.Unsure) applies when it
// denies or holds and is passed over when it allows.
func Decide(rules []Rule, from Sender, to Target) Decision {
	d := Decision{From: from, To: to}
	try := func(r Rule) bool {
		fm, fu := r.From.match(from)
		tm, tu := r.To.match(to)
		switch {
		case fm && tm:
			d.Action, d.Rule, d.Unsure = r.Action, r, false
			return true
		case (fm || fu) && (tm || tu) && r.Action != ActionAllow:
			d.Action, d.Rule, d.Unsure = r.Action, r, true
			return true
		}
		return false
	}
	for i, r := range rules {
		if try(r) {
			d.Number = i + 1
			return d
		}
	}
	for i, r := range DefaultRules() {
		if try(r) {
			d.Default = i + 1
			return d
		}
	}
	panic("unreachable: the last default rule matches everything")
}

// AllowsEvery reports whether rules, then DefaultRules, allow every
// message from from here, whatever its target (its name, id, harness,
// cwd) and whatever sending session from turns out to be in: the first
// rule that can apply to from matches every target of this machine and
// allows. Then Decide(rules, from', to) allows for every to without a
// host and every from' that is from with its session found; an entrance
// need not read the registry to decide. False when the decision may
// depend on the target or the session (Decide it).
func AllowsEvery(rules []Rule, from Sender) bool {
	for _, r := range append(slices.Clip(rules), DefaultRules()...) {
		if r.To.host != "" {
			continue // a rule for sends to another machine
		}
		fm, fu := r.From.match(from)
		switch {
		case !fm && !fu, !fm && r.Action == ActionAllow:
			continue // never applies; or an allow a session not known passes over
		case !fm:
			return false // a deny or hold that may apply once the session is known
		}
		every := r.To.glob == "*" && r.To.harness == "" && r.To.cwd == ""
		return every && r.Action == ActionAllow
	}
	return false
}

// ErrHeld is wrapped by the refusal of a decision to hold (NotAllowed):
// an entrance that can keep the message for approval (peerctl serve's
// outbox: AsHeld gives the decision) does so; one that cannot refuses it
// with not_allowed, and nothing is stored or sent.
var ErrHeld = errors.New("held for approval by the trust policy")

// HoldError is a decision to hold, as an error (it is ErrHeld).
type HoldError struct{ Decision Decision }

func (e *HoldError) Error() string        { return e.Decision.Why() }
func (e *HoldError) Is(target error) bool { return target == ErrHeld }

// AsHeld is the decision to hold that err carries (ok false when none).
func AsHeld(err error) (Decision, bool) {
	var h *HoldError
	if errors.As(err, &h) {
		return h.Decision, true
	}
	return Decision{}, false
}

// NotAllowed is the refusal of a decision that is not allow: deny, or
// hold (its Err a *HoldError: the entrance keeps the message for approval
// when it can, else the refusal stands: nothing was stored or sent).
func (d Decision) NotAllowed() *Refusal {
	if d.Action == ActionHold {
		return &Refusal{Reason: ReasonNotAllowed, Err: &HoldError{Decision: d},
			Detail: d.Why() + "; a held message waits in peerctl serve's outbox for peerctl outbox approve, and this send could not be kept there: nothing was stored or sent"}
	}
	return &Refusal{Reason: ReasonNotAllowed, Detail: d.Why() + "; nothing was stored or sent"}
}

// ErrBadRule is wrapped by every error of a rule that cannot be read.
var ErrBadRule = errors.New("bad policy rule")

// MaxRuleWord bounds one word of a rule, in bytes.
const MaxRuleWord = 1024

// ruleWord accepts a rule's word: not empty, UTF-8, at most MaxRuleWord
// bytes, no control character, and no space but in a cwd.
func ruleWord(field, s string) error {
	switch {
	case s == "":
		return fmt.Errorf("%w: %s is empty", ErrBadRule, field)
	case !utf8.ValidString(s):
		return fmt.Errorf("%w: %s is not UTF-8", ErrBadRule, field)
	case len(s) > MaxRuleWord:
		return fmt.Errorf("%w: %s is %d bytes, at most %d", ErrBadRule, field, len(s), MaxRuleWord)
	case strings.ContainsFunc(s, unicode.IsControl):
		return fmt.Errorf("%w: %s %s holds a control character", ErrBadRule, field, strconv.Quote(s))
	case field != "cwd" && strings.ContainsFunc(s, unicode.IsSpace):
		return fmt.Errorf("%w: %s %s holds a space", ErrBadRule, field, strconv.Quote(s))
	}
	return nil
}

// checkGlob accepts a glob as path.Match reads it (*, ?, [a-z], \x).
func checkGlob(field, glob string) error {
	if err := ruleWord(field, glob); err != nil {
		return err
	}
	if _, err := path.Match(glob, ""); err != nil {
		return fmt.Errorf("%w: %s %s is not a glob (*, ?, [a-z]): %v", ErrBadRule, field, strconv.Quote(glob), err)
	}
	return nil
}

func globMatch(glob, s string) bool {
	ok, _ := path.Match(glob, s) // checked by checkGlob
	return ok
}

// NewRule builds a rule from its words (see ParseSenderPattern,
// ParseTargetPattern, ParseAction); errors wrap ErrBadRule.
func NewRule(action, from, to, harness, host, cwd string) (Rule, error) {
	a, err := ParseAction(action)
	if err != nil {
		return Rule{}, fmt.Errorf("%w: %w", ErrBadRule, err)
	}
	f, err := ParseSenderPattern(from)
	if err != nil {
		return Rule{}, wrapBad(err)
	}
	t, err := ParseTargetPattern(to, harness, host, cwd)
	if err != nil {
		return Rule{}, wrapBad(err)
	}
	return Rule{From: f, To: t, Action: a}, nil
}

func wrapBad(err error) error {
	if errors.Is(err, ErrBadRule) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrBadRule, err)
}
