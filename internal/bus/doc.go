// Package bus fans events out to in-process subscribers without ever
// blocking the publisher: each subscriber has a buffered channel, and an
// event that does not fit in a full subscriber's buffer is dropped for that
// subscriber and counted.
package bus
