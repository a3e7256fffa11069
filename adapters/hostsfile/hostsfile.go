// Package hostsfile keeps the hosts peerctl reaches over ssh and their
// settings in one file of peerctl's own config (`peerctl hosts`):
// $XDG_CONFIG_HOME/peerctl/hosts, else os.UserConfigDir()/peerctl/hosts
// (~/.config/peerctl/hosts on Linux). The format is one section per host:
//
//	# comment
//	[build-box]
//	peerctl = /home/dev/.cache/peerctl/bin/v0.4.0-0123456789ab/peerctl
//	config-dir = /home/dev/.claude
//	claude = /opt/claude/bin/claude
//
// A section is a DEST as ssh takes it (domain.ParseDest). Its keys, all
// optional: peerctl (the far side's peerctl, an exact path there; without
// it, peerctl on the remote PATH) and the far side's harness settings:
// the harness plug-ins' flags (ports.HarnessFlag: config-dir, its Claude
// Code config dir; claude, its claude program; ...), which a Schema is
// made of, so that a harness added is a setting of every host with no
// change here; each reaches the far side's peerctl as the variable the
// flag falls back to (its Env: CLAUDE_CONFIG_DIR, PEERCTL_CLAUDE, ...).
// A value runs to the end of its line, spaces and all (no quoting); blank
// lines and lines starting with # are skipped. Anything else, a key twice,
// a host twice, a value with a control character is an error naming the
// line. peerctl writes the file whole (to a temporary file renamed into
// place), in this form, without the comments.
package hostsfile

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
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/peerctl/peerctl/adapters/internal/configfile"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// Keys a host's section may hold, in the order peerctl writes them.
const (
	KeyPeerctl = "peerctl"
)

// Schema is the far side's harness settings a section may hold: the
// harness plug-ins' flags (NewSchema), in the order peerctl writes them.
type Schema struct {
	keys []string
	env  map[string]string
}

// NewSchema is the Schema of flags, in their order: each flag's name is a
// setting, its Env the far side's variable for it. A flag without Env, or
// one named peerctl, is no setting (it could not reach the far side).
func NewSchema(flags []ports.HarnessFlag) Schema {
	s := Schema{env: map[string]string{}}
	for _, f := range flags {
		if f.Env == "" || f.Name == KeyPeerctl || s.env[f.Name] != "" {
			continue
		}
		s.keys = append(s.keys, f.Name)
		s.env[f.Name] = f.Env
	}
	return s
}

// Keys are the settings, in the order peerctl writes them.
func (s Schema) Keys() []string { return slices.Clone(s.keys) }

// Env is the far side's environment variable of setting key ("" for a key
// that is no setting).
func (s Schema) Env(key string) string { return s.env[key] }

// MaxBytes bounds the file; MaxValueBytes a value.
const (
	MaxBytes      = 1 << 20
	MaxValueBytes = 4096
)

// ErrMalformed is wrapped by every error of a file that cannot be read as
// a hosts file.
var ErrMalformed = errors.New("malformed hosts file")

// Host is one section: a destination and its settings.
type Host struct {
	Dest domain.Dest
	// Peerctl is the far side's peerctl, an exact path there; "": peerctl
	// on the remote PATH.
	Peerctl string
	// Settings are the far side's harness settings by Schema key.
	Settings map[string]string
}

// Path is the hosts file: $XDG_CONFIG_HOME/peerctl/hosts when getenv
// finds XDG_CONFIG_HOME set (an absolute path), else
// os.UserConfigDir()/peerctl/hosts.
func Path(getenv func(string) string) (string, error) {
	return configfile.Path(getenv, "hosts")
}

// Load reads the hosts file at path; a file that does not exist is no
// hosts (no error). A malformed file is an error wrapping ErrMalformed
// that names the file and the line.
func (s Schema) Load(path string) ([]Host, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read hosts file: %w", err)
	}
	defer f.Close()
	raw, err := readBounded(f)
	if err != nil {
		return nil, fmt.Errorf("read hosts file %s: %w", path, err)
	}
	hosts, err := s.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return hosts, nil
}

func readBounded(f *os.File) ([]byte, error) {
	raw, err := io.ReadAll(io.LimitReader(f, MaxBytes+1))
	if err != nil {
		return nil, err
	}
	if len(raw) > MaxBytes {
		return nil, fmt.Errorf("%w: over %d bytes", ErrMalformed, MaxBytes)
	}
	return raw, nil
}

