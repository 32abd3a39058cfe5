// Package guest holds what the programs that run inside clockwatch's test VM
// share: the check that they really are inside it, and the result lines they
// print on the serial console for the host-side test to parse.
//
// It imports only the standard library and x/sys, so the static guest binaries
// stay small, and never the testing package.
package guest
