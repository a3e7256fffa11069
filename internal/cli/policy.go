package cli

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/wire"
)

func newPolicyCmd(f *factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Decide who may message which session: allow, hold or deny",
		Long: helpLong(`Keep the trust policy: rules that say who may message which session`, "policy") + `

A rule names a SENDER, a TARGET and allow, hold or deny; the first rule that matches a
message decides. After the rules come the defaults: a message from another machine on the
bus (node:*) is held, everything else is allowed, as without a policy.

SENDER (--from): cli, mcp, relay, dashboard, host:DEST, node:NAME or *; mcp:GLOB and
relay:GLOB only when run by a session whose name or id matches GLOB (found from the process
tree, as whoami finds it). TARGET (--to): a session name or id glob (*, ?, [a-z]) or *,
narrowed by --harness, --host DEST and --cwd FOLDER (working in it or below).

deny refuses with not_allowed (exit 17), naming the rule: nothing is stored or sent. hold
keeps the message in the outbox for your approval (peerctl outbox approve ID, or deny ID),
nothing reaching the target; the send exits 0 with its id. The rules are in
$XDG_CONFIG_HOME/peerctl/policy, one a line, to edit by hand too (docs/POLICY.md).`,
		Example: `  peerctl policy add --from mcp --to 'prod-*' deny
  peerctl policy add --from 'mcp:reviewer-*' --to 'prod-*' --at 1 allow
  peerctl policy add --from node:build-box --to '*' --cwd /home/dev/src allow
  peerctl policy list
  peerctl policy check --from mcp:reviewer-1 --to prod-api
  peerctl policy rm 2`,
	}
	cmd.AddCommand(newPolicyAddCmd(f), newPolicyListCmd(f), newPolicyRmCmd(f), newPolicyCheckCmd(f), newPolicyNATSConfigCmd(f), newPolicyNATSSetupCmd(f))
	return cmd
}

// policy is the trust policy's port (the rule file).
func (c *factory) policy() (ports.Policy, error) {
	var p ports.Policy
	if _, err := c.graph(options{readOnly: true, quiet: true}, &p); err != nil {
		return nil, err
	}
	return p, nil
}

// policyOptions are the policy commands' requests and what they need:
// the streams, the rule file, and (check) the use cases.
type policyOptions struct {
	io      *iostreams
	policy  func() (ports.Policy, error)
	service func(options, ...any) (*app.Service, error)
	json    bool
	// rule and at are add's rule and --at; number is rm's N.
	rule   domain.Rule
	at     int
	number int
	// sender, address and dest are check's --from, --to and --host.
	sender  domain.Sender
	address string
	dest    domain.Dest
}

func newPolicyOptions(f *factory) *policyOptions {
	return &policyOptions{io: f.io, policy: f.policy, service: f.service}
}

// rules opens the trust policy and reads its rules, in order.
func (opts *policyOptions) rules() (ports.Policy, []domain.Rule, error) {
	p, err := opts.policy()
	if err != nil {
		return nil, nil, err
	}
	rules, err := p.Rules()
	return p, rules, err
}

// requireFlags is a usage error naming the first of names not given on
// cmd's line, with usage (the command's synopsis) as its hint.
func requireFlags(cmd *cobra.Command, usage string, names ...string) error {
	for _, name := range names {
		if !cmd.Flags().Changed(name) {
			return usageError{fmt.Errorf("--%s is required (%s)", name, usage)}
		}
	}
	return nil
}

