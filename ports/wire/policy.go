package wire

import "github.com/peerctl/peerctl/domain"

// PolicyRule is one rule of `policy list --json` and `policy check
// --json` (docs/OUTPUT.md#peerctl-policy-list---json). Number is its place in the
// file, from 1; 0 for a default rule (Default: its place among the
// defaults, from 1). Harness, Host and Cwd are "" when the rule does not
// narrow by them. Rule is the whole rule in the file's words.
type PolicyRule struct {
	Number  int    `json:"number"`
	Default int    `json:"default"`
	Action  string `json:"action"`
	From    string `json:"from"`
	To      string `json:"to"`
	Harness string `json:"harness"`
	Host    string `json:"host"`
	Cwd     string `json:"cwd"`
	Rule    string `json:"rule"`
}

// PolicyRuleOf is r as PolicyRule, number and def as in PolicyRule.
func PolicyRuleOf(r domain.Rule, number, def int) PolicyRule {
	return PolicyRule{Number: number, Default: def, Action: r.Action.String(), From: r.From.String(), To: r.To.Glob(),
		Harness: r.To.Harness(), Host: r.To.Host(), Cwd: r.To.Cwd(), Rule: r.String()}
}

// PolicyList is `policy list --json`: the file (File; Exists false when
// there is none), its rules in order, then the defaults that follow them.
type PolicyList struct {
	File     string       `json:"file"`
	Exists   bool         `json:"exists"`
	Rules    []PolicyRule `json:"rules"`
	Defaults []PolicyRule `json:"defaults"`
}

// PolicyCheck is `policy check --json`: the decision (allow, hold or
// deny), the rule that decides, the sender and target as the policy saw
// them, Unsure (decided on a fact peerctl could not know, read the safe
// way) and Why, the decision in one line.
type PolicyCheck struct {
	Action string     `json:"action"`
	Rule   PolicyRule `json:"rule"`
	From   string     `json:"from"`
	To     string     `json:"to"`
	Unsure bool       `json:"unsure"`
	Why    string     `json:"why"`
}
