package cli

// readerGone never reports on Windows: its pipes offer no poll(2) to see
// the reading end go without writing. A write to a closed pipe still fails
// (ERROR_NO_DATA), which ends `watch` at its next event.
func readerGone(any) (gone <-chan struct{}, stop func()) {
	return make(chan struct{}), func() {}
}
