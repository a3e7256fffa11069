package cli

import (
	"io"
	"strings"

	"github.com/mattn/go-runewidth"
)

// table lays rows of cells out in columns for people, as text/tabwriter
// did (each column as wide as its widest cell and two spaces, a row's last
// cell as it is), but measuring each cell as a terminal shows it
// (shownWidth): a name with wide characters (日本 takes four columns) or
// a painted cell (paint) keeps its row in line.
type table struct{ rows [][]string }

// add appends one row.
func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

// widths are the widths of the columns before each row's last cell: each
// its widest cell's (shownWidth).
func (t *table) widths() []int {
	var widths []int
	for _, r := range t.rows {
		for i := 0; i < len(r)-1; i++ {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], shownWidth(r[i]))
		}
	}
	return widths
}

// wrapLast wraps the last cell of every row at spaces (wrapText) into
// lines of at most width terminal columns, each line after the first
// under the column where that cell starts; a width that leaves that
// column fewer than 20 columns (or 0: not a terminal) leaves every cell
// whole.
func (t *table) wrapLast(width int) {
	widths := t.widths()
	for _, r := range t.rows {
		indent := 0
		for _, w := range widths[:max(len(r)-1, 0)] {
			indent += w + 2
		}
		if len(r) > 0 && width > indent+20 {
			r[len(r)-1] = wrapText(r[len(r)-1], indent, width)
		}
	}
}

// write writes the rows to w, each on a line of its own.
func (t *table) write(w io.Writer) error {
	widths := t.widths()
	var b strings.Builder
	for _, r := range t.rows {
		for i, c := range r {
			b.WriteString(c)
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-shownWidth(c)+2))
			}
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// cut shortens s to at most n terminal columns (runewidth), ending it
// with "…", so that one long value (a 200 KB name) cannot pad every row of
// its table.
func cut(s string, n int) string {
	return runewidth.Truncate(s, n, "…")
}

// shownWidth is how many terminal columns s takes: its display width
// (go-runewidth, from Unicode's East Asian Width) without paint's colour
// codes (ESC [ ... m), which take none.
func shownWidth(s string) int {
	n := 0
	for {
		i := strings.Index(s, "\x1b[")
		if i < 0 {
			return n + runewidth.StringWidth(s)
		}
		n += runewidth.StringWidth(s[:i])
		end := strings.IndexByte(s[i:], 'm')
		if end < 0 {
			return n + runewidth.StringWidth(s[i:])
		}
		s = s[i+end+1:]
	}
}
