package wire

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/jsonexact"
)

// The readers of another machine's answers: what its peerctl printed for a
// use case (its --json document on Stdout, its stderr lines, its exit
// code), however it came (over ssh, adapters/sshhost; from a node's
// service on the fleet's bus, adapters/natsbus). Each reads the document
// with exact keys, checks it against the call, and gives it its host
// (dest) and its endpoints in dest's form (HostEndpoint); the words it
// quotes are bounded and escaped.

// ReadListing reads a far side's `list --json`: a far side that printed
// its listing and exited 1 (a harness there could not be read) gives a
// Partial listing; its stderr lines are the Notes, with a warning for
// each session left out because its endpoint is not one of that
// machine's or, live, it is an entry list --json never prints for a live
// session (CheckLive).
func ReadListing(dest domain.Dest, res ports.RemoteResult) (Listing, error) {
	out := Listing{Version: res.Version}
	if res.Code == 1 && len(res.Stdout) > 0 {
		res.Code, out.Partial = 0, true // the far side printed what it read
	}
	var rows []Session
	if err := ReadDoc(dest, res, &rows); err != nil {
		return Listing{}, err
	}
	out.Notes = Lines(res.Stderr)
	out.Sessions = make([]Session, 0, len(rows))
	for _, r := range rows {
		ep, err := HostEndpoint(dest, r.Endpoint)
		if err == nil && r.Verdict == domain.VerdictLive.String() {
			err = CheckLive(r)
		}
		if err != nil {
			out.Notes = append(out.Notes, SkipNote("session", r.SessionID, err))
			continue
		}
		r.Host, r.Endpoint = dest.String(), ep
		out.Sessions = append(out.Sessions, r)
	}
	return out, nil
}

// MaxSessionIDBytes bounds a session id read from another machine (a
// harness's is a UUID or about as long).
const MaxSessionIDBytes = 200

// CheckLive refuses a live session's entry that `list --json` never
// prints (docs/OUTPUT.md): a pid that is not above 0, a status that is
// not idle, busy, waiting or unknown, a startedAt that is neither "" nor
// RFC 3339, a session id over MaxSessionIDBytes or holding a character
// that is not printable. Its errors quote what they refuse once
// (strconv.Quote: escaped, printable).
func CheckLive(s Session) error {
	switch {
	case s.PID <= 0:
		return fmt.Errorf("its pid is %d, not a process's", s.PID)
	case domain.ParseStatus(s.Status).String() != s.Status:
		return fmt.Errorf("its status is %q, not idle, busy, waiting or unknown", Clip(s.Status, 40))
	case len(s.SessionID) > MaxSessionIDBytes:
		return fmt.Errorf("its session id is %d bytes, over %d", len(s.SessionID), MaxSessionIDBytes)
	case Safe(s.SessionID) != s.SessionID:
		return fmt.Errorf("its session id %q holds a character that is not printable", s.SessionID)
	case s.StartedAt != "":
		if _, err := time.Parse(time.RFC3339Nano, s.StartedAt); err != nil {
			return fmt.Errorf("its startedAt %q is not RFC 3339", Clip(s.StartedAt, 60))
		}
	}
	return nil
}

// ReadShow reads a far side's `show --json -- ADDRESS`; its endpoint is
// put in dest's form (one that is not that machine's is a broken far
// side). A document for another session than address names (Agrees, or
// its pid or record file's name, which show also takes) is refused as
// host_unreachable, naming both: show sent nothing, and the far side's
// answer is not one this build's peerctl gives.
func ReadShow(dest domain.Dest, address string, res ports.RemoteResult) (Show, error) {
	var j Show
	if err := ReadDoc(dest, res, &j); err != nil {
		return Show{}, err
	}
	ep, err := HostEndpoint(dest, j.Endpoint)
	if err != nil {
		return Show{}, Broken(dest, err)
	}
	// show also finds a record by its pid or its file's name (app's Show).
	byPlace := address == strconv.Itoa(j.PID) || j.File != "" && address == j.File
	if why := Agrees(address, Named{Harness: j.Harness, Endpoint: j.Endpoint, PID: j.PID, SessionID: j.SessionID, Name: j.Name}); why != nil && !byPlace {
		return Show{}, domain.Refuse(domain.ReasonHostUnreachable, "peerctl on %s showed another session: %v; it is not the answer of this build's peerctl; fix: %s",
			dest, why, Safe(InstallFix(dest)))
	}
	j.Host, j.Endpoint = dest.String(), ep
	return j, nil
}

