// Package transcript confirms deliveries from a session's own transcript,
// <config dir>/projects/<slug>/<sessionId>.jsonl (Claude Code 2.1.328; see
// domain.TranscriptPath and domain.Enqueued for the path and the line).
//
// A transcript can be tens of megabytes. It is never loaded whole. When
// the file is the one marked before the send (ports.TranscriptMark), only
// the bytes appended after the mark are read: a line already there was
// written before the send, whatever its timestamp says. Otherwise (the file
// appeared or was replaced after the mark) the first look reads it
// backwards from its end in fixed chunks and stops at the first line
// stamped well before the send began (lines are appended in time order) or
// after MaxBackBytes, whichever comes first; after that only appended bytes
// are read. Every read first checks the context, so a wait ends by its
// deadline however large the file. Lines longer than
// MaxLineBytes cannot be an enqueue line of a message peerctl accepts and
// are skipped without being held in memory, so memory stays bounded by
// ChunkBytes + MaxLineBytes whatever the file's size.
//
// Appends are noticed through a ports.FolderWatcher on the transcript's
// folder (fsnotify), with a polling fallback; the file and its folder may
// appear only after the message arrives (Claude Code creates them on the
// first message). It only reads: it never writes to a transcript.
package transcript

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/jsonexact"
)

const (
	// ChunkBytes is how much one read takes (64 KiB).
	ChunkBytes = 64 << 10
	// MaxLineBytes is the longest line examined (1 MiB): a 64 KiB message
	// JSON-escaped as \uXXXX is at most 384 KiB plus the line's other fields.
	MaxLineBytes = 1 << 20
	// DefaultPoll is the polling fallback's interval.
	DefaultPoll = 250 * time.Millisecond
	// Slack is how far before the send began a line's timestamp must be
	// for the backward scan to stop there. Claude Code writes some lines a
	// moment after the time they carry, so "before the send began" alone
	// would stop too early.
	Slack = time.Minute
	// MaxBackBytes bounds the backward scan of a file first seen (64 MiB):
	// the enqueue line of a send is near the end. It also bounds the bytes
	// one TakenUp call reads (the next call goes on from there).
	MaxBackBytes = 64 << 20
	// MaxFuture is how far past now a line's timestamp may be and still
	// count: a line stamped later (a clock stepped back, a forged year
	// 2099) is ignored, and the wait's error says so.
	MaxFuture = 5 * time.Minute
)

// Reader confirms deliveries. Build it with New.
type Reader struct {
	watch ports.FolderWatcher
	poll  time.Duration
	chunk int
	back  int64 // MaxBackBytes unless set by WithBackLimit
	now   func() time.Time
	// onRead, when set, is told how many bytes each read returned (tests
	// use it to prove the backward scan stays at the end of the file).
	onRead func(n int)
	log    *slog.Logger
}

var _ ports.Transcripts = (*Reader)(nil)

// Option adjusts a Reader.
type Option func(*Reader)

// WithPoll sets the polling fallback's interval.
func WithPoll(d time.Duration) Option { return func(r *Reader) { r.poll = d } }

// WithChunk sets the read size (tests).
func WithChunk(n int) Option { return func(r *Reader) { r.chunk = n } }

// WithBackLimit sets the backward scan's byte bound (tests).
func WithBackLimit(n int64) Option { return func(r *Reader) { r.back = n } }

// WithLog logs each confirmation read (path, size, how far it was read,
// whether the line was found) at debug level.
func WithLog(l *slog.Logger) Option { return func(r *Reader) { r.log = l } }

// WithReadHook calls f with the size of every read (tests).
func WithReadHook(f func(n int)) Option { return func(r *Reader) { r.onRead = f } }

