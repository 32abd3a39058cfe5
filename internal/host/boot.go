package host

import (
	"fmt"
	"os"
	"strings"
)

// BootIDPath is where Linux tells the boot id.
const BootIDPath = "/proc/sys/kernel/random/boot_id"

// BootID reads this boot's id: what the journal and the stepdown policy's
// state carry so that a restart in the same boot carries on and a reboot
// does not.
func BootID() (string, error) {
	b, err := os.ReadFile(BootIDPath)
	if err != nil {
		return "", fmt.Errorf("reading the boot id: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}
