package clockbound

import (
	"syscall"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

type syscallStat = syscall.Stat_t

func stat(path string, st *syscall.Stat_t) error { return syscall.Stat(path, st) }

func syscallUmask(m int) int { return syscall.Umask(m) }

func prometheusRegistry(t testing.TB, p *Publisher) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(p.Collector()); err != nil {
		t.Fatal(err)
	}
	return reg
}
