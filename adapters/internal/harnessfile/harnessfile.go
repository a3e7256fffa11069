// Package harnessfile reads one small file a harness wrote (a registry
// record, a settings file) the one safe way: never following a symlink,
// never blocking (a FIFO or device planted at the path is refused, not
// waited on), re-checking what was opened (fstat of the open descriptor:
// a regular file only, under the cap), and reading at most the cap. Every
// reader of a harness's small files uses it, so a planted FIFO cannot hang
// one reader while another survives.
package harnessfile

import (
	"errors"
	"fmt"
	"io/fs"
)

// Error says why a file could not be used. TooLarge is set when the file
// was over the cap (or grew over it while read); the callers call that
// malformed, and any other problem unreadable. Unwrap gives the system
// error when there was one (errors.Is(err, fs.ErrNotExist) works).
type Error struct {
	TooLarge bool
	text     string
	err      error
}

func (e *Error) Error() string { return e.text }

// Unwrap returns the underlying system error, or nil.
func (e *Error) Unwrap() error { return e.err }

func sysErr(op string, err error) *Error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err // the path is the caller's to say
	}
	return &Error{text: fmt.Sprintf("%s: %v", op, err), err: err}
}

func tooLarge(size, max int64) *Error {
	return &Error{TooLarge: true, text: fmt.Sprintf("%d bytes, over the %d-byte cap; not read", size, max)}
}

func grew(max int64) *Error {
	return &Error{TooLarge: true, text: fmt.Sprintf("grew over the %d-byte cap while read", max)}
}

// check words why a file of the given type and size cannot be used; a
// symlink gets the given words.
func check(mode fs.FileMode, size, max int64, symlink string) *Error {
	switch {
	case mode&fs.ModeSymlink != 0:
		return &Error{text: symlink}
	case !mode.IsRegular():
		return &Error{text: fmt.Sprintf("not a regular file (%s)", mode.Type())}
	case size > max:
		return tooLarge(size, max)
	}
	return nil
}

// IsTooLarge reports whether err is an *Error for a file over the cap.
func IsTooLarge(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.TooLarge
}
