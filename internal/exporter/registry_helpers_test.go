package exporter

import "github.com/prometheus/client_golang/prometheus"

// NewPedanticRegistry is NewRegistry with client_golang's pedantic checks,
// for tests.
func NewPedanticRegistry(cs ...prometheus.Collector) (*prometheus.Registry, error) {
	return register(prometheus.NewPedanticRegistry(), cs)
}
