package ports

import (
	"context"
	"io"

	"github.com/peerctl/peerctl/domain"
)

// HostExec runs one of peerctl's own fixed commands on another machine,
// one that is not peerctl (`uname -sm`, the install script of `peerctl
// hosts install`), through the same ssh as Remote: words are peerctl's
// own, each quoted for the far side's shell; data travels on stdin. A
// failure to connect (ssh exit 255) is a host_unreachable refusal;
// otherwise the command's exit code is the result's Code. Stdout is
// bounded by maxOutput (more is host_unreachable).
type HostExec interface {
	Exec(ctx context.Context, dest domain.Dest, words []string, stdin io.Reader, maxOutput int) (RemoteResult, error)
}