// New returns a Reader; watch (may be nil: polling only) tells it when the
// transcript's folder changes.
func New(watch ports.FolderWatcher, opts ...Option) *Reader {
	r := &Reader{watch: watch, poll: DefaultPoll, chunk: ChunkBytes, back: MaxBackBytes, now: time.Now, log: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Mark implements ports.Transcripts: it stats path (never following a
// planted FIFO's open) and records its identity and size.
func (r *Reader) Mark(path string) ports.TranscriptMark {
	m := ports.TranscriptMark{Taken: true}
	if path == "" {
		return m
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
		m.File, m.Size = fi, fi.Size()
	}
	return m
}

// notConfirmed is WaitEnqueued's error when ctx ends first: it wraps ctx's
// error and may carry a note (lines ignored for a future timestamp).
type notConfirmed struct {
	path, note string
	err        error
}

func (e *notConfirmed) Error() string {
	if e.note != "" {
		return fmt.Sprintf("wait for enqueue in %s (%s): %v", e.path, e.note, e.err)
	}
	return fmt.Sprintf("wait for enqueue in %s: %v", e.path, e.err)
}

func (e *notConfirmed) Unwrap() error { return e.err }

// ConfirmNote says what the wait saw but did not accept ("" when nothing).
func (e *notConfirmed) ConfirmNote() string { return e.note }

// WaitEnqueued implements ports.Transcripts. Errors: ctx's error (wrapped,
// with a ConfirmNote() string method giving what was ignored) when it ends
// first, also in the middle of a read; a read error other than "does not
// exist" (the file and folder may appear later) ends the wait at once.
func (r *Reader) WaitEnqueued(ctx context.Context, q ports.EnqueueQuery) (domain.Enqueued, error) {
	path := q.Path
	if path == "" {
		return domain.Enqueued{}, errors.New("wait for enqueue: no transcript path")
	}
	ctx, cancel := context.WithCancel(ctx)
	var wake <-chan struct{}
	if r.watch != nil {
		if ch, err := r.watch.Watch(ctx, filepath.Dir(path)); err == nil {
			wake = ch
		}
	}
	defer func() {
		cancel()
		if wake != nil {
			for range wake { // closed once the watch's goroutines have returned
			}
		}
	}()
	tick := time.NewTicker(r.poll)
	defer tick.Stop()
	st := &follow{path: path, text: q.Text, since: q.Since, sessionID: q.SessionID, mark: q.Mark}
	for {
		hit, err := r.check(ctx, st)
		r.log.Debug("confirmation read", "transcript", path, "readTo", st.offset, "found", hit != nil, "err", err)
		if err != nil {
			if ctx.Err() != nil {
				return domain.Enqueued{}, &notConfirmed{path: path, note: st.note, err: ctx.Err()}
			}
			return domain.Enqueued{}, err
		}
		if hit != nil {
			return *hit, nil
		}
		select {
		case <-ctx.Done():
			return domain.Enqueued{}, &notConfirmed{path: path, note: st.note, err: ctx.Err()}
		case <-wake:
		case <-tick.C:
		}
	}
}

// follow is the state of one wait: which file was read up to where.
type follow struct {
	path      string
	text      string
	since     time.Time
	sessionID string
	mark      ports.TranscriptMark
	note      string // what was seen but not accepted

	file   os.FileInfo // the file last read (to notice a replacement)
	offset int64       // bytes before offset have been examined
	skip   bool        // inside an over-long line: discard up to its newline
}

// accept reports whether an examined line confirms the send, noting an
// enqueue line refused for a timestamp too far in the future.
func (r *Reader) accept(st *follow, m match) bool {
	if !m.hit || !domain.EnqueuedAfter(m.at, st.since) {
		return false
	}
	if st.sessionID != "" && m.sessionID != "" && m.sessionID != st.sessionID {
		return false
	}
	if limit := r.now().Add(MaxFuture); m.at.After(limit) {
		st.note = fmt.Sprintf("ignored an enqueue line with the text stamped %s, more than %s in the future",
			m.at.UTC().Format(time.RFC3339Nano), MaxFuture)
		return false
	}
	return true
}

// check looks at the file once. On first sight of the marked file it
// starts after the mark; on first sight of another file (or when the file
// was replaced or shrank) it reads backwards from the end; else the bytes
// appended since.
func (r *Reader) check(ctx context.Context, st *follow) (*domain.Enqueued, error) {
	// O_NONBLOCK: a FIFO planted at the path must not block the open (the
	// check below then refuses it); regular files ignore the flag.
	f, err := os.OpenFile(st.path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("read transcript %s: %w", st.path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read transcript %s: %w", st.path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("read transcript %s: not a regular file (%s)", st.path, fi.Mode().Type())
	}
	size := fi.Size()
	if st.file == nil && st.mark.File != nil && os.SameFile(st.mark.File, fi) && size >= st.mark.Size {
		// The file marked before the send: what it held then does not count.
		st.file, st.offset, st.skip = fi, st.mark.Size, false
		if st.offset > 0 {
			// Mid-line at the mark: the rest of that line is not ours.
			var b [1]byte
			if err := r.readAt(ctx, f, b[:], st.offset-1); err != nil {
				return nil, fmt.Errorf("read transcript %s: %w", st.path, err)
			}
			st.skip = b[0] != '\n'
		}
	}
	if st.file == nil || !os.SameFile(st.file, fi) || size < st.offset {
		st.file, st.offset, st.skip = fi, 0, false
		end, tooLong, err := r.lastNewline(ctx, f, size)
		if err != nil {
			return nil, fmt.Errorf("read transcript %s: %w", st.path, err)
		}
		var hit *domain.Enqueued
		err = r.scanBack(ctx, f, end, tooLong, func(line []byte, off int64) bool {
			m := examine(line, st.text)
			switch {
			case r.accept(st, m):
				hit = &domain.Enqueued{Path: st.path, Offset: off, At: m.at, SessionID: m.sessionID}
				return true
			case !m.at.IsZero() && m.at.Before(st.since.Add(-Slack)):
				return true
			}
			return false
		})
		if err != nil {
			return nil, fmt.Errorf("read transcript %s: %w", st.path, err)
		}
		if hit != nil {
			return hit, nil
		}
		st.offset = end
		if tooLong {
			// The last line is already over MaxLineBytes: skip to its end.
			st.offset, st.skip = size, true
		}
		return nil, nil
	}
	if size <= st.offset {
		return nil, nil
	}
	hit, err := r.scanForward(ctx, f, st, size)
	if err != nil {
		return nil, fmt.Errorf("read transcript %s: %w", st.path, err)
	}
	return hit, nil
}

// readAt reads len(b) bytes at off, after checking ctx: every read loop
// goes through it, so none outlives its deadline by more than one chunk.
func (r *Reader) readAt(ctx context.Context, f io.ReaderAt, b []byte, off int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	n, err := f.ReadAt(b, off)
	if r.onRead != nil {
		r.onRead(n)
	}
	if err == io.EOF && n == len(b) {
		err = nil
	}
	return err
}

// lastNewline returns the offset just after the last '\n' before size (0
// if none): bytes after it are a line still being written. When that
// partial line is already longer than MaxLineBytes it stops looking and
// returns the offset where it stopped, with tooLong set.
func (r *Reader) lastNewline(ctx context.Context, f io.ReaderAt, size int64) (end int64, tooLong bool, err error) {
	buf := make([]byte, min(int64(r.chunk), size))
	for pos := size; pos > 0; {
		n := min(int64(len(buf)), pos)
		pos -= n
		if err := r.readAt(ctx, f, buf[:n], pos); err != nil {
			return 0, false, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return pos + int64(i) + 1, false, nil
		}
		if size-pos > MaxLineBytes {
			return pos, true, nil
		}
	}
	return 0, false, nil
}

// scanBack calls fn for every complete line before end, last line first,
// with its offset, until fn returns true. It holds one chunk and at most
// one line of MaxLineBytes; longer lines are skipped. With overflow set,
// the bytes just before end belong to a line already too long. It reads
// at most r.back bytes before end.
func (r *Reader) scanBack(ctx context.Context, f io.ReaderAt, end int64, overflow bool, fn func(line []byte, off int64) bool) error {
	buf := make([]byte, min(int64(r.chunk), max(end, 1)))
	var carry []byte // the end of a line whose start is in an earlier chunk, right-aligned
	carryLen := 0
	emit := func(seg []byte, off int64) bool {
		defer func() { carryLen, overflow = 0, false }()
		if overflow || len(seg)+carryLen > MaxLineBytes {
			return false
		}
		line := seg
		if carryLen > 0 {
			start := len(carry) - carryLen - len(seg)
			copy(carry[start:], seg)
			line = carry[start:]
		}
		if len(line) == 0 {
			return false
		}
		return fn(line, off)
	}
	for pos := end; pos > 0; {
		if end-pos >= r.back {
			return nil // bounded: the line of interest is near the end
		}
		n := min(int64(len(buf)), pos, r.back-(end-pos))
		pos -= n
		if err := r.readAt(ctx, f, buf[:n], pos); err != nil {
			return err
		}
		b := buf[:n]
		for {
			i := bytes.LastIndexByte(b, '\n')
			if i < 0 {
				if !overflow {
					if carryLen+len(b) > MaxLineBytes {
						overflow, carryLen = true, 0
					} else {
						if carry == nil {
							carry = make([]byte, MaxLineBytes)
						}
						copy(carry[len(carry)-carryLen-len(b):], b)
						carryLen += len(b)
					}
				}
				break
			}
			if emit(b[i+1:], pos+int64(i)+1) {
				return nil
			}
			b = b[:i]
		}
	}
	emit(nil, 0)
	return nil
}

// scanForward examines the complete lines in [st.offset, size) and moves
// st.offset past the last newline. It holds one chunk and at most one line.
func (r *Reader) scanForward(ctx context.Context, f io.ReaderAt, st *follow, size int64) (*domain.Enqueued, error) {
	buf := make([]byte, min(int64(r.chunk), size-st.offset))
	var line []byte // a line started in an earlier chunk
	lineStart := st.offset
	for pos := st.offset; pos < size; {
		n := min(int64(len(buf)), size-pos)
		if err := r.readAt(ctx, f, buf[:n], pos); err != nil {
			return nil, err
		}
		b := buf[:n]
		base := pos
		pos += n
		for len(b) > 0 {
			i := bytes.IndexByte(b, '\n')
			if i < 0 {
				if !st.skip {
					if len(line)+len(b) > MaxLineBytes {
						st.skip, line = true, nil
					} else {
						line = append(line, b...)
					}
				}
				break
			}
			seg := b[:i]
			off := lineStart
			lineStart = base + int64(len(buf[:n])-len(b)) + int64(i) + 1
			st.offset = lineStart
			if st.skip {
				st.skip, line = false, line[:0]
				b = b[i+1:]
				continue
			}
			whole := seg
			if len(line) > 0 {
				if len(line)+len(seg) <= MaxLineBytes {
					whole = append(line, seg...)
				} else {
					whole = nil
				}
			}
			line = line[:0]
			if m := examine(whole, st.text); r.accept(st, m) {
				return &domain.Enqueued{Path: st.path, Offset: off, At: m.at, SessionID: m.sessionID}, nil
			}
			b = b[i+1:]
		}
	}
	if st.skip {
		// The over-long line's bytes so far are done with.
		st.offset = size
	}
	return nil, nil
}

// match is what one line says.
type match struct {
	hit       bool      // an enqueue line with exactly the text
	at        time.Time // the line's timestamp (zero when it has none)
	sessionID string
}

// wireLine holds the transcript fields peerctl reads (Claude Code 2.1.328).
// It is decoded with jsonexact: keys match exactly.
type wireLine struct {
	Type      string          `json:"type"`
	Operation string          `json:"operation"`
	Timestamp string          `json:"timestamp"`
	SessionID string          `json:"sessionId"`
	Content   json.RawMessage `json:"content"`
}

// examine says what a line says. Most lines are skipped without decoding:
// those that cannot hold a "timestamp" key (see mayHold).
func examine(line []byte, text string) match {
	if !mayHold(line, "timestamp") {
		return match{}
	}
	return examineDecoded(line, text)
}

// examineDecoded decodes the line, with exact keys as Claude Code reads
// them. Lines that are not JSON objects say nothing; a line whose other
// fields have the wrong types still gives its timestamp.
func examineDecoded(line []byte, text string) match {
	var w wireLine
	if err := jsonexact.Unmarshal(line, &w); err != nil {
		w = wireLine{Timestamp: w.Timestamp}
	}
	var m match
	if t, err := time.Parse(time.RFC3339Nano, w.Timestamp); err == nil {
		m.at = t
	}
	if m.at.IsZero() || w.Type != "queue-operation" || w.Operation != "enqueue" {
		return m
	}
	var content string
	if json.Unmarshal(w.Content, &content) == nil && domain.CarriesText(content, text) {
		m.hit, m.sessionID = true, w.SessionID
	}
	return m
}

// mayHold reports whether a JSON line can hold word, as a key or a string
// value, once decoded (keys are matched exactly, as Claude Code reads
// them). Only a line with neither the word as written nor any escape (which
// may spell it) is ruled out; the shortcut skips nothing that decoding
// would find (FuzzLineShortcuts holds it to that).
func mayHold(line []byte, word string) bool {
	return bytes.Contains(line, []byte(word)) || bytes.IndexByte(line, '\\') >= 0
}

// TakenUp implements ports.Transcripts. It reads forward from from in
// ChunkBytes pieces, holds at most one line of MaxLineBytes (longer lines
// are skipped), and stops at the first match, the last complete line, or
// after MaxBackBytes (the next call goes on from there).
func (r *Reader) TakenUp(ctx context.Context, path, text string, from int64, since time.Time) (time.Time, int64, error) {
	// O_NONBLOCK, as in check: a FIFO planted at the path is refused, not waited on.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return time.Time{}, from, nil
		}
		return time.Time{}, from, fmt.Errorf("read transcript %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return time.Time{}, from, fmt.Errorf("read transcript %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return time.Time{}, from, fmt.Errorf("read transcript %s: not a regular file (%s)", path, fi.Mode().Type())
	}
	size := fi.Size()
	if from < 0 || from > size {
		// Replaced or truncated under us: look at the whole file again.
		from = 0
	}
	buf := make([]byte, min(int64(r.chunk), max(size-from, 1)))
	var line []byte
	skip := false
	next := from
	for pos := from; pos < size && pos-from < r.back; {
		n := min(int64(len(buf)), size-pos)
		if err := r.readAt(ctx, f, buf[:n], pos); err != nil {
			return time.Time{}, next, fmt.Errorf("read transcript %s: %w", path, err)
		}
		b := buf[:n]
		pos += n
		for len(b) > 0 {
			i := bytes.IndexByte(b, '\n')
			if i < 0 {
				if !skip {
					if len(line)+len(b) > MaxLineBytes {
						skip, line = true, nil
					} else {
						line = append(line, b...)
					}
				}
				break
			}
			seg := b[:i]
			b = b[i+1:]
			next = pos - int64(len(b))
			if skip {
				skip, line = false, line[:0]
				continue
			}
			whole := seg
			if len(line) > 0 {
				if len(line)+len(seg) > MaxLineBytes {
					line = line[:0]
					continue
				}
				whole = append(line, seg...)
			}
			at, ok := takenUpLine(whole, text)
			line = line[:0]
			if ok && domain.EnqueuedAfter(at, since) {
				return at, next, nil
			}
		}
	}
	return time.Time{}, next, nil
}

// peerUserLine holds the fields of the "user" line Claude Code 2.1.328
// writes when a session takes a peer message up (see domain.Enqueued).
type peerUserLine struct {
	Type      string          `json:"type"`
	Timestamp string          `json:"timestamp"`
	Origin    json.RawMessage `json:"origin"`  // {"kind":"peer",…}
	Message   json.RawMessage `json:"message"` // {"content": string or blocks}
}

// takenUpLine reports whether line is a peer "user" line whose message
// content (a string, or text blocks) carries text, and its timestamp.
// Lines that cannot hold the value "peer" are skipped without decoding.
func takenUpLine(line []byte, text string) (time.Time, bool) {
	if !mayHold(line, "peer") {
		return time.Time{}, false
	}
	return takenUpDecoded(line, text)
}

// takenUpDecoded is takenUpLine without the shortcut.
func takenUpDecoded(line []byte, text string) (time.Time, bool) {
	var w peerUserLine
	var origin struct {
		Kind string `json:"kind"`
	}
	var msg struct {
		Content json.RawMessage `json:"content"`
	}
	if jsonexact.Unmarshal(line, &w) != nil || w.Type != "user" ||
		jsonexact.Unmarshal(w.Origin, &origin) != nil || origin.Kind != "peer" ||
		jsonexact.Unmarshal(w.Message, &msg) != nil {
		return time.Time{}, false
	}
	at, err := time.Parse(time.RFC3339Nano, w.Timestamp)
	if err != nil {
		return time.Time{}, false
	}
	var s string
	if json.Unmarshal(msg.Content, &s) == nil {
		return at, carries(s, text)
	}
	var blocks []json.RawMessage
	if json.Unmarshal(msg.Content, &blocks) != nil {
		return time.Time{}, false
	}
	found := false
	for _, raw := range blocks {
		var b struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if jsonexact.Unmarshal(raw, &b) != nil {
			return time.Time{}, false // a malformed block spoils the line
		}
		found = found || (b.Type == "text" && carries(b.Text, text))
	}
	if !found {
		return time.Time{}, false
	}
	return at, true
}

// carries reports whether text stands in content on lines of its own (the
// wrapper puts it between "…sent a message:\n" and "\n\nThis came…"), so
// a short text is not found inside another message's words.
func carries(content, text string) bool {
	return strings.Contains("\n"+content+"\n", "\n"+text+"\n")
}
