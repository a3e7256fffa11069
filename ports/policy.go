package ports

import "github.com/peerctl/peerctl/domain"

// Policy is the trust policy's rules as a person keeps them
// (docs/POLICY.md): the policy file adapter implements it.
type Policy interface {
	// Rules reads the rules, in order, fresh on every call (an edit
	// counts from the next message). No file is no rules (nil, no error):
	// the defaults (domain.DefaultRules) decide. A file that cannot be
	// used (malformed, naming the line; a symlink; another user's; writable
	// by group or others) is an error, and then nothing is sent.
	Rules() ([]domain.Rule, error)
	// Save writes rules whole, in order, replacing the file's.
	Save(rules []domain.Rule) error
	// Path is the file the rules are kept in, for a person to read.
	Path() string
}