func newPolicyAddCmd(f *factory) *cobra.Command {
	opts := newPolicyOptions(f)
	var from, to, harness, host, cwd string
	cmd := &cobra.Command{
		Use:   "add --from SENDER --to TARGET [flags] allow|hold|deny",
		Short: "Add a rule (last, or at --at N)",
		Long:  helpLong(`Add a rule to the trust policy: last, or at place N (--at N), since the first rule that matches decides`, "policy-add"),
		Example: `  peerctl policy add --from mcp --to 'prod-*' deny
  peerctl policy add --from 'mcp:reviewer-*' --to 'prod-*' --at 1 allow
  peerctl policy add --from relay --to '*' --cwd /srv/prod hold`,
		Args:      policyAddArgs,
		ValidArgs: []cobra.Completion{"allow", "hold", "deny"},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireFlags(cmd, "peerctl policy add --from SENDER --to TARGET allow|hold|deny", "from", "to"); err != nil {
				return err
			}
			var err error
			if opts.rule, err = domain.NewRule(args[0], from, to, harness, host, cwd); err != nil {
				return usageError{err}
			}
			f.started()
			return runPolicyAdd(opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&from, "from", "", "who sends: cli, mcp, relay, dashboard, host:DEST, node:NAME, mcp:GLOB, relay:GLOB, or *")
	fl.StringVar(&to, "to", "", "the target: a session name or id glob (*, ?, [a-z]), or *")
	fl.StringVar(&harness, "harness", "", "only sessions of this harness")
	fl.StringVar(&host, "host", "", "narrow TARGET to sessions on this host (`DEST`, as send --host names it); the rule is kept here")
	fl.StringVar(&cwd, "cwd", "", "only sessions working in this folder or below (absolute)")
	fl.IntVar(&opts.at, "at", 0, "put the rule at place N (1: first); default: last")
	return cmd
}

// policyAddArgs is policy add's one argument, the action. A rule in the
// form policy list and every "added rule" print it (deny from=* to=X) is
// answered with the command that adds it: its KEY=VALUE words are flags.
func policyAddArgs(cmd *cobra.Command, args []string) error {
	var words, flags []string
	var action string
	for _, a := range args {
		key, value, ok := strings.Cut(a, "=")
		if ok && cmd.Flags().Lookup(key) != nil {
			words = append(words, a)
			flags = append(flags, quotedFlag(key, value))
		} else {
			action = a
		}
	}
	if len(words) > 0 && action != "" {
		are := " are flags"
		if len(words) == 1 {
			are = " is a flag"
		}
		return usageError{fmt.Errorf("%s%s: peerctl policy add %s %s", strings.Join(words, " and "), are, strings.Join(append(flagsGiven(cmd), flags...), " "), action)}
	}
	return exactArgs(1)(cmd, args)
}

// policyCheckArgs: policy check takes no argument; one given without
// --to is answered with the command that checks it as the target.
func policyCheckArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 1 && !cmd.Flags().Changed("to") {
		return usageError{fmt.Errorf("the target is a flag: peerctl policy check %s", strings.Join(append(flagsGiven(cmd), quotedFlag("to", args[0])), " "))}
	}
	return noArgs(cmd, args)
}

// flagsGiven are the flags given to cmd, each as quotedFlag writes it
// (a boolean as --name, or --name=false).
func flagsGiven(cmd *cobra.Command) []string {
	var given []string
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if f.Value.Type() == "bool" {
			given = append(given, strings.TrimSuffix("--"+f.Name+"="+f.Value.String(), "=true"))
			return
		}
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				given = append(given, quotedFlag(f.Name, v))
			}
			return
		}
		given = append(given, quotedFlag(f.Name, f.Value.String()))
	})
	return given
}

// quotedFlag is --key 'value', the value quoted for a POSIX shell.
func quotedFlag(key, value string) string {
	return "--" + key + " '" + strings.ReplaceAll(value, "'", `'\''`) + "'"
}

// runPolicyAdd puts opts.rule in the policy: last, or at opts.at.
func runPolicyAdd(opts *policyOptions) error {
	p, rules, err := opts.rules()
	if err != nil {
		return err
	}
	at := opts.at
	if at < 0 || at > len(rules)+1 {
		return usageError{fmt.Errorf("--at %d: want 1 to %d (the policy has %d rules)", at, len(rules)+1, len(rules))}
	}
	n := len(rules) + 1
	if at > 0 {
		n = at
	}
	rules = slices.Insert(rules, n-1, opts.rule)
	if err := p.Save(rules); err != nil {
		return err
	}
	fmt.Fprintf(opts.io.errOut, "peerctl: added rule %d to %s: %s\n", n, safe(p.Path()), safe(opts.rule.String()))
	return nil
}

func newPolicyListCmd(f *factory) *cobra.Command {
	opts := newPolicyOptions(f)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the rules in order, numbered, then the defaults",
		Long:  helpLong(`List the trust policy's rules in the order they decide, numbered, then the defaults that follow them`, "policy-list"),
		Example: `  peerctl policy list
  peerctl policy list --jq '.rules[] | "\(.number) \(.rule)"'
  peerctl policy list --jq '.defaults'`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.started()
			f.io.jsonOut = opts.json
			return runPolicyList(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "print one JSON object: {file, exists, rules, defaults} (docs/OUTPUT.md)")
	return cmd
}

// runPolicyList prints the rules in order, numbered, then the defaults.
func runPolicyList(opts *policyOptions) error {
	p, rules, err := opts.rules()
	if err != nil {
		return err
	}
	_, statErr := os.Lstat(p.Path())
	out := wire.PolicyList{File: p.Path(), Exists: statErr == nil, Rules: []wire.PolicyRule{}}
	for i, r := range rules {
		out.Rules = append(out.Rules, wire.PolicyRuleOf(r, i+1, 0))
	}
	for i, r := range domain.DefaultRules() {
		out.Defaults = append(out.Defaults, wire.PolicyRuleOf(r, 0, i+1))
	}
	if opts.json {
		return opts.io.writeJSON(out)
	}
	if !out.Exists {
		fmt.Fprintf(opts.io.errOut, "peerctl: no policy file (%s): the defaults alone decide (peerctl policy add)\n", safe(out.File))
	}
	var t table
	t.add("#", "ACTION", "FROM", "TO", "NARROWED BY")
	row := func(n string, r wire.PolicyRule) {
		narrow := ""
		for _, kv := range [][2]string{{"harness", r.Harness}, {"host", r.Host}, {"cwd", r.Cwd}} {
			if kv[1] != "" {
				narrow += kv[0] + "=" + kv[1] + " "
			}
		}
		t.add(n, r.Action, safe(r.From), safe(r.To), cell(safe(narrow)))
	}
	for _, r := range out.Rules {
		row(strconv.Itoa(r.Number), r)
	}
	for _, r := range out.Defaults {
		row("default "+strconv.Itoa(r.Default), r)
	}
	return t.write(opts.io.out)
}

