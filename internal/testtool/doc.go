// Package testtool holds helpers shared by clockwatch's integration tests:
// finding the outside tools they need (chronyd, promtool, qemu, ...) and
// failing, not skipping, when one is missing under CI; the format of the
// daemon replies captured into testdata/.
package testtool
