// Package waitline tells a person that a command waits: one line saying
// what for, until when and what Ctrl-C does, then, on a terminal, the time
// waited so far on a line of its own, rewritten in place and cleared when
// the wait ends, so that nothing of it stays in the scrollback. A stage
// that is short most of the time (a courier starting) has the live line
// alone (Live).
package waitline

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// Every is how often a live line is rewritten.
const Every = time.Second

// clear returns the cursor to the start of the line and erases it (CR,
// then ECMA-48 EL: erase to the end of the line).
const clear = "\r\x1b[K"

// Line is a wait being told on w (a program's stderr). Its methods may be
// called from any goroutine; a nil *Line does nothing.
type Line struct {
	w     io.Writer
	live  bool
	start time.Time
	total time.Duration
	what  string // Live's: what goes on ("" for Start's)

	mu      sync.Mutex
	shown   bool // the live line is on the screen
	stopped bool
	stop    chan struct{}
	done    chan struct{}
}

// Start prints head (one line, its newline added) on w and, when live (w
// is a terminal that takes ECMA-48 controls), keeps a line below it
// saying how long the wait has run of total, rewritten every Every until
// Stop.
func Start(w io.Writer, live bool, head string, total time.Duration) *Line {
	l := &Line{w: w, live: live, start: time.Now(), total: total, stop: make(chan struct{}), done: make(chan struct{})}
	fmt.Fprintln(w, head)
	if !live {
		close(l.done)
		return l
	}
	go l.tick()
	return l
}

// Live keeps, on a terminal (w takes ECMA-48 controls), a line saying what
// goes on and for how long ("peerctl: starting the courier: 3s"), drawn
// from the first Every on, rewritten every Every and cleared by Stop: no
// head line, so a stage that ends within Every leaves nothing on w. Its
// caller starts it on a terminal only.
func Live(w io.Writer, what string) *Line {
	l := &Line{w: w, live: true, start: time.Now(), what: what, stop: make(chan struct{}), done: make(chan struct{})}
	go l.tick()
	return l
}

func (l *Line) tick() {
	defer close(l.done)
	t := time.NewTicker(Every)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			l.mu.Lock()
			if !l.stopped {
				l.draw()
			}
			l.mu.Unlock()
		}
	}
}

// draw writes the live line in place (l.mu held).
func (l *Line) draw() {
	waited := time.Since(l.start).Round(time.Second)
	if l.what != "" {
		fmt.Fprintf(l.w, "%speerctl: %s: %s", clear, l.what, waited)
	} else {
		fmt.Fprintf(l.w, "%speerctl: waited %s of %s", clear, waited, l.total)
	}
	l.shown = true
}

// Say prints line (its newline added) as a line of its own: the live line
// is cleared first and drawn again below it.
func (l *Line) Say(line string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	shown := l.shown
	if shown {
		_, _ = io.WriteString(l.w, clear)
		l.shown = false
	}
	fmt.Fprintln(l.w, line)
	if shown && !l.stopped {
		l.draw()
	}
}

// Stop ends the live line and clears it from the screen; later calls do
// nothing.
func (l *Line) Stop() {
	if l == nil {
		return
	}
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		return
	}
	l.stopped = true
	if l.shown {
		_, _ = io.WriteString(l.w, clear)
		l.shown = false
	}
	l.mu.Unlock()
	if l.live {
		close(l.stop)
	}
	<-l.done
}