func newPolicyRmCmd(f *factory) *cobra.Command {
	opts := newPolicyOptions(f)
	cmd := &cobra.Command{
		Use:   "rm N",
		Short: "Remove rule N (as policy list numbers it)",
		Long:  helpLong(`Remove rule N of the trust policy, N as policy list numbers it; the rules after it move up`, "policy-rm"),
		Example: `  peerctl policy list
  peerctl policy rm 2
  peerctl policy rm 1 && peerctl policy list`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := strconv.Atoi(args[0])
			if err != nil || n < 1 {
				return usageError{fmt.Errorf("rule %q: want its number (1, 2, ...) as policy list shows it", args[0])}
			}
			opts.number = n
			f.started()
			return runPolicyRm(opts)
		},
	}
	return cmd
}

// runPolicyRm removes rule opts.number from the policy.
func runPolicyRm(opts *policyOptions) error {
	n := opts.number
	p, rules, err := opts.rules()
	if err != nil {
		return err
	}
	if n > len(rules) {
		has := fmt.Sprintf("%d rules", len(rules))
		switch len(rules) {
		case 0:
			has = "no rules"
		case 1:
			has = "1 rule"
		}
		return domain.Refuse(domain.ReasonNotFound, "rule %d: the policy has %s (peerctl policy list; a default rule cannot be removed: add one before it)", n, has)
	}
	gone := rules[n-1]
	if err := p.Save(slices.Delete(rules, n-1, n)); err != nil {
		return err
	}
	fmt.Fprintf(opts.io.errOut, "peerctl: removed rule %d from %s: %s\n", n, safe(p.Path()), safe(gone.String()))
	return nil
}

func newPolicyCheckCmd(f *factory) *cobra.Command {
	opts := newPolicyOptions(f)
	var from, to string
	var hosts []string
	cmd := &cobra.Command{
		Use:   "check --from SENDER --to ADDRESS [--host DEST]",
		Short: "Say which rule decides a message, and why",
		Long:  helpLong(`Say what the trust policy decides for a message from SENDER to the session ADDRESS names, which rule decides, and why; nothing is sent`, "policy-check"),
		Example: `  peerctl policy check --from mcp:reviewer-1 --to prod-api
  peerctl policy check --from cli --to build --host build-box
  peerctl policy check --from node:laptop --to dev-1 --jq .action`,
		Args: policyCheckArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "peerctl policy check --from SENDER --to ADDRESS", "from", "to"); err != nil {
				return err
			}
			var err error
			if opts.sender, err = domain.ParseSender(from); err != nil {
				return usageError{err}
			}
			if opts.dest, opts.address, err = oneHost(hosts, to); err != nil {
				return err
			}
			f.started()
			f.io.jsonOut = opts.json
			return runPolicyCheck(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&from, "from", "", "who sends: cli, mcp, relay, dashboard (session unknown), mcp:NAME, relay:NAME, host:DEST, node:NAME")
	fl.StringVar(&to, "to", "", "the target: a session's address, as send takes it")
	fl.BoolVar(&opts.json, "json", false, "print one JSON object: {action, rule, from, to, unsure, why} (docs/OUTPUT.md)")
	fl.StringArrayVar(&hosts, "host", nil, "the target's host (`DEST`, as send --host names it); this machine's policy decides, here")
	return cmd
}

// runPolicyCheck says what the policy decides for a message from
// opts.sender to opts.address on opts.dest, and why.
func runPolicyCheck(ctx context.Context, opts *policyOptions) error {
	svc, err := opts.service(options{readOnly: true})
	if err != nil {
		return err
	}
	d, err := svc.Check(ctx, opts.sender, opts.address, opts.dest)
	if err != nil {
		return err
	}
	out := wire.PolicyCheck{Action: d.Action.String(), Rule: wire.PolicyRuleOf(d.Rule, d.Number, d.Default),
		From: d.From.String(), To: d.To.String(), Unsure: d.Unsure, Why: d.Why()}
	if opts.json {
		return opts.io.writeJSON(out)
	}
	fmt.Fprintln(opts.io.out, safe(out.Why))
	return nil
}
