package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"k8s.io/klog/v2"
)

// metricsFlag is --metrics-address: serve Prometheus metrics on /metrics
// there; off when empty.
type metricsFlag struct{ address string }

func (f *metricsFlag) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.address, "metrics-address", "", "Serve Prometheus metrics on http://ADDRESS/metrics (HOST:PORT, e.g. :9090), a listener of its own; empty: no metrics (docs/METRICS.md)")
}

// registry returns the registry to register metrics on: with the Go
// runtime's and the process's when they are served.
func (f *metricsFlag) registry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	if f.address != "" {
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	return reg
}

// serve opens the listener and serves reg's metrics until ctx ends;
// nothing without an address.
func (f *metricsFlag) serve(ctx context.Context, o *options, reg *prometheus.Registry) error {
	if f.address == "" {
		return nil
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	return serveOwnListener(ctx, o, "--metrics-address", f.address, mux, "metrics on http://%s/metrics")
}

// healthFlag is --health-address: serve a controller's /healthz and
// /readyz there, for the kubelet's probes; off when empty.
type healthFlag struct{ address string }

func (f *healthFlag) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.address, "health-address", "", "Serve the liveness check on http://ADDRESS/healthz and the readiness check on /readyz (HOST:PORT, e.g. :8081), a listener of its own; empty: none")
}

// serve serves h until ctx ends; nothing without an address.
func (f *healthFlag) serve(ctx context.Context, o *options, h http.Handler) error {
	if f.address == "" {
		return nil
	}
	return serveOwnListener(ctx, o, "--health-address", f.address, h, "health checks on http://%[1]s/healthz and http://%[1]s/readyz")
}

// serveOwnListener opens a listener on address (the value of flag) and
// serves h there until ctx ends, saying on stderr "serving " and what,
// with the listener's address for its %s.
func serveOwnListener(ctx context.Context, o *options, flag, address string, h http.Handler, what string) error {
	ln, err := o.cfg.Listen("tcp", address)
	if err != nil {
		return usageErrorf("%s=%q: %v", flag, address, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	logger := klog.FromContext(ctx)
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error(err, "Serving failed", "flag", flag, "address", ln.Addr().String())
		}
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	fmt.Fprintf(o.streams.ErrOut, "serving "+what+"\n", ln.Addr())
	return nil
}
