package sshhost_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/sshhost"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/wire"
	"github.com/peerctl/peerctl/ports"
)

// answering is a Remote whose every call ends with res.
type answering struct{ res ports.RemoteResult }

func (a answering) Call(context.Context, ports.RemoteCall) (ports.RemoteResult, error) {
	return a.res, nil
}

func (a answering) Stream(context.Context, ports.RemoteCall) (ports.RemoteStream, error) {
	panic("not called")
}

// TestNodeListKeepsTheFarVersion: a listing says which peerctl the far
// side runs, as its hello named it (the dashboard's Hosts show it).
func TestNodeListKeepsTheFarVersion(t *testing.T) {
	dest, err := domain.ParseDest("dev-box")
	require.NoError(t, err)
	n := sshhost.NewNode(answering{ports.RemoteResult{Stdout: []byte("[]\n"), Version: "v1.4.0"}}, dest, time.Minute)
	got, err := n.List(context.Background(), wire.ListQuery{})
	require.NoError(t, err)
	assert.Equal(t, "v1.4.0", got.Version)
	assert.Empty(t, got.Sessions)
}
