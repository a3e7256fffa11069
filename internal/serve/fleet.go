package serve

// fleet answers "fleet": every node's presence as list --fleet reads it
// (wire.Listing), from the live view the service keeps of the bus
// (Options.Fleet), when req.Bus names the bus the service is on (its
// servers as given, spaces around the commas aside). Otherwise, or while
// the view has none (the bus away), the answer has no Fleet: the client
// reads the bus itself.
func (s *Server) fleet(req Request) Answer {
	if s.o.Fleet == nil || SameServers(req.Bus) != SameServers(s.o.Fleet.URLs) {
		return Answer{Done: true}
	}
	l, ok := s.o.Fleet.Listing()
	if !ok {
		return Answer{Done: true}
	}
	return Answer{Done: true, Fleet: &l}
}
