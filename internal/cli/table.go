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

// fit cuts the cells of the cuttable columns (by index) so that each row fits width terminal columns: the widest of them
// loses a column at a time, down to its header's width or minCut,
// whichever is wider. A width of 0 (not a terminal) leaves every cell
// as it is; so does a row that cannot fit even with those cut.
func (t *table) fit(width int, cuttable ...int) {
	if width <= 0 || len(t.rows) == 0 {
		return
	}
	var widths []int
	for _, r := range t.rows {
		for i, c := range r {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], shownWidth(c))
		}
	}
	total := 2 * (len(widths) - 1)
	for _, w := range widths {
		total += w
	}
	floor := func(i int) int {
		if i < len(t.rows[0]) {
			return max(minCut, shownWidth(t.rows[0][i]))
		}
		return minCut
	}
	for total > width {
		widest := -1
		for _, i := range cuttable {
			if i < len(widths) && widths[i] > floor(i) && (widest < 0 || widths[i] > widths[widest]) {
				widest = i
			}
		}
		if widest < 0 {
			break
		}
		widths[widest]--
		total--
	}
	for _, r := range t.rows[1:] {
		for _, i := range cuttable {
			if i < len(r) && shownWidth(r[i]) > widths[i] {
				r[i] = cutPainted(r[i], widths[i])
			}
		}
	}
}

// cutPainted is cut for a cell paint may have coloured: the text inside
// its colour codes is cut, the codes kept.
func cutPainted(s string, n int) string {
	if !strings.HasPrefix(s, "\x1b[") || !strings.HasSuffix(s, "\x1b[0m") {
		return cut(s, n)
	}
	end := strings.IndexByte(s, 'm') + 1
	return s[:end] + cut(s[end:len(s)-len("\x1b[0m")], n) + "\x1b[0m"
}

// minCut is the fewest columns fit cuts a cell to.
const minCut = 8

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
