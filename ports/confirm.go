package ports

import (
	"context"
	"os"
	"time"

	"github.com/peerctl/peerctl/domain"
)

// TranscriptMark is where a transcript stood just before a send began:
// lines at offsets before Size in the same file (os.SameFile) were written
// before the send and never confirm it.
type TranscriptMark struct {
	// Taken is false when no mark was taken: position is unknown and only
	// the timestamp rule applies.
	Taken bool
	// File identifies the file; nil when it did not exist (or could not
	// be examined), so whatever file appears later is read whole.
	File os.FileInfo
	// Size is the file's size in bytes when the mark was taken.
	Size int64
}

// EnqueueQuery is what WaitEnqueued looks for.
type EnqueueQuery struct {
	// Path is the transcript (a JSON-lines file, see domain.Enqueued).
	Path string
	// Text is the message, matched byte for byte.
	Text string
	// SessionID is the target's session id: a line whose "sessionId" is
	// another id never matches ("" accepts any).
	SessionID string
	// Since is when the send began (domain.EnqueuedAfter).
	Since time.Time
	// Mark is the transcript's position before the transport ran.
	Mark TranscriptMark
}

// Transcripts reads sessions' transcripts to confirm deliveries.
type Transcripts interface {
	// Mark records the transcript's identity and size; call it before the
	// transport runs. It never fails: an absent file gives File nil.
	Mark(path string) TranscriptMark
	// WaitEnqueued blocks until the transcript at q.Path holds a queue
	// "enqueue" line whose content equals q.Text byte for byte, whose
	// sessionId is q.SessionID, whose timestamp is not before q.Since
	// (domain.EnqueuedAfter) nor implausibly far in the future, and which
	// starts at or after q.Mark.Size when the file is the marked one; it
	// returns that line. The file, and its folder, may not exist yet when
	// it is called. It reads the file from its end, a bounded number of
	// bytes, and never loads it whole. When ctx ends first (it is checked
	// between reads) it returns an error wrapping ctx.Err(); it leaves no
	// goroutine behind.
	WaitEnqueued(ctx context.Context, q EnqueueQuery) (domain.Enqueued, error)
	// TakenUp looks once, without blocking, through the complete lines of
	// the transcript at path from byte offset from (the enqueue line's
	// Offset the first time, then the returned next) for the line that
	// shows the session took the message up: a "user" line whose origin
	// kind is "peer", whose message content carries text, stamped not
	// before since (see domain.Enqueued for the format). at is that
	// line's timestamp, or the zero time when it is not there yet; next is
	// where to look from on the following call (one call reads a bounded
	// number of bytes). A missing file is not an error (at zero, next =
	// from). It returns ctx's error (wrapped) when ctx ends during a read.
	TakenUp(ctx context.Context, path, text string, from int64, since time.Time) (at time.Time, next int64, err error)
}

// FolderWatcher notices changes in a folder such as the registry.
type FolderWatcher interface {
	// Watch returns a channel that receives a value whenever dir (which
	// may not exist yet) may have changed: an entry created, written,
	// renamed or removed, or dir itself created. Bursts are coalesced (the
	// channel holds at most one pending value). The channel is closed once
	// ctx ends and every goroutine of the watch has returned. An error
	// means the watch could not start at all.
	Watch(ctx context.Context, dir string) (<-chan struct{}, error)
}

// ExitWatcher notices that a process has ended.
type ExitWatcher interface {
	// Exited returns a channel that is closed when the process pid has
	// ended; procStart is its start time from the record (field 22 of
	// /proc/<pid>/stat, clock ticks since boot, as text; "" when unknown),
	// so a pid already reused counts as ended. The channel is left open
	// when ctx ends first; the watch's resources and goroutines are
	// released once ctx ends.
	Exited(ctx context.Context, pid int, procStart string) <-chan struct{}
}
