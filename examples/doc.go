// Package examples holds no Go code: its tests run the example stepdown
// clients in examples/java and examples/python against a real server, with a
// drill, and the Python reader of the bounded-time segment in
// examples/boundedtime against segments clockwatch's writer wrote, so that
// the examples shipped to users keep working.
package examples
