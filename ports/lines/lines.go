// Package lines reads line-delimited input (relay requests, MCP's stdio
// messages) with a bound on one line's length, so that no line, however
// long, is held whole in memory or ends the reading.
package lines

import (
	"bufio"
	"errors"
	"io"
)

// MaxRequest bounds one request line of `peerctl relay` and of
// `peerctl mcp`: a 64 KiB message escaped as JSON (at most 6 bytes per
// byte, \u00XX) plus the address, id and envelope fits.
const MaxRequest = 1 << 20

// Reader reads lines of at most max bytes.
type Reader struct {
	br  *bufio.Reader
	max int
	n   int
}

// NewReader reads r line by line; a line longer than max bytes (its "\n"
// included) is skipped.
func NewReader(r io.Reader, max int) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 64<<10), max: max}
}

// Next returns the next line as read (with its "\n", if any: the last line
// may lack it). A line over the bound is read to its end and dropped: long
// is true and line nil. At the end of the input err is io.EOF, and nothing
// else is returned; a read error is returned as it came.
func (r *Reader) Next() (line []byte, long bool, err error) {
	for {
		var part []byte
		part, err = r.br.ReadSlice('\n')
		if !long && len(line)+len(part) > r.max {
			long, line = true, nil
		}
		if !long {
			line = append(line, part...)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			break
		}
	}
	if (len(line) > 0 || long) && (err == nil || errors.Is(err, io.EOF)) {
		r.n++
		return line, long, nil
	}
	return nil, false, err
}

// N is the number of the line Next returned last, from 1.
func (r *Reader) N() int { return r.n }