// ReadEnrich reads a far side's `enrich --json`; an endpoint that is not
// that machine's is a broken far side.
func ReadEnrich(dest domain.Dest, res ports.RemoteResult) (map[string]LiveInfo, error) {
	var got map[string]*LiveInfo
	if err := ReadDoc(dest, res, &got); err != nil {
		return nil, err
	}
	live := map[string]LiveInfo{}
	for id, info := range got {
		if info == nil {
			continue
		}
		ep, err := HostEndpoint(dest, info.Endpoint)
		if err != nil {
			return nil, Broken(dest, err)
		}
		info.Endpoint = ep
		live[id] = *info
	}
	return live, nil
}

// ReadDoctorRun reads a far side's `doctor --json`: its document
// (ReadDoctor), whose ok must agree with its exit code (0, or 1 for a
// problem), and its stderr lines as Notes but for its problem lines: the
// document holds every problem. Any other exit is the far side's refusal
// (Failure) when it printed one, else host_unreachable naming the exit and
// its last words; output that is no such document is a broken far side
// (host_unreachable).
func ReadDoctorRun(dest domain.Dest, res ports.RemoteResult) (Doctor, error) {
	if res.Code != ExitOK && res.Code != ExitError {
		// Its refusal, when it printed one; else it crashed or was killed.
		var refused RefusalDoc
		if out := bytes.TrimSpace(res.Stdout); jsonexact.Exact(out, &refused) == nil && jsonexact.Complete(out, refused) == nil {
			return Doctor{}, Failure(dest, res)
		}
		return Doctor{}, domain.Refuse(domain.ReasonHostUnreachable, "peerctl doctor on %s ended with exit %d and no report (%s)", dest, res.Code, LastWords(res.Stderr))
	}
	d, err := ReadDoctor(bytes.TrimSpace(res.Stdout))
	if err == nil && d.OK != (res.Code == ExitOK) {
		err = fmt.Errorf("its report says ok %t, and it exited %d", d.OK, res.Code)
	}
	if err != nil {
		return Doctor{}, Broken(dest, err)
	}
	for _, l := range StderrLines(res.Stderr) {
		if !strings.HasPrefix(l, "peerctl: problem: ") { // the document holds every problem
			d.Notes = append(d.Notes, l)
		}
	}
	return d, nil
}

// Look is the command that shows address on dest, quoted for a shell:
// what a send whose outcome is unknown tells its reader to run.
func Look(dest domain.Dest, address string) string {
	return Safe(domain.ShellCommand("peerctl", "show", "--host", dest.String(), address))
}

// ReadSent reads a far side's `send --json` for q, which had the text: a
// receipt (also one with ok false beside a failing exit code: no_reply,
// wait_timeout), given its host, with the far side's stderr lines as its
// Notes and its exit code; or the refusal it printed as the error. A
// receipt must be whole (jsonexact.Complete), agree with the call
// (CheckReceipt) and be for the session the call named (Agrees, else a
// refusal naming both); a refusal whose reason this build does not know,
// a crash (a panic, a kill), any output but a valid receipt came after the
// text was handed over, so they are outcome_unknown, naming the host and
// how to look (Look). A dry run sent nothing: its failures are the far
// side's own, and its broken answers host_unreachable.
func ReadSent(dest domain.Dest, res ports.RemoteResult, q SendQuery) (Sent, error) {
	look := Look(dest, q.Address)
	stdout := bytes.TrimSpace(res.Stdout)
	var refused RefusalDoc
	if res.Code != 0 && jsonexact.Exact(stdout, &refused) == nil && jsonexact.Complete(stdout, refused) == nil {
		err := Failure(dest, res)
		if r, ok := domain.AsRefusal(err); ok && r.Reason == domain.ReasonHostUnreachable && !q.DryRun {
			return Sent{}, &domain.Refusal{Reason: domain.ReasonOutcomeUnknown,
				Detail: fmt.Sprintf("peerctl on %s refused after it had the text, in words this build cannot read (%s); it may have delivered it: look (%s) before sending it again",
					dest, r.Detail, look)}
		}
		return Sent{}, err
	}
	var out Receipt
	var ep string
	err := errors.New("nothing on its stdout")
	if len(stdout) > 0 {
		err = jsonexact.Exact(stdout, &out)
	}
	if err == nil {
		err = jsonexact.Complete(stdout, out)
	}
	if err == nil {
		err = CheckReceipt(out, res.Code, q)
	}
	if err == nil {
		ep, err = HostEndpoint(dest, out.Endpoint)
	}
	if err == nil && !Held(out) {
		named := Named{Harness: out.Harness, Endpoint: out.Endpoint, PID: out.PID, SessionID: out.SessionID, Name: out.Name}
		if why := Agrees(q.Address, named); why != nil {
			if q.DryRun {
				return Sent{}, domain.Refuse(domain.ReasonHostUnreachable, "peerctl on %s gave a dry run's receipt for another session: %v; it is not the answer of this build's peerctl; fix: %s",
					dest, why, Safe(InstallFix(dest)))
			}
			return Sent{}, domain.Refuse(domain.ReasonOutcomeUnknown, "peerctl on %s gave a receipt for another session: %v; it had the text and may have delivered it, to either: look (%s) before sending it again",
				dest, why, look)
		}
	}
	switch {
	case err == nil:
	case res.Code != 0 && q.DryRun:
		return Sent{}, Failure(dest, res)
	case res.Code != 0:
		// It had the text: a crash (a panic is exit 2), a kill or any other
		// failing exit without a receipt may have come after the delivery.
		return Sent{}, &domain.Refusal{Reason: domain.ReasonOutcomeUnknown,
			Detail: fmt.Sprintf("peerctl on %s ended with exit %d and no valid receipt (%s; %s); it had the text and may have delivered it: look (%s) before sending it again",
				dest, res.Code, Safe(Clip(err.Error(), 200)), LastWords(res.Stderr), look)}
	case q.DryRun:
		return Sent{}, Broken(dest, err)
	default:
		r, _ := domain.AsRefusal(Broken(dest, err))
		return Sent{}, &domain.Refusal{Reason: domain.ReasonOutcomeUnknown,
			Detail: fmt.Sprintf("%s; it had the text and may have delivered it: look (%s) before sending it again", r.Detail, look)}
	}
	out.Host, out.Endpoint = dest.String(), ep
	return Sent{Receipt: out, Notes: StderrLines(res.Stderr), Code: KnownExit(res.Code)}, nil
}

