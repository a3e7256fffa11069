// Package qwencli looks at the qwen program (Qwen Code, npm
// @qwen-code/qwen-code) and its user settings for `peerctl doctor`: where
// it is, its version (`qwen --version` prints e.g. "0.24.4"), and whether
// its sessions bind a cross-session inbox. It never starts a session.
//
// Messaging (Qwen Code's docs, users/features/cross-session-protocol; 0.23.0
// and 0.24.4 read): the setting agents.crossSessionMessaging in
// <qwen home>/settings.json, read at a session's start; unset, it is on
// from 0.24.0 and off in 0.23.x (opt-in, "experimental"); 0.21.x and
// older have no inbox.
package qwencli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/peerctl/peerctl/adapters/internal/harnessfile"
	"github.com/peerctl/peerctl/adapters/internal/presence"
	"github.com/peerctl/peerctl/adapters/procgroup"
)

// Probe is what a look at the qwen program and Qwen Code's settings
// found, without starting a session.
type Probe struct {
	// Program is the program as configured ("qwen", or a path); Path is
	// where it resolved ("" when not found).
	Program, Path string
	// Version is what `qwen --version` printed, e.g. "0.24.4".
	Version string
	// Messaging is "on", "off" or "unknown": whether new sessions of this
	// version bind an inbox (setting agents.crossSessionMessaging, else the
	// version's default: on from 0.24.0, off in 0.23.x). MessagingWhy says
	// where that came from.
	Messaging, MessagingWhy string
	// Err says why the program could not be probed (nil when found and run).
	Err error
}

// ProgramEnv names the variable that picks the qwen program.
const ProgramEnv = "PEERCTL_QWEN"

// DefaultProgram is the qwen program run when none is picked (on PATH).
const DefaultProgram = "qwen"

// probeTimeout bounds `qwen --version` (a node start; seconds on a busy machine).
const probeTimeout = 20 * time.Second

// Prober probes one qwen program against one Qwen home.
type Prober struct {
	Program string // "" means "qwen" on PATH
	Home    string // Qwen Code's home (settings.json lives there)
}

// ProbeQwen finds the program, runs `<program> --version` (bounded, its
// process group killed after) and decides Messaging.
func (p *Prober) ProbeQwen(ctx context.Context) Probe {
	prog := p.Program
	if prog == "" {
		prog = DefaultProgram
	}
	out := Probe{Program: prog, Messaging: "unknown"}
	setting, settingErr := readSetting(filepath.Join(p.Home, "settings.json"))
	path, err := presence.Find(prog)
	if err != nil {
		out.Err = err
		out.Messaging, out.MessagingWhy = messaging("", setting, settingErr, p.Home)
		return out
	}
	out.Path = path
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	cmd := exec.Command(path, "--version")
	cmd.WaitDelay = 2 * time.Second
	cmd.Env = append(os.Environ(), "QWEN_HOME="+p.Home, "NO_COLOR=1")
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if err := procgroup.Run(ctx, cmd); err != nil {
		out.Err = fmt.Errorf("run %s --version: %w", path, err)
	} else {
		out.Version, _, _ = strings.Cut(strings.TrimSpace(stdout.String()), "\n")
	}
	out.Messaging, out.MessagingWhy = messaging(out.Version, setting, settingErr, p.Home)
	return out
}

// maxSettingsBytes caps how much of settings.json is read (1 MiB).
const maxSettingsBytes = 1 << 20

// readSetting returns agents.crossSessionMessaging (nil when unset). The
// file is read with harnessfile.Read: a FIFO or symlink at the path is an
// error, never waited on or followed.
func readSetting(path string) (*bool, error) {
	raw, _, err := harnessfile.Read(path, maxSettingsBytes)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s struct {
		Agents struct {
			CrossSessionMessaging *bool `json:"crossSessionMessaging"`
		} `json:"agents"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("%s is not JSON: %w", path, err)
	}
	return s.Agents.CrossSessionMessaging, nil
}

// messaging decides on/off/unknown and says why.
func messaging(version string, setting *bool, settingErr error, home string) (string, string) {
	settings := filepath.Join(home, "settings.json")
	if settingErr != nil {
		return "unknown", "settings not read: " + settingErr.Error()
	}
	if setting != nil {
		if *setting {
			return "on", "agents.crossSessionMessaging is true in " + settings
		}
		return "off", "agents.crossSessionMessaging is false in " + settings
	}
	major, minor, ok := majorMinor(version)
	switch {
	case !ok:
		return "unknown", "agents.crossSessionMessaging unset and the version unknown (on by default from 0.24.0)"
	case major > 0 || minor >= 24:
		return "on", "default in Qwen Code " + version + " (agents.crossSessionMessaging unset)"
	case minor == 23:
		return "off", "default in Qwen Code " + version + ": opt-in; set agents.crossSessionMessaging to true in " + settings + " and restart sessions"
	default:
		return "off", "Qwen Code " + version + " has no cross-session inbox (0.23.0 added it)"
	}
}

func majorMinor(v string) (int, int, bool) {
	parts := strings.SplitN(strings.TrimPrefix(strings.TrimSpace(v), "v"), ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	return major, minor, err1 == nil && err2 == nil
}
