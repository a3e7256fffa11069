package fleet

import "golang.org/x/sys/unix"

// bootID is the kernel's boot session id (sysctl kern.bootsessionuuid, a
// UUID made at each boot, macOS 10.13 and later); "" where there is none.
func bootID() string {
	id, err := unix.Sysctl("kern.bootsessionuuid")
	if err != nil {
		return ""
	}
	return id
}