// CheckReceipt is why out, which the far side ended with exit code, is no
// receipt of q: its ok disagrees with the exit; an ok false that is not
// no_reply's or wait_timeout's with that very exit code; a plan for a send
// that was not a dry run (or none for one); a reply no one awaited; no
// session, outcome or transport.
func CheckReceipt(out Receipt, code int, q SendQuery) error {
	switch r := out.Refusal; {
	case out.OK != (code == 0):
		return fmt.Errorf("a receipt with ok %t, and exit code %d", out.OK, code)
	case !out.OK && (r == nil || r.ExitCode != code ||
		(r.Reason != domain.ReasonNoReply.String() && r.Reason != domain.ReasonWaitTimeout.String())):
		return fmt.Errorf("a receipt with ok false that is not no_reply's or wait_timeout's with exit code %d", code)
	case out.OK && r != nil:
		return errors.New("a receipt with ok true and a refusal")
	case (out.Plan != nil) != q.DryRun:
		return fmt.Errorf("a receipt whose plan (%t) is not the dry run's (%t)", out.Plan != nil, q.DryRun)
	case out.Reply != nil && q.AwaitReply <= 0:
		return errors.New("a receipt with a reply no one awaited")
	case Held(out):
		switch o := out.Outbox; {
		case o == nil || o.ID <= 0 || o.State != domain.OutboxAwaitingApproval.String():
			return errors.New("a held message's receipt without its message awaiting approval")
		case o.Address != q.Address:
			return fmt.Errorf("a held message for %s, not for the one asked for, %s", Safe(Clip(strconv.Quote(o.Address), 300)), Safe(Clip(q.Address, 300)))
		case out.Reply != nil || out.Wait != nil:
			return errors.New("a held message's receipt with a reply or a wait")
		}
	case out.SessionID == "" || out.Outcome == "" || out.Transport == "":
		return errors.New("a receipt without its session, outcome or transport")
	}
	return nil
}

// Held reports whether out is the receipt of a message the trust policy
// held there (outcome awaiting_approval): kept in that machine's outbox,
// its message's id in out.Outbox, handed to no session (it names none).
func Held(out Receipt) bool { return out.Outcome == domain.OutboxAwaitingApproval.String() }

// LastWords is the last line a far side printed on stderr (a Go panic's
// own line, when it panicked), escaped and clipped, or "it said nothing".
func LastWords(stderr []byte) string {
	lines := strings.Split(strings.TrimSpace(string(stderr)), "\n")
	for _, l := range lines {
		if strings.HasPrefix(l, "panic: ") {
			return "its last words: " + Safe(Clip(strings.TrimSpace(l), 300))
		}
	}
	if last := strings.TrimSpace(lines[len(lines)-1]); last != "" {
		return "its last words: " + Safe(Clip(last, 300))
	}
	return "it said nothing"
}
