package exporter

import "github.com/prometheus/client_golang/prometheus"

// What the collectors of the sources share: the reading of a poller's last
// result and the description of each metric.

// desc describes a metric with no constant labels: what every collector's
// constructor calls for each of its metrics.
func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

// Snapshotter gives a poller's last result, S: what every collector of a
// source reads (each names its own, ChronySnapshotter and the others).
type Snapshotter[S any] interface {
	Snapshot() S
}
