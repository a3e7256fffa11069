package serve

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/internal/wiring"
	"github.com/peerctl/peerctl/ports/wire"
)

// storedV2 is a request as the outbox kept it before schema 3: the
// sender's command line after the program's name, and its whole
// environment.
type storedV2 struct {
	Argv []string `json:"argv"`
	Env  []string `json:"env"`
}

// v2Wait is what --wait and --await-reply alone meant in the release that
// wrote schema-2 requests.
const v2Wait = 10 * time.Minute

// upgradeV2 turns a schema-2 request (storedV2) into the order it asked
// for, as wiring.Store.Open takes it: send's flags read from its
// command line (as that release defined them), and of its environment only
// what a send's settings stand for (each harness flag's variable, each
// harness's carried settings, $PEERCTL_HOST_TIMEOUT, $PEERCTL_SSH); the
// rest, secrets included, is
// dropped. The message's own columns keep its address, text, key and host.
func upgradeV2(request []byte) ([]byte, error) {
	var old storedV2
	if err := json.Unmarshal(request, &old); err != nil {
		return nil, err
	}
	if len(old.Argv) == 0 {
		return nil, errors.New("no command line")
	}
	env := map[string]string{}
	for _, kv := range old.Env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	fs := pflag.NewFlagSet("send", pflag.ContinueOnError)
	fs.ParseErrorsAllowlist.UnknownFlags = true
	fs.SetOutput(io.Discard)
	transport := fs.String("transport", "", "")
	timeout := fs.Duration("timeout", defaultSendTimeout, "")
	from := fs.String("from", "", "")
	confirm := fs.Duration("confirm-timeout", app.DefaultConfirmTimeout, "")
	noConfirm := fs.Bool("no-confirm", false, "")
	require := fs.Bool("require-confirm", false, "")
	wait := fs.Duration("wait", 0, "")
	fs.Lookup("wait").NoOptDefVal = v2Wait.String()
	await := fs.Duration("await-reply", 0, "")
	fs.Lookup("await-reply").NoOptDefVal = v2Wait.String()
	durable := fs.Duration("durable", 0, "")
	fs.Lookup("durable").NoOptDefVal = app.DefaultTTL.String()
	key := fs.String("key", "", "")
	fs.Bool("json", false, "")
	fs.Bool("dry-run", false, "")
	fs.StringArray("host", nil, "")
	fs.Int("stdin-bytes", -1, "")
	fs.Int("hello", 0, "")
	fs.String("debug", "", "")
	fs.Lookup("debug").NoOptDefVal = "send"
	set := wire.Settings{Flags: map[string]string{}}
	given := map[string]*string{}
	for _, p := range wiring.Plugins() {
		for _, f := range p.Flags {
			given[f.Name] = fs.String(f.Name, "", "")
		}
	}
	if err := fs.Parse(old.Argv); err != nil {
		return nil, err
	}
	for _, p := range wiring.Plugins() {
		for _, f := range p.Flags {
			if v := *given[f.Name]; v != "" {
				set.Flags[f.Name] = v
			} else if v := env[f.Env]; v != "" {
				set.Flags[f.Name] = v
			}
		}
	}
	wiring.Plugins().Carry(set.Flags, func(k string) string { return env[k] })
	if d, err := time.ParseDuration(env["PEERCTL_HOST_TIMEOUT"]); err == nil && d > 0 {
		set.HostTimeout = d
	}
	set.SSH = env["PEERCTL_SSH"]
	ttl := *durable
	if ttl <= 0 && *key != "" {
		ttl = app.DefaultTTL
	}
	return storedOrder(wire.SendOrder{Query: wire.SendQuery{Transport: *transport, From: *from, Timeout: *timeout, ConfirmTimeout: *confirm,
		Wait: *wait, AwaitReply: *await, NoConfirm: *noConfirm, RequireConfirm: *require}, Durable: ttl, Settings: set})
}
