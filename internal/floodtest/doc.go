// Package floodtest floods a real clockwatch the way other local users can
// (connect/close loops and never-reading subscribers from other uids,
// /metrics and TLS-handshake floods) and measures what a good root
// subscriber sees meanwhile, against its own baseline in the same run:
// for the isolation test of the fault suite and `make bench-isolation`.
package floodtest
