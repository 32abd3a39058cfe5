package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/exporter-toolkit/web"

	"github.com/clockwatch/clockwatch/internal/exporter"
)

// listen opens the HTTP listeners up front, so that a port in use fails the
// start (not a task later) and so that the log names the bound address even
// for port 0. With --web.systemd-socket they are the sockets systemd passed,
// less the stepdown socket.
func (d *Daemon) listen() ([]net.Listener, error) {
	if d.opts.Web == nil || d.opts.Web.WebListenAddresses == nil {
		return nil, nil
	}
	if d.opts.Web.WebSystemdSocket != nil && *d.opts.Web.WebSystemdSocket {
		return d.activatedWebListeners()
	}
	var ls []net.Listener
	for _, addr := range *d.opts.Web.WebListenAddresses {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			for _, o := range ls {
				o.Close()
			}
			return nil, fmt.Errorf("listening for HTTP on %s: %w", addr, err)
		}
		ls = append(ls, l)
	}
	return ls, nil
}

func (d *Daemon) handler(reg prometheus.Gatherer) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(d.opts.MetricsPath, exporter.MetricsHandler(reg, slog.NewLogLogger(d.logger.Handler(), slog.LevelError)))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	// Readiness (a Kubernetes readinessProbe): ready once every source the
	// stepdown state waits for has reported, so that a rolled-out pod is
	// not counted available while its state is still unknown.
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if d.announcer != nil && d.announcer.Starting() {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "starting: waiting for every time source's first report")
			return
		}
		fmt.Fprintln(w, "ok")
	})
	if d.opts.MetricsPath != "/" {
		landing, err := web.NewLandingPage(web.LandingConfig{
			Name:        "clockwatch",
			Description: "Watches this machine's clocks: steps, offset, time daemons, and the stepdown socket for lock holders.",
			Version:     buildVersion(),
			// No pprof links: pprof is not served. A 60 s CPU profile on
			// the metrics port is a cost anyone who reaches it could
			// impose, and it would need a write timeout of minutes.
			Profiling: "false",
			Links: []web.LandingLinks{
				{Address: d.opts.MetricsPath, Text: "Metrics"},
				{Address: "/healthz", Text: "Liveness (the process answers; the clock's health is in the metrics and clockwatch status)"},
				{Address: "/readyz", Text: "Readiness (every time source has reported)"},
			},
		})
		if err == nil {
			mux.Handle("/", landing)
		}
	}
	return mux
}

func (d *Daemon) maxHTTPConns() int {
	if d.opts.MaxHTTPConns > 0 {
		return d.opts.MaxHTTPConns
	}
	return maxHTTPConns
}

func (d *Daemon) serveHTTP(ctx context.Context, listeners []net.Listener, h http.Handler) error {
	if d.opts.Web == nil {
		<-ctx.Done()
		return nil
	}
	if f := d.opts.Web.WebConfigFile; f != nil {
		if err := checkWebConfig(*f); err != nil {
			return err
		}
	}
	limit := newConnLimiter(d.maxHTTPConns())
	limit.busy = d.opts.Procs.Busy
	if listeners == nil {
		srv := newHTTPServer(h, limit)
		errc := make(chan error, 1)
		go func() { errc <- web.ListenAndServe(srv, d.opts.Web, d.logger) }()
		return waitHTTP(ctx, errc, []*http.Server{srv})
	}
	// One server per listener: exporter-toolkit's ServeMultiple shares one
	// and each of its goroutines rewrites the server's Handler. With a web
	// config (basic auth), each server's auth handler is put behind the
	// shared authGate, so that wrong passwords cannot take the CPU.
	var gate *authGate
	if f := d.opts.Web.WebConfigFile; f != nil && *f != "" {
		gate = newAuthGate(authSlots, authSlotWait, authHoldFactor)
		gate.busy = d.opts.Procs.Busy
	}
	errc := make(chan error, len(listeners))
	servers := make([]*http.Server, len(listeners))
	for i, l := range listeners {
		srv := newHTTPServer(h, limit)
		servers[i] = srv
		l = limit.wrap(l)
		if gate != nil {
			l = &gatedListener{Listener: l, install: func() { srv.Handler = gate.in(srv.Handler) }}
		}
		go func() { errc <- web.Serve(l, srv, d.opts.Web, d.logger) }()
	}
	return waitHTTP(ctx, errc, servers)
}

// waitHTTP waits for a server to fail or ctx to end, then shuts every server
// down.
func waitHTTP(ctx context.Context, errc <-chan error, servers []*http.Server) error {
	select {
	case err := <-errc:
		for _, srv := range servers {
			srv.Close()
		}
		return fmt.Errorf("serving HTTP: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var errs []error
	for _, srv := range servers {
		if err := srv.Shutdown(shutdownCtx); err != nil {
			errs = append(errs, fmt.Errorf("stopping HTTP server: %w", err))
		}
	}
	for range servers {
		if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, fmt.Errorf("serving HTTP: %w", err))
		}
	}
	return errors.Join(errs...)
}
