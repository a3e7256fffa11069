package sshhost

import (
	"context"

	"github.com/peerctl/peerctl/domain"
)

// startMaster: Windows' OpenSSH client shares no connections.
func (c *Channel) startMaster(context.Context, domain.Dest, string) bool { return false }
