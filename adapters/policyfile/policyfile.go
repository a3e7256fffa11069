// Package policyfile keeps the trust policy's rules (docs/POLICY.md) in
// one file of peerctl's own config: $XDG_CONFIG_HOME/peerctl/policy, else
// os.UserConfigDir()/peerctl/policy (~/.config/peerctl/policy on Linux).
// The format is one rule per line, in order, the first that matches
// deciding:
//
//	# comment
//	deny from=mcp to=prod-* cwd='/srv/my prod'
//	allow from=mcp:reviewer-* to=* harness=claude-code host=build-box
//
// ACTION (allow, hold or deny), then KEY=VALUE words: from and to, once
// each and required; harness, host and cwd, at most once each. Words are
// split as a POSIX shell splits them, without running anything
// (github.com/kballard/go-shellquote): a value with a space, a quote or a
// backslash is quoted. Blank lines and lines starting with # are skipped.
// Anything else, a rule domain.NewRule refuses and a control character
// anywhere is an error naming the line. peerctl writes the file whole (a
// temporary file renamed into place, mode 0600), in this form, with one
// header comment.
//
// A file that is a symlink, is not a regular file, is another user's, or
// is writable by its group or by others is refused: whoever can write it
// decides who may message every session.
package policyfile

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	shellquote "github.com/kballard/go-shellquote"

	"github.com/peerctl/peerctl/adapters/internal/configfile"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// MaxBytes bounds the file (about 10,000 rules of 100 bytes fit).
const MaxBytes = 4 << 20

// ErrMalformed is wrapped by every error of a file that cannot be read as
// a policy; ErrUnsafe by every error of a file that is not safe to trust.
var (
	ErrMalformed = errors.New("malformed policy file")
	ErrUnsafe    = errors.New("unsafe policy file")
)

// File is the policy file at a path, as ports.Policy.
type File struct {
	path string
	uid  int
}

var _ ports.Policy = (*File)(nil)

// New is the File at path, which must be owned by uid (os.Getuid()).
func New(path string, uid int) *File { return &File{path: path, uid: uid} }

// Path is the policy file: $XDG_CONFIG_HOME/peerctl/policy when getenv
// finds XDG_CONFIG_HOME set (an absolute path), else
// os.UserConfigDir()/peerctl/policy.
func Path(getenv func(string) string) (string, error) {
	return configfile.Path(getenv, "policy")
}

// Path is the file's path.
func (f *File) Path() string { return f.path }

// Rules reads the file (ports.Policy.Rules): none when it does not exist;
// an error wrapping ErrUnsafe for a symlink, a file that is not regular,
// another user's or writable by group or others; one wrapping
// ErrMalformed, naming the file and line, for a rule it cannot read.
func (f *File) Rules() ([]domain.Rule, error) {
	fi, err := os.Lstat(f.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read policy file: %w", err)
	}
	if err := f.safe(fi); err != nil {
		return nil, err
	}
	file, err := os.Open(f.path)
	if err != nil {
		return nil, fmt.Errorf("read policy file: %w", err)
	}
	defer file.Close()
	if fi2, err := file.Stat(); err != nil || !os.SameFile(fi, fi2) {
		return nil, fmt.Errorf("%w: %s changed while it was opened", ErrUnsafe, f.path)
	}
	raw, err := io.ReadAll(io.LimitReader(file, MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read policy file %s: %w", f.path, err)
	}
	if len(raw) > MaxBytes {
		return nil, fmt.Errorf("%s: %w: over %d bytes", f.path, ErrMalformed, MaxBytes)
	}
	rules, err := Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.path, err)
	}
	return rules, nil
}

func (f *File) safe(fi os.FileInfo) error {
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		return fmt.Errorf("%w: %s is a symlink (keep the rules in the file itself)", ErrUnsafe, f.path)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%w: %s is not a regular file", ErrUnsafe, f.path)
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("%w: %s is writable by its group or others (mode %04o; chmod go-w %s)", ErrUnsafe, f.path, fi.Mode().Perm(), shellquote.Join(f.path))
	}
	if uid, ok := fileOwner(fi); ok && uid != f.uid {
		return fmt.Errorf("%w: %s is owned by uid %d, not by this user (uid %d)", ErrUnsafe, f.path, uid, f.uid)
	}
	return nil
}

