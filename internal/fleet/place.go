package fleet

import (
	"crypto/sha256"
	"encoding/hex"
)

// placeOf names the place a service of stateDir runs in, beside its host
// name: this boot of this machine (bootID) and the folder itself
// (folderID). Tests replace it.
var placeOf = func(stateDir string) string { return bootID() + "\x00" + folderID(stateDir) }

// owner is the presence Owner of a service of stateDir on host: one
// place on one boot. Cloned machines (one host name, one home) differ by
// their boot ids, and a folder bind-mounted over the same path in another
// mount namespace by its device and inode, so neither takes the other's
// name; a service started again in the same place within a boot (after a
// crash) has the same owner and takes its name back at once. After a
// reboot the boot id differs: the name is free TTL after the last
// refresh before it.
func owner(host, stateDir string) string {
	sum := sha256.Sum256([]byte(host + "\x00" + stateDir + "\x00" + placeOf(stateDir)))
	return hex.EncodeToString(sum[:16])
}
