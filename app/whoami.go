package app

import (
	"context"
	"fmt"
	"strings"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// MaxAncestry bounds the parent-pid walk of Whoami.
const MaxAncestry = 128

// Via says how Whoami found the calling session; a closed set.
type Via int

// Via values.
const (
	ViaNone Via = iota
	// ViaSocketEnv: the variable a harness sets to the session's socket
	// (ports.SessionEnv.Socket) equals a live record's socket.
	ViaSocketEnv
	// ViaAncestor: a live record's pid is this process or one of its ancestors.
	ViaAncestor
	// ViaEnv: the variable a harness sets to the session's id
	// (ports.SessionEnv) names a live record.
	ViaEnv
)

// String returns "socket-env", "env", "ancestor" or "none".
func (v Via) String() string {
	switch v {
	case ViaSocketEnv:
		return "socket-env"
	case ViaEnv:
		return "env"
	case ViaAncestor:
		return "ancestor"
	default:
		return "none"
	}
}

// Self is the session a process runs inside.
type Self struct {
	Entry domain.Entry
	Via   Via
	// Chain is the pids walked, from the starting pid up to the session's
	// pid (ViaAncestor), or up to the root when nothing matched.
	Chain []int
	// Notes explain what was tried and did not match (e.g. a socket
	// variable naming no live record).
	Notes []string
}

// Whoami finds the live session that process self runs inside, on a fresh
// read: first the live record that a harness's session variable names
// (ports.SessionEnv, read with getenv; each harness's variable, in plug-in
// order), else the live record whose pid is self or the nearest of its
// ancestors (parent pids read with procs, at most MaxAncestry steps). A
// pid that holds several live sessions (one process, many sessions) is
// refused with ReasonIdentityMismatch naming them, never guessed. When
// neither matches it refuses with ReasonNotLive, detail "not inside a
// session: ..." when the walk reached the root, or "stopped after 128
// parents: ..." when MaxAncestry cut it off. A registry read error is
// returned as is.
func (s *Service) Whoami(ctx context.Context, procs ports.Processes, self int, getenv func(string) string) (Self, error) {
	l, _, err := s.readLive(ctx) // only live records can answer
	if err != nil {
		return Self{}, err
	}
	return whoami(l, procs, self, s.sessionEnvs(getenv))
}

// sessionEnv is one harness's session variable as this process has it.
type sessionEnv struct {
	of    domain.Harness
	env   ports.SessionEnv
	value string
}

// sessionEnvs are the harnesses' session variables that getenv has.
func (s *Service) sessionEnvs(getenv func(string) string) []sessionEnv {
	var out []sessionEnv
	for _, h := range s.harnesses {
		se := h.SessionEnv()
		if se.Var == "" || se.Names == nil {
			continue
		}
		if v := getenv(se.Var); v != "" {
			out = append(out, sessionEnv{of: h.Kind(), env: se, value: v})
		}
	}
	return out
}

func whoami(l Listing, procs ports.Processes, self int, envs []sessionEnv) (Self, error) {
	var out Self
	live := l.Live()
	for _, se := range envs {
		var hits []domain.Entry
		for _, e := range live {
			if e.Record.Harness == se.of && se.env.Names(e.Record, se.value) {
				hits = append(hits, e)
			}
		}
		switch len(hits) {
		case 1:
			out.Entry, out.Via = hits[0], ViaEnv
			if se.env.Socket {
				out.Via = ViaSocketEnv
			}
			return out, nil
		case 0:
			note := fmt.Sprintf("%s=%s matches no live record", se.env.Var, se.value)
			for _, u := range l.UnreadIn(se.of) {
				// A sandbox that hides the harness's state from its shells
				// (Codex's, measured on 0.171.0) lands here.
				note += fmt.Sprintf(" (the %s registry could not be read from here: %v)", se.of, u.Err)
			}
			out.Notes = append(out.Notes, note)
		default:
			out.Notes = append(out.Notes, fmt.Sprintf("%s=%s matches %d live records; walking parent pids instead", se.env.Var, se.value, len(hits)))
		}
	}
	byPID := map[int][]domain.Entry{}
	for _, e := range live {
		byPID[e.Record.PID] = append(byPID[e.Record.PID], e)
	}
	pid := self
	cutOff := true // the walk ended at MaxAncestry, not at the root
	for range MaxAncestry {
		out.Chain = append(out.Chain, pid)
		switch es := byPID[pid]; len(es) {
		case 0:
		case 1:
			out.Entry, out.Via = es[0], ViaAncestor
			return out, nil
		default:
			// One process holds several sessions (an opencode server, a
			// Codex daemon): which one this process runs inside is not
			// known, and a guess could send as the wrong one.
			ids := make([]string, len(es))
			for i, e := range es {
				ids[i] = e.Record.SessionID
			}
			detail := fmt.Sprintf("pid %d, a parent of this process (pids %s), holds %d live sessions (%s): which one this process runs inside cannot be told",
				pid, joinPIDs(out.Chain), len(es), strings.Join(ids, ", "))
			if len(out.Notes) > 0 {
				detail += "; " + strings.Join(out.Notes, "; ")
			}
			return out, domain.Refuse(domain.ReasonIdentityMismatch, "%s", detail)
		}
		next, err := procs.Parent(pid)
		if err != nil {
			out.Notes = append(out.Notes, err.Error())
			cutOff = false
			break
		}
		if next <= 0 || next == pid {
			cutOff = false
			break
		}
		pid = next
	}
	detail := fmt.Sprintf("not inside a session: no live record in %s for this process or its parents (pids %s)", l.Dir, joinPIDs(out.Chain))
	if cutOff {
		detail = fmt.Sprintf("stopped after %d parents: no live record in %s for this process or the parents walked (pids %s); a session further up is not looked for", MaxAncestry, l.Dir, joinPIDs(out.Chain))
	}
	if len(out.Notes) > 0 {
		detail += "; " + strings.Join(out.Notes, "; ")
	}
	return out, domain.Refuse(domain.ReasonNotLive, "%s", detail)
}

func joinPIDs(pids []int) string {
	parts := make([]string, len(pids))
	for i, p := range pids {
		parts[i] = fmt.Sprint(p)
	}
	return strings.Join(parts, ", ")
}