// Parse reads a policy file's content (see the package doc); errors wrap
// ErrMalformed and say "line N: ...".
func Parse(raw []byte) ([]domain.Rule, error) {
	var rules []domain.Rule
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 4096), MaxBytes)
	for n := 1; sc.Scan(); n++ {
		text := sc.Text()
		line := strings.TrimSpace(text)
		bad := func(format string, a ...any) error {
			return fmt.Errorf("%w: line %d: %s", ErrMalformed, n, fmt.Sprintf(format, a...))
		}
		switch {
		case !utf8.ValidString(text):
			return nil, bad("not UTF-8")
		case strings.ContainsFunc(strings.TrimSuffix(text, "\r"), func(r rune) bool { return r != '\t' && unicode.IsControl(r) }):
			return nil, bad("holds a control character")
		case line == "" || strings.HasPrefix(line, "#"):
			continue
		}
		r, err := parseLine(line)
		if err != nil {
			return nil, bad("%v", err)
		}
		rules = append(rules, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return rules, nil
}

var keys = []string{"from", "to", "harness", "host", "cwd"}

func parseLine(line string) (domain.Rule, error) {
	words, err := shellquote.Split(line)
	if err != nil {
		return domain.Rule{}, fmt.Errorf("%v (quote a value with a space, a quote or a backslash: 'like this')", err)
	}
	v := map[string]string{}
	for _, w := range words[1:] {
		k, val, ok := strings.Cut(w, "=")
		switch {
		case !ok:
			return domain.Rule{}, fmt.Errorf("want ACTION from=SENDER to=TARGET [harness=H] [host=DEST] [cwd=FOLDER], got %s", strconv.Quote(w))
		case !slices.Contains(keys, k):
			return domain.Rule{}, fmt.Errorf("unknown key %s (known: %s)", strconv.Quote(k), strings.Join(keys, ", "))
		}
		if _, dup := v[k]; dup {
			return domain.Rule{}, fmt.Errorf("%s is set twice", k)
		}
		v[k] = val
	}
	for _, k := range keys[:2] {
		if _, ok := v[k]; !ok {
			return domain.Rule{}, fmt.Errorf("%s= is missing (want ACTION from=SENDER to=TARGET ...)", k)
		}
	}
	for _, k := range keys[2:] {
		if s, ok := v[k]; ok && s == "" {
			return domain.Rule{}, fmt.Errorf("%s is empty", k)
		}
	}
	return domain.NewRule(words[0], v["from"], v["to"], v["harness"], v["host"], v["cwd"])
}

// Format writes rules in the file's form, with a header comment.
func Format(rules []domain.Rule) []byte {
	var b bytes.Buffer
	b.WriteString("# peerctl trust policy: one rule a line, the first that matches decides; then the defaults (peerctl policy --help; docs/POLICY.md)\n")
	for _, r := range rules {
		b.WriteString(r.Action.String())
		for _, kv := range [][2]string{{"from", r.From.String()}, {"to", r.To.Glob()}, {"harness", r.To.Harness()}, {"host", r.To.Host()}, {"cwd", r.To.Cwd()}} {
			if kv[1] != "" {
				b.WriteString(" " + kv[0] + "=" + quote(kv[1]))
			}
		}
		b.WriteString("\n")
	}
	return b.Bytes()
}

// quote leaves a value as it is unless the shell's splitting would change
// it (a space, a quote, a backslash), then quotes it whole in single quotes.
func quote(v string) string {
	if !strings.ContainsAny(v, " \t'\"\\") {
		return v
	}
	return "'" + strings.ReplaceAll(v, "'", `'\''`) + "'"
}

// Save writes rules to the file whole (ports.Policy.Save): a temporary
// file (mode 0600) in the same folder (made 0700 when missing), renamed
// into place; a symlink at the path is refused, not followed.
func (f *File) Save(rules []domain.Rule) error {
	if fi, err := os.Lstat(f.path); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		return fmt.Errorf("save policy: %w: %s is a symlink", ErrUnsafe, f.path)
	}
	if err := configfile.Write(f.path, Format(rules)); err != nil {
		return fmt.Errorf("save policy: %w", err)
	}
	return nil
}
