package sshhost

// SharesConnections reports whether this platform's OpenSSH client shares
// one connection per host between calls (ControlMaster); Windows' does not:
// every call connects afresh.
const SharesConnections = false

// controlOptions: Windows' OpenSSH client has no connection sharing.
func controlOptions(func(string) string) (dir string, opts []string, why string) {
	return "", nil, "connection sharing off: the Windows OpenSSH client has no ControlMaster"
}
