package courierexec_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/peerctl/peerctl/adapters/courierexec"
)

func TestScratchLive(t *testing.T) {
	prog := os.Getenv("SCRATCH_CLAUDE")
	if prog == "" {
		t.Skip()
	}
	dir := t.TempDir()
	sock := filepath.Join(dir, "t.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				b := make([]byte, 1<<20)
				n, _ := c.Read(b)
				t.Logf("socket got %q", b[:n])
				c.Close()
			}()
		}
	}()
	tr := courierexec.New(courierexec.Config{Program: prog})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	c, err := tr.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tools, el, err := c.Ping(ctx)
	t.Logf("ping tools=%v el=%v err=%v", tools, el, err)
	res, err := c.Send(ctx, sock, "hello\n<<<x>>> \"q\" ünï")
	t.Logf("send %v res=%+v err=%v", time.Since(start), res, err)
	go func() {
		for in := range c.Inbound() {
			t.Logf("inbound %+v", in)
		}
	}()
	time.Sleep(time.Second)
	err = c.Close()
	out, serr := c.Output()
	t.Logf("close err=%v stats=%+v total=%v\nstdout=%s\nstderr=%s", err, c.Stats(), time.Since(start), out, serr)
}
