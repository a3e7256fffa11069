//go:build unix

package livecc

// Keys sends tmux key names to the session's terminal, e.g. "Enter", "C-u",
// "Escape" (tmux send-keys). It fails the test when tmux fails.
func (s *Session) Keys(keys ...string) {
	s.t.Helper()
	if out, err := s.tmuxCmd(append([]string{"send-keys", "-t", s.pane}, keys...)...); err != nil {
		s.t.Fatalf("livecc: send keys %q to session %d: %v %s", keys, s.PID, err, out)
	}
}

// Type sends text to the session's terminal literally, as if typed (tmux
// send-keys -l); no key names are interpreted and no Enter is added.
func (s *Session) Type(text string) {
	s.t.Helper()
	if out, err := s.tmuxCmd("send-keys", "-l", "-t", s.pane, text); err != nil {
		s.t.Fatalf("livecc: type into session %d: %v %s", s.PID, err, out)
	}
}
