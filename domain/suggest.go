package domain

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// ShortIDLen is the fewest characters of a session id the list table
// shows: like a git commit, an id is shown by its shortest prefix of at
// least this many characters that names it alone (ShortIDs).
const ShortIDLen = 8

// ShortIDs returns, for each entry in order, the shortest prefix of its
// session id of at least ShortIDLen characters (never fewer than
// MinIDPrefix, so Resolve and Lookup take it) that no other entry's
// session id starts with and no entry carries as its name. An id another
// entry also carries (or too short to cut) is returned whole.
func ShortIDs(entries []Entry) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		id := e.Record.SessionID
		out[i] = id
		for n := ShortIDLen; n < len(id); n++ {
			if uniquePrefix(entries, i, id[:n]) {
				out[i] = id[:n]
				break
			}
		}
	}
	return out
}

func uniquePrefix(entries []Entry, self int, p string) bool {
	for j, o := range entries {
		if o.Record.Name == p || (j != self && strings.HasPrefix(o.Record.SessionID, p)) {
			return false
		}
	}
	return true
}

// maxSuggestions caps the names a not_live refusal suggests.
const maxSuggestions = 3

// suggestNames returns the names of live sessions close to a mistyped
// address, closest first (at most maxSuggestions): within two edits
// (Levenshtein, ignoring case, as cobra suggests commands) or starting with
// the address. A suggestion is never acted on: the caller refuses.
func suggestNames(live []Entry, address string) []string {
	type near struct {
		name string
		d    int
	}
	var found []near
	seen := map[string]bool{}
	a := strings.ToLower(address)
	for _, e := range live {
		name := e.Record.Name
		if name == "" || seen[name] {
			continue
		}
		n := strings.ToLower(name)
		d := EditDistance(a, n)
		if d <= 2 || strings.HasPrefix(n, a) {
			seen[name] = true
			found = append(found, near{name, d})
		}
	}
	sort.SliceStable(found, func(i, j int) bool {
		if found[i].d != found[j].d {
			return found[i].d < found[j].d
		}
		return found[i].name < found[j].name
	})
	var names []string
	for i := 0; i < len(found) && i < maxSuggestions; i++ {
		names = append(names, found[i].name)
	}
	return names
}

// EditDistance is the Levenshtein distance between a and b, in runes.
func EditDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// normalisedApart reports whether a and b look like one text in two
// Unicode normalisations (NFD's "u" + U+0308 against NFC's "ü"): as many
// runes that are not combining marks, but not as many marks. Decomposing
// needs Unicode's tables; this is the sign of it a person cannot see.
func normalisedApart(a, b string) bool {
	ma, ra := marks(a)
	mb, rb := marks(b)
	return a != b && ma != mb && ra == rb
}

// marks counts s's combining marks (Unicode category M) and its other runes.
func marks(s string) (marks, others int) {
	for _, c := range s {
		if unicode.Is(unicode.M, c) {
			marks++
		} else {
			others++
		}
	}
	return marks, others
}

// quoteMarks is strconv.Quote(s) with each combining mark written as a
// \u escape, so that it shows.
func quoteMarks(s string) string {
	var b strings.Builder
	for _, c := range strconv.Quote(s) {
		if unicode.Is(unicode.M, c) {
			fmt.Fprintf(&b, "\\u%04x", c)
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

// markEscapes lists the combining marks of s, each once, as \u escapes.
func markEscapes(s string) string {
	var out []string
	for _, c := range s {
		if e := fmt.Sprintf("\\u%04x", c); unicode.Is(unicode.M, c) && !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return strings.Join(out, ", ")
}
