package cli

// readerGone never reports on Windows: its pipes offer no poll(2) to see
// the reading end go without writing. A write to a closed pipe still fails
// (ERROR_NO_DATA), which ends `watch` and `relay` at their next write.
func readerGone(any) (gone <-chan struct{}, stop func()) {
	return make(chan struct{}), func() {}
}

// readerGoneNow never reports on Windows (see readerGone).
func readerGoneNow(any) bool { return false }

// isNullDevice is false on Windows: a closed standard handle is not
// replaced there, and writes to it fail.
func isNullDevice(any) bool { return false }
