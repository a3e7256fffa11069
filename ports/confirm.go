package ports

//go:generate go run go.uber.org/mock/mockgen@v0.6.0 -destination portsmock/confirm.go -package portsmock . Transcripts,FolderWatcher,ExitWatcher

import (
	"context"
	"time"

	"github.com/peerctl/peerctl/domain"
)

// Transcripts reads sessions' transcripts to confirm deliveries.
type Transcripts interface {
	// WaitEnqueued blocks until the transcript at path (a JSON-lines file,
	// see domain.Enqueued for the line format) holds a queue "enqueue"
	// line whose content equals text byte for byte and whose timestamp is
	// not before since (domain.EnqueuedAfter), and returns that line. The
	// file, and its folder, may not exist yet when it is called. It reads
	// the file from its end and never loads it whole. When ctx ends first
	// it returns an error wrapping ctx.Err(); it leaves no goroutine behind.
	WaitEnqueued(ctx context.Context, path, text string, since time.Time) (domain.Enqueued, error)
	// TakenUp looks once, without blocking, through the complete lines of
	// the transcript at path from byte offset from (the enqueue line's
	// Offset the first time, then the returned next) for the line that
	// shows the session took the message up: a "user" line whose origin
	// kind is "peer", whose message content carries text, stamped not
	// before since (see domain.Enqueued for the format). at is that
	// line's timestamp, or the zero time when it is not there yet; next is
	// where to look from on the following call. A missing file is not an
	// error (at zero, next = from).
	TakenUp(path, text string, from int64, since time.Time) (at time.Time, next int64, err error)
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
