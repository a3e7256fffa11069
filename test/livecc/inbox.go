//go:build unix

package livecc

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"time"
)

// Post delivers text to a session's inbox socket the documented way and returns
// whatever the session wrote back before closing (measured on 2.1.328: nothing).
// It connects to socketPath, writes one line
// {"type":"user","message":{"role":"user","content":text}}\n, shuts down its
// write side and reads until the session closes the connection, all within
// timeout. It never sends an auth line.
func Post(socketPath, text string, timeout time.Duration) ([]byte, error) {
	conn, err := net.DialTimeout("unix", socketPath, timeout)
	if err != nil {
		return nil, fmt.Errorf("post to %s: %w", socketPath, err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return nil, fmt.Errorf("post to %s: %w", socketPath, err)
	}
	type message struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	line, err := json.Marshal(struct {
		Type    string  `json:"type"`
		Message message `json:"message"`
	}{"user", message{"user", text}})
	if err != nil {
		return nil, fmt.Errorf("post to %s: %w", socketPath, err)
	}
	if _, err := conn.Write(append(line, '\n')); err != nil {
		return nil, fmt.Errorf("post to %s: %w", socketPath, err)
	}
	if err := conn.(*net.UnixConn).CloseWrite(); err != nil {
		return nil, fmt.Errorf("post to %s: half-close: %w", socketPath, err)
	}
	reply, err := io.ReadAll(conn)
	if err != nil {
		return reply, fmt.Errorf("post to %s: read: %w", socketPath, err)
	}
	return reply, nil
}
