package config

import (
	"errors"

	"github.com/clockwatch/clockwatch/internal/policy"
	"github.com/clockwatch/clockwatch/internal/transport/socket"
)

// Stepdown is the `stepdown:` section: the socket's settings (package
// server's, inline) and the policy's (package policy's, inline: hold_down
// and triggers), under one key as they always were. The policy's belong to
// the announcer, which runs whichever transports are on; the socket's to the
// socket alone.
type Stepdown struct {
	socket.Config `yaml:",inline"`
	// Policy is stepdown.hold_down and stepdown.triggers.
	Policy policy.Config `yaml:",inline"`
}

// DefaultStepdown returns the socket's defaults and the policy's.
func DefaultStepdown() Stepdown {
	return Stepdown{Config: socket.DefaultConfig(), Policy: policy.DefaultConfig()}
}

// Validate checks both parts; each error names its field by YAML path.
func (s Stepdown) Validate() error {
	return errors.Join(s.Config.Validate(), s.Policy.Validate("stepdown"))
}
