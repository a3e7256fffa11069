package cli

import (
	"github.com/peerctl/peerctl/adapters/sshhost"
	"github.com/peerctl/peerctl/ports"
)

// newHostChannel is the ssh channel ($PEERCTL_SSH or ssh) with book.
func (c *cli) newHostChannel(book ports.HostBook) (*sshhost.Channel, error) {
	return sshhost.New(sshhost.Options{Getenv: c.getenv, Book: book, Version: c.version().Version})
}
