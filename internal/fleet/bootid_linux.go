package fleet

import (
	"os"
	"strings"
)

// bootID is the kernel's boot id (/proc/sys/kernel/random/boot_id, a
// UUID made at each boot, so distinct on each clone of a machine too);
// "" where there is none.
func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
