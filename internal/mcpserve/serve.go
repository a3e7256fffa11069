// Package mcpserve is peerctl's MCP server: the tools of internal/mcptools
// served with the official MCP Go SDK (github.com/modelcontextprotocol/go-sdk
// v1.8.0) over stdio. Only cmd/peerctl-mcp links it.
package mcpserve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/mcptools"
	"github.com/peerctl/peerctl/internal/wiring"
)

// Serve serves tools on std until std.In closes or ctx ends (a signal):
// both end the server cleanly (nil). Every call read before std.In closed
// is answered first (as relay finishes its work); ctx ending cancels the
// calls still running (the tools end theirs when ctx ends).
func Serve[L, S, R any](ctx context.Context, tools mcptools.Tools[L, S, R], std mcptools.Stdio) error {
	logger := slog.New(slog.DiscardHandler)
	if std.Debug {
		logger = slog.New(slog.NewTextHandler(std.Err, nil))
	}
	s, err := NewServer(tools, std.Version, logger)
	if err != nil {
		return err
	}
	g := newGate(std.In, std.Out, std.Err)
	g.stop = ctx.Done()
	t := &mcp.IOTransport{Reader: io.NopCloser(g), Writer: nopWriteCloser{g}}
	err = s.Run(ctx, t)
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return nil
	}
	return fmt.Errorf("serve mcp: %w", err)
}

// instructions is what the server tells a client's model about itself.
func instructions() string {
	words := make([]string, 0, len(domain.Reasons()))
	for _, r := range domain.Reasons() {
		words = append(words, r.String())
	}
	return "peerctl finds the live " + wiring.Plugins().Titles("and") + " sessions on this machine and delivers a message into one of them, safely.\n" +
		"list_sessions lists them (name, sessionId, endpoint, status, cwd); show_session shows one; send_message delivers text to one.\n" +
		"A refusal is an error result whose text starts with a stable reason word (" + strings.Join(words, ", ") + ").\n" +
		"Address a session by full id or endpoint when its name is shared."
}

// NewServer builds the MCP server with the three tools; version is
// peerctl's, logger the SDK's (nil: none).
func NewServer[L, S, R any](tools mcptools.Tools[L, S, R], version string, logger *slog.Logger) (*mcp.Server, error) {
	sendSchema, err := jsonschema.For[mcptools.SendArgs](nil)
	if err != nil {
		return nil, fmt.Errorf("send_message input schema: %w", err)
	}
	for _, t := range wiring.Plugins().Transports() {
		sendSchema.Properties["transport"].Enum = append(sendSchema.Properties["transport"].Enum, t)
	}
	awaitMin, awaitMax := 0.0, float64(mcptools.MaxAwaitReplySeconds)
	sendSchema.Properties["await_reply_seconds"].Minimum = &awaitMin
	sendSchema.Properties["await_reply_seconds"].Maximum = &awaitMax
	durableMin, durableMax := 0.0, float64(mcptools.MaxDurableSeconds)
	sendSchema.Properties["durable_seconds"].Minimum = &durableMin
	sendSchema.Properties["durable_seconds"].Maximum = &durableMax
	listSchema, err := jsonschema.For[mcptools.ListArgs](nil)
	if err != nil {
		return nil, fmt.Errorf("list_sessions input schema: %w", err)
	}
	var words []string
	for _, h := range wiring.Plugins().Kinds() {
		listSchema.Properties["harness"].Enum = append(listSchema.Properties["harness"].Enum, h.String())
		words = append(words, h.String())
	}
	listSchema.Properties["harness"].Description = "list one harness only: " + strings.Join(words, ", ") + " (default: all)"
	sendSchema.Properties["transport"].Description = "how to deliver; default: the target harness's own, the first named for it: " + wiring.Plugins().TransportChoices()
	s := mcp.NewServer(&mcp.Implementation{Name: "peerctl", Version: version},
		&mcp.ServerOptions{Instructions: instructions(), Logger: logger, Capabilities: &mcp.ServerCapabilities{}})
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(false)}
	mcp.AddTool(s, &mcp.Tool{Name: mcptools.ToolList, Title: "List live coding-agent sessions",
		Description: "List the live " + wiring.Plugins().Titles("and") + " sessions on this machine: the objects of `peerctl list --json` under \"sessions\" " +
			"(harness, sessionId, pid, name, cwd, status, endpoint, addressable, verdict, ...). With all, every registry record and its verdict; " +
			"with harness, one harness's only.",
		InputSchema: listSchema,
		Annotations: readOnly}, handler(tools.List))
	mcp.AddTool(s, &mcp.Tool{Name: mcptools.ToolShow, Title: "Show one session",
		Description: "Show everything known about one session, as `peerctl show --json` prints it: the record's fields, verdict, " +
			"endpoint, whether its socket exists, its transcript path, and warnings (e.g. a shared name).",
		Annotations: readOnly}, handler(tools.Show))
	mcp.AddTool(s, &mcp.Tool{Name: mcptools.ToolSend, Title: "Send a message to a session",
		Description: "Deliver text into one live " + wiring.Plugins().Titles("or") + " session, as `peerctl send --json` does: the registries are " +
			"re-read, the session resolved and its identity verified before anything is sent. The result is the receipt (outcome " +
			"delivered, queued, held or posted; confirmed when the target shows the text). With await_reply_seconds, it then waits " +
			"for the target's answer and returns it as reply.text; none in time is an error starting with no_reply. With durable_seconds " +
			"or key, a target that cannot take it now gives outcome stored (delivered later by peerctl serve). A refusal is an " +
			"error whose text starts with its reason word.",
		InputSchema: sendSchema,
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: new(false), DestructiveHint: new(false)}}, withProgress(handler(tools.Send)))
	return s, nil
}

// handler is a tool as the SDK's typed handler: an error becomes an isError
// result with the error's text (the SDK's doing), a value the structured
// content and its JSON text.
func handler[In, Out any](tool mcptools.Tool[In, Out]) mcp.ToolHandlerFor[In, Out] {
	return func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
		var raw json.RawMessage
		if req != nil && req.Params != nil {
			raw = req.Params.Arguments
		}
		out, err := tool(ctx, raw, in)
		return nil, out, err
	}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
