package fsregistry

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/peerctl/peerctl/domain"
)

// readRegular reads a regular file of at most MaxRecordBytes without
// following links, and words why a file cannot be used: lstat (a symlink or
// junction is not followed), open, stat the open file and check it is the
// file lstat saw (os.SameFile: volume serial and file index), one read sized
// from that stat. Windows has no FIFOs to block on in a folder. The
// modification time is lstat's.
func readRegular(path string) ([]byte, time.Time, *fileProblem) {
	lst, err := os.Lstat(path)
	if err != nil {
		return nil, time.Time{}, &fileProblem{domain.VerdictUnreadable, fmt.Sprintf("stat: %v", unwrapPath(err))}
	}
	mod := lst.ModTime()
	if p := notRegular(lst, "symlink, not followed"); p != nil {
		return nil, mod, p
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, mod, &fileProblem{domain.VerdictUnreadable, fmt.Sprintf("open: %v", unwrapPath(err))}
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, mod, &fileProblem{domain.VerdictUnreadable, fmt.Sprintf("stat: %v", unwrapPath(err))}
	}
	if !os.SameFile(lst, st) {
		return nil, mod, &fileProblem{domain.VerdictUnreadable, "replaced while opened"}
	}
	if p := notRegular(st, "replaced while opened"); p != nil {
		return nil, mod, p
	}
	buf, err := io.ReadAll(io.LimitReader(f, MaxRecordBytes+1))
	if err != nil {
		return nil, mod, &fileProblem{domain.VerdictUnreadable, fmt.Sprintf("read: %v", unwrapPath(err))}
	}
	if len(buf) > MaxRecordBytes {
		return nil, mod, &fileProblem{domain.VerdictMalformed, fmt.Sprintf("grew over the %d-byte cap while read", MaxRecordBytes)}
	}
	return buf, mod, nil
}

// notRegular words why fi is not a regular file within the size cap; a
// symlink (or another reparse point Go reports as irregular) gets the
// given words.
func notRegular(fi fs.FileInfo, symlink string) *fileProblem {
	switch m := fi.Mode(); {
	case m&fs.ModeSymlink != 0:
		return &fileProblem{domain.VerdictUnreadable, symlink}
	case !m.IsRegular():
		return &fileProblem{domain.VerdictUnreadable, fmt.Sprintf("not a regular file (%s)", m.Type())}
	case fi.Size() > MaxRecordBytes:
		return &fileProblem{domain.VerdictMalformed, fmt.Sprintf("%d bytes, over the %d-byte cap; not read", fi.Size(), MaxRecordBytes)}
	}
	return nil
}

// unwrapPath drops the *fs.PathError wrapper, as the unix reader's raw
// errno carries no path either.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