// Parse reads a hosts file's content (see the package doc); errors wrap
// ErrMalformed and say "line N: ...".
func (s Schema) Parse(raw []byte) ([]Host, error) {
	var hosts []Host
	var cur *Host
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 4096), MaxBytes)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		bad := func(format string, a ...any) error {
			return fmt.Errorf("%w: line %d: %s", ErrMalformed, n, fmt.Sprintf(format, a...))
		}
		if !utf8.ValidString(line) {
			return nil, bad("not UTF-8")
		}
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
			continue
		case strings.HasPrefix(line, "["):
			name, ok := strings.CutSuffix(line[1:], "]")
			if !ok {
				return nil, bad("a section is [DEST], got %s", strconv.Quote(line))
			}
			dest, err := domain.ParseDest(name)
			if err != nil {
				return nil, bad("%v", err)
			}
			if slices.ContainsFunc(hosts, func(h Host) bool { return h.Dest == dest }) {
				return nil, bad("host %s is listed twice", strconv.Quote(name))
			}
			hosts = append(hosts, Host{Dest: dest})
			cur = &hosts[len(hosts)-1]
		default:
			key, value, ok := strings.Cut(line, "=")
			key, value = strings.TrimSpace(key), strings.TrimSpace(value)
			if !ok {
				return nil, bad("want [DEST] or KEY = VALUE, got %s", strconv.Quote(line))
			}
			if cur == nil {
				return nil, bad("%s comes before any [DEST]", strconv.Quote(key))
			}
			if err := checkValue(value); err != nil {
				return nil, bad("%s: %v", key, err)
			}
			switch {
			case key == KeyPeerctl:
				if cur.Peerctl != "" {
					return nil, bad("%s is set twice for %s", key, cur.Dest)
				}
				cur.Peerctl = value
			case s.env[key] != "":
				if _, dup := cur.Settings[key]; dup {
					return nil, bad("%s is set twice for %s", key, cur.Dest)
				}
				if cur.Settings == nil {
					cur.Settings = map[string]string{}
				}
				cur.Settings[key] = value
			default:
				return nil, bad("unknown key %s (known: %s, %s)", strconv.Quote(key), KeyPeerctl, strings.Join(s.keys, ", "))
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return hosts, nil
}

// checkValue accepts a value that is not empty, at most MaxValueBytes and
// free of control characters.
func checkValue(v string) error {
	switch {
	case v == "":
		return errors.New("empty value")
	case len(v) > MaxValueBytes:
		return fmt.Errorf("%d bytes, at most %d", len(v), MaxValueBytes)
	case strings.ContainsFunc(v, unicode.IsControl):
		return errors.New("holds a control character")
	}
	return nil
}

// Format writes hosts in the file's form, with a header comment.
func (s Schema) Format(hosts []Host) []byte {
	var b bytes.Buffer
	b.WriteString("# peerctl hosts: one [DEST] section per host (peerctl hosts add|remove|install; docs/COMMANDS.md#peerctl-hosts)\n")
	for _, h := range hosts {
		fmt.Fprintf(&b, "\n[%s]\n", h.Dest)
		if h.Peerctl != "" {
			fmt.Fprintf(&b, "%s = %s\n", KeyPeerctl, h.Peerctl)
		}
		for _, k := range s.keys {
			if v, ok := h.Settings[k]; ok {
				fmt.Fprintf(&b, "%s = %s\n", k, v)
			}
		}
	}
	return b.Bytes()
}

// Save writes hosts to path whole: a temporary file in the same folder
// (made 0700 when missing), renamed into place. Every value is checked
// as Parse checks it first.
func (s Schema) Save(path string, hosts []Host) error {
	for _, h := range hosts {
		for k, v := range h.Settings {
			if s.env[k] == "" {
				return fmt.Errorf("save hosts: unknown setting %q", k)
			}
			if err := checkValue(v); err != nil {
				return fmt.Errorf("save hosts: %s %s: %w", h.Dest, k, err)
			}
		}
		if h.Peerctl != "" {
			if err := checkValue(h.Peerctl); err != nil {
				return fmt.Errorf("save hosts: %s peerctl: %w", h.Dest, err)
			}
		}
	}
	if err := configfile.Write(path, s.Format(hosts)); err != nil {
		return fmt.Errorf("save hosts: %w", err)
	}
	return nil
}

// Find returns the entry for dest in hosts.
func Find(hosts []Host, dest domain.Dest) (Host, bool) {
	i := slices.IndexFunc(hosts, func(h Host) bool { return h.Dest == dest })
	if i < 0 {
		return Host{}, false
	}
	return hosts[i], true
}

// Book is the hosts file as ports.HostBook: located (Path) and read at
// the first lookup, so a command that reaches no host never reads it; a
// malformed file is every lookup's error. A host without a section has
// the default settings.
type Book struct {
	getenv func(string) string
	schema Schema
	once   sync.Once
	hosts  []Host
	err    error
}

var _ ports.HostBook = (*Book)(nil)

// NewBook is the Book of the hosts file Path(getenv) names, read by
// schema.
func NewBook(getenv func(string) string, schema Schema) *Book {
	return &Book{getenv: getenv, schema: schema}
}

// Host returns dest's settings: the section's peerctl as Program and its
// harness settings as Env (Remote).
func (b *Book) Host(dest domain.Dest) (ports.HostSettings, error) {
	b.once.Do(func() {
		var path string
		if path, b.err = Path(b.getenv); b.err == nil {
			b.hosts, b.err = b.schema.Load(path)
		}
	})
	if b.err != nil {
		return ports.HostSettings{}, b.err
	}
	h, _ := Find(b.hosts, dest)
	return b.schema.Remote(h), nil
}

// Remote is h as ports.HostSettings: the far side's peerctl and its
// settings as environment variables (Env); a setting that is no key of s
// is left out.
func (s Schema) Remote(h Host) ports.HostSettings {
	out := ports.HostSettings{Program: h.Peerctl}
	for k, v := range h.Settings {
		if s.env[k] == "" {
			continue
		}
		if out.Env == nil {
			out.Env = map[string]string{}
		}
		out.Env[s.env[k]] = v
	}
	return out
}
