//go:build unix

package qwenregistry_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/peerctl/peerctl/adapters/qwenregistry"
)

// A record swapped for a FIFO between the reader's look and its open must
// be refused as what was opened (not a regular file), never read: before
// the shared reader, an open of a FIFO with no writer blocked every
// command. Here the swapper holds each FIFO open read-write while it is in
// place (so an open of it returns) and closes it once the record is back,
// so a reader that opened the FIFO reads nothing and says so, instead of
// hanging the test.
func TestReadRefusesAFIFOSwappedInWhileOpened(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "4242.json")
	good := record(4242, "")
	write(t, dir, "4242.json", good)

	var done atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		fifo, reg := filepath.Join(dir, "f.tmp"), filepath.Join(dir, "r.tmp")
		for !done.Load() {
			if err := unix.Mkfifo(fifo, 0o600); err != nil {
				panic(err)
			}
			fd, err := unix.Open(fifo, unix.O_RDWR|unix.O_NONBLOCK, 0)
			if err != nil {
				panic(err)
			}
			if err := os.Rename(fifo, path); err != nil {
				panic(err)
			}
			if err := os.WriteFile(reg, []byte(good), 0o600); err != nil {
				panic(err)
			}
			if err := os.Rename(reg, path); err != nil {
				panic(err)
			}
			_ = unix.Close(fd)
		}
	}()
	reg := qwenregistry.New(dir)
	fifos := 0
	for range 10000 {
		snap, err := reg.Read(context.Background())
		require.NoError(t, err)
		require.Len(t, snap.Records, 1)
		if r := snap.Records[0]; r.Problem != "" {
			fifos++
			assert.True(t, strings.HasPrefix(r.Problem, "not a regular file (p---------)"), "a FIFO was read as a record: %q", r.Problem)
		}
		if _, err := qwenregistry.ReadToken(path, 4242, "4981b98e-44f1-439d-abfe-247a52f5e39d", "/run/q/4242.sock"); err != nil {
			assert.Contains(t, err.Error(), "not a regular file", "ReadToken read a FIFO")
		}
	}
	done.Store(true)
	wg.Wait()
	t.Logf("%d reads met the FIFO", fifos)
}
