// Package ports declares the outbound interfaces the app layer needs. The
// adapters under adapters/ implement them; tests use the gomock doubles in
// ports/portsmock (regenerate with `go generate ./ports`).
package ports

//go:generate go run go.uber.org/mock/mockgen@v0.6.0 -destination portsmock/portsmock.go -package portsmock . Registry,Liveness,Transport

import (
	"context"
	"time"

	"github.com/peerctl/peerctl/domain"
)

// Snapshot is one read of the registry folder.
type Snapshot struct {
	// Dir is the folder read, <config dir>/sessions.
	Dir string
	// Missing is true when the folder does not exist (an empty registry).
	Missing bool
	// Also names the other harnesses' registry folders read into this
	// snapshot (Qwen Code's), for watching; empty for one registry.
	Also []string
	// Records holds every candidate file, in file-name order. Files that
	// could not be used carry Record.Problem.
	Records []domain.Record
	// Absent lists every registry folder read that does not exist (the
	// primary's too, beside Missing), by harness.
	Absent []Unread
	// Unread lists the harnesses whose registry could not be read at all
	// (several registries read as one: one harness's trouble is not
	// another's); their records are absent from Records. A harness may
	// list itself here beside the records it could read (Codex: a daemon
	// that does not answer, beside the --no-daemon TUIs' threads).
	Unread []Unread
	// Warnings are what a person should know about the read that left
	// nothing out (Codex: its daemon is not running), each naming its
	// harness; printed, never an error.
	Warnings []string
	// Skipped counts the candidate files a read left unread on its own,
	// as not live (PIDRegistry.ReadListed): at least 1 when there were
	// any, not their number. A caller that skips files (keep) counts its
	// own.
	Skipped int
}

// Unread is one harness's registry that could not be read (or, in
// Snapshot.Absent, whose folder does not exist: Err nil).
type Unread struct {
	Harness domain.Harness
	// Dir is the folder ("" when it could not even be located).
	Dir string
	Err error
}

// HarnessRegistry is a Registry that says which harness's registry it
// reads, so that its failure can be reported as that harness's.
type HarnessRegistry interface {
	Registry
	Harness() domain.Harness
}

// Unlocated is the registry of a harness whose home could not be located
// (no flag, no variable, and no $HOME): every read is Err, reported as Of's
// unread registry, so the other harnesses work all the same.
type Unlocated struct {
	Of  domain.Harness
	Err error
}

var _ HarnessRegistry = Unlocated{}

// Read returns u.Err.
func (u Unlocated) Read(context.Context) (Snapshot, error) { return Snapshot{}, u.Err }

// Harness returns u.Of.
func (u Unlocated) Harness() domain.Harness { return u.Of }

// Registry reads a harness's live-session registry (Claude Code's, Qwen
// Code's, or several read as one). It never writes,
// deletes or opens *.key files. An unreadable folder is an error, never an
// empty snapshot.
type Registry interface {
	Read(ctx context.Context) (Snapshot, error)
}

// RewriteGrace is how long a record caught in the middle of being
// rewritten is waited for: a registry read re-reads a record that does not
// parse until it does, for up to RewriteGrace (the one rule for every
// reader: list, show, send, watch, the dashboard, the service's fleet
// document, applied where the record is read), and watch holds the gone
// of a live session whose record a read misses while its process runs for
// as long. Measured on Claude Code 2.1.332 (docs/CLAUDE-CODE-FACTS.md,
// "How a session rewrites its record"): a running session rewrites its
// record in place, never removing or renaming it, and a read can catch it
// torn for as long as its write and ftruncate lie apart: 0.1-21 ms, under
// strace on a loaded 2-CPU machine. The grace is ten times the longest
// seen. Qwen Code 0.24.4 (docs/QWEN-CODE-FACTS.md, the same heading)
// renames a whole new copy over its record: a read finds it neither torn
// nor missing. Neither removes its record while it runs.
const RewriteGrace = 200 * time.Millisecond

// SelectiveRegistry is a Registry that can skip records unread. keep is
// called once per registry folder, after that folder has been listed
// whole, with the base names of all its candidate files (e.g.
// "4652.json"); it returns the names to read, a subset of names in any
// order (it may reuse names' array). A file it leaves out is neither opened
// nor returned. Callers use it only where a skipped record could not change
// their answer, and fall back to Read.
type SelectiveRegistry interface {
	Registry
	ReadMatching(ctx context.Context, keep func(names []string) []string) (Snapshot, error)
}

