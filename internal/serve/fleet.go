package serve

import (
	"bytes"

	"github.com/peerctl/peerctl/ports/wire"
)

// MaxFleetDoc bounds the document of a "fleet" answer (Answer.FleetDoc):
// list --json's document of a fleet listing, which holds at most 64 MiB
// of the nodes' presence (natsbus.MaxFleetBytes), with room for the
// indentation.
const MaxFleetDoc = 128 << 20

// fleet is the answer to "fleet", as written on the connection: every
// node's presence as list --fleet reads it (wire.Listing), from the live
// view the service keeps of the bus (Options.Fleet), when req.Bus names
// the bus the service is on (its servers as given, spaces around the
// commas aside). Otherwise, or while the view has none (the bus away),
// the answer has no Fleet: the client reads the bus itself.
//
// With req.Doc the answer's line carries the listing's notes and Partial
// (Fleet without sessions) and FleetDoc, the length of the document
// written after it: list --json's of the sessions (wire.EncodeJSON,
// indented as list --json prints it). It is made once a generation of
// the view and kept, so a list --fleet costs the service a write.
func (s *Server) fleet(req Request) []byte {
	if s.o.Fleet == nil || SameServers(req.Bus) != SameServers(s.o.Fleet.URLs) {
		return answerLine(Answer{Done: true})
	}
	l, gen, ok := s.o.Fleet.Snapshot()
	switch {
	case !ok:
		return answerLine(Answer{Done: true})
	case !req.Doc: // an older client's request: the listing whole
		return answerLine(Answer{Done: true, Fleet: &l})
	}
	s.fleetMu.Lock()
	defer s.fleetMu.Unlock()
	if s.fleetDoc != nil && s.fleetGen == gen {
		return s.fleetDoc
	}
	sessions := l.Sessions
	if sessions == nil {
		sessions = []wire.Session{} // list --json prints [] for none
	}
	var doc bytes.Buffer
	if err := wire.EncodeJSON(&doc, sessions, "  ", false); err != nil || doc.Len() > MaxFleetDoc {
		return answerLine(Answer{Done: true})
	}
	s.fleetGen, s.fleetDoc = gen, append(answerLine(Answer{Done: true, Fleet: &wire.Listing{Partial: l.Partial, Notes: l.Notes}, FleetDoc: doc.Len()}), doc.Bytes()...)
	return s.fleetDoc
}

// answerLine is a as its line (WriteLine's); an answer that cannot be
// encoded is an error answer.
func answerLine(a Answer) []byte {
	var b bytes.Buffer
	if err := WriteLine(&b, a); err != nil {
		b.Reset()
		_ = WriteLine(&b, Answer{Done: true, Code: wire.ExitError, Error: []byte("encode the answer: " + err.Error())})
	}
	return b.Bytes()
}
