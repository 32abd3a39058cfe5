// Package examples holds no Go code: its test runs the Python reader of the
// bounded-time segment (examples/boundedtime/boundedtime.py) as its own
// process against segments clockwatch's writer wrote, so that the example
// shipped to users keeps working. (The stepdown clients are packages under
// clients/; examples/leader is its own module.)
package examples
