package lines

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNextBoundsEachLine(t *testing.T) {
	const max = 100
	long := strings.Repeat("x", 200<<10) // longer than the reader's buffer too
	r := NewReader(strings.NewReader("a\n\n"+long+"\n"+strings.Repeat("y", max)+"\n"+strings.Repeat("z", max-1)+"\nlast"), max)
	type got struct {
		line string
		long bool
		n    int
	}
	var all []got
	for {
		line, long, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		all = append(all, got{string(line), long, r.N()})
	}
	assert.Equal(t, []got{{"a\n", false, 1}, {"\n", false, 2}, {"", true, 3}, {"", true, 4}, {strings.Repeat("z", max-1) + "\n", false, 5}, {"last", false, 6}}, all)
}

func TestNextPassesReadErrors(t *testing.T) {
	r := NewReader(iotest.ErrReader(io.ErrUnexpectedEOF), 10)
	_, _, err := r.Next()
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
}
