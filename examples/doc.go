// Package examples holds no Go code: its test runs the example stepdown
// clients in examples/java and examples/python against a real server, with a
// drill, so that the examples shipped to users keep working.
package examples
