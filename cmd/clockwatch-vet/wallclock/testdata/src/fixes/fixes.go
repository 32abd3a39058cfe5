// Package fixes holds the findings that have a mechanical fix.
package fixes

import "time"

func seconds(start time.Time) int64 {
	return time.Now().Unix() - start.Unix() // want `subtracts two wall-clock readings`
}

func millis() int64 {
	start := time.Now()
	end := time.Now()
	return end.UnixMilli() - start.UnixMilli() // want `subtracts two wall-clock readings`
}

func since() time.Duration {
	start := time.Now()
	return time.Now().Sub(start.UTC()) // want `has lost its monotonic reading`
}

func callers() { seconds(time.Now()) }