// PIDProber is a Liveness that can tell, from a pid alone, that no such
// process exists (on Linux, kill(pid, 0) failing with ESRCH). A record
// whose pid is gone can never be live, whatever its file says.
//
// Gone answers for a batch: gone[i] is pids[i]'s answer, false when it
// cannot tell. A prober may answer a large batch from one listing of the
// processes, made during the call: a process that wrote a record read
// before the call started before it, so a caller that asks about the pids
// of one folder's names after listing that folder whole is answered
// exactly (ask once per folder read, never with an answer from before it).
type PIDProber interface {
	Liveness
	Gone(pids []int) (gone []bool)
}

// PIDLister is a PIDProber that can also name every process at once, for
// a registry whose records can be live only when named after a running
// process (PIDRegistry).
type PIDLister interface {
	PIDProber
	// Processes is about how many processes the machine runs, from one
	// cheap look (0: unknown).
	Processes() int
	// Listed returns the pid of every process, from one listing made
	// during the call; ok is false, and pids nil, when such a listing
	// could leave out a process that Gone would find (a process root of
	// another pid namespace, one that hides other users' processes) or
	// could not be made whole.
	Listed() (pids []int, ok bool)
}

// PIDRegistry is a SelectiveRegistry whose records can be live only when
// their file is named <pid>.json (canonical decimal) after a process that
// runs: Claude Code's sessions folder, whose every other file is stale,
// misnamed or not a record.
type PIDRegistry interface {
	SelectiveRegistry
	// ReadListed is ReadMatching for a caller that uses the live records
	// only. When the folder is large against the machine's processes
	// (live.Processes), it lists the processes (live.Listed) instead of
	// the folder and reads only the files <pid>.json of listed pids:
	// one lookup per process instead of the folder's every name. A
	// process that starts after the listing is not read, as if the read
	// had come first. Otherwise, or when live cannot list every process,
	// it is ReadMatching(ctx, keep). Snapshot.Skipped says whether files
	// were left unread without keep.
	ReadListed(ctx context.Context, live PIDLister, keep func(names []string) []string) (Snapshot, error)
}

// Liveness checks one record's process against the operating system.
type Liveness interface {
	Check(rec domain.Record) domain.Liveness
}

// Transport delivers one message to one resolved, verified session.
type Transport interface {
	// Name is the transport's stable name, e.g. "courier" or "socket".
	Name() string
	// Deliver hands msg to target. Failures are *domain.Refusal values with
	// ReasonDeliveryFailed (or ReasonHarnessUnsupported / ReasonNotAddressable
	// when the transport cannot serve this target at all). It honours ctx's
	// deadline and cancellation and leaves no process or goroutine behind.
	Deliver(ctx context.Context, target domain.Session, msg domain.Message) (domain.Receipt, error)
	// Plan describes what Deliver would do, without doing it.
	Plan(target domain.Session, msg domain.Message) (domain.Plan, error)
}

// DurableTransport is a Transport that keeps a message for a session no
// process has open now and hands it over when the session is opened again
// (Codex's queue): Send resolves an address it is chosen for among the
// sessions the harness knows (KnownRegistry) when no live session answers.
type DurableTransport interface {
	Transport
	Durable()
}

// KnownRegistry is a Registry that can also list the sessions its harness
// knows whether or not a process has them open (every Codex thread), for
// a DurableTransport. A record with a Problem is one the harness knows
// but that cannot take a message now (the send is refused with it). It
// never writes the harness's state.
type KnownRegistry interface {
	Registry
	Known(ctx context.Context) ([]domain.Record, error)
}

// Heed listens, after a delivery, for what the other side says about it
// later, until ctx ends; then it ends whatever the delivery left running
// and returns the receipt as it stands: the same one, or one turned by a
// notice (outcome "held"), or a *domain.Refusal (ReasonDeliveryFailed) when
// the other side refused the message. It must be called exactly once.
type Heed func(ctx context.Context) (domain.Receipt, error)

// Starting is a Transport or Couriers that starts a program for each
// send before it can hand the message over (Claude Code's courier, one
// `claude -p`), which can take seconds on a loaded machine; Starts names
// that program for people ("claude -p").
type Starting interface {
	Starts() string
}

// Heeding is a Transport whose receipt can still be turned after the
// message was accepted: the courier keeps Claude Code running to hear a
// "[Cross-session delivery notice]" that the target held or refused it.
type Heeding interface {
	Transport
	// DeliverHeeding is Deliver returning as soon as the other side
	// accepted the text, with a Heed to call (the caller decides how long
	// to listen, e.g. while it confirms from the transcript). On error
	// nothing is left running and the Heed is nil.
	DeliverHeeding(ctx context.Context, target domain.Session, msg domain.Message) (domain.Receipt, Heed, error)
}

// Processes reads the process tree.
type Processes interface {
	// Parent returns pid's parent pid (0 for the root of our pid namespace).
	Parent(pid int) (int, error)
}
