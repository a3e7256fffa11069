package serve

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/ports/wire"
)

// A request cut short by its connection's end (no newline) is never read
// as a request, even when what came is whole JSON: the client that wrote
// it may say nothing was stored.
func TestReadLineWantsTheWholeLine(t *testing.T) {
	var req Request
	err := ReadLine(bufio.NewReader(strings.NewReader(`{"v":2,"op":"ping"}`)), &req)
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
	require.NoError(t, ReadLine(bufio.NewReader(strings.NewReader(`{"v":2,"op":"ping"}`+"\n")), &req))
	assert.Equal(t, "ping", req.Op)
}

// A send order crosses the socket byte for byte: a text, a key, an
// address and a path that are not UTF-8 come back as they went.
func TestSendOrderIsExact(t *testing.T) {
	o := wire.SendOrder{Query: wire.SendQuery{Address: "pr\xff", Text: "caf\xe9\x00", From: "ci"}, Key: "k\xfe", Host: "box",
		Settings: wire.Settings{Flags: map[string]string{"config-dir": "/home/\xff/.claude"}}}
	b, err := json.Marshal(Request{V: Protocol, Op: "send", Send: &o})
	require.NoError(t, err)
	var back Request
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, o, *back.Send)
}
