package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/readiness/gate"
)

// Env is a cluster to run scenarios on and how to run drainers there.
type Env struct {
	// Kubeconfig is the cluster's kubeconfig file (for drainer processes);
	// Config and Client are the harness's own (uncounted) access.
	Kubeconfig string
	Config     *rest.Config
	Client     kubernetes.Interface
	// Drainer runs udrain in a child process.
	Drainer DrainerProcess
	// QPS and Burst are the client limits of both drainers, udrain's and
	// kubectl's (udrain's CLI defaults).
	QPS   float32
	Burst int
	// LogDir receives the drainers' logs, the pod timelines and udrain's
	// events of each scenario.
	LogDir string
	// DumpPods also writes every recorded pod event in full (JSON lines)
	// into LogDir, for finding out what a timeline line hides.
	DumpPods bool
	// Profile makes each drainer process write a CPU profile into LogDir.
	Profile bool
	// Logf reports progress.
	Logf func(format string, args ...any)

	pools atomic.Int32
}

// poolName names a scenario's pools: prefix and a number of its own, so
// that a pool never meets the terminating namespace of an earlier one.
func (e *Env) poolName(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, e.pools.Add(1))
}

// countedClient returns a client of its own whose every request is
// counted.
func (e *Env) countedClient() (kubernetes.Interface, *RequestCounter, error) {
	cfg := rest.CopyConfig(e.Config)
	cfg.QPS, cfg.Burst = e.QPS, e.Burst
	counter := &RequestCounter{}
	counter.Wrap(cfg)
	c, err := kubernetes.NewForConfig(cfg)
	return c, counter, err
}

// runDrainer runs a udrain job in a child process whose log goes to
// LogDir/name.log.
func (e *Env) runDrainer(ctx context.Context, name string, job DrainerJob) (*DrainerReport, error) {
	job.Kubeconfig, job.QPS, job.Burst = e.Kubeconfig, e.QPS, e.Burst
	p := e.Drainer
	if e.LogDir != "" {
		if err := os.MkdirAll(e.LogDir, 0o755); err != nil {
			return nil, err
		}
		p.LogFile = filepath.Join(e.LogDir, name+".log")
		if e.Profile {
			job.CPUProfile = filepath.Join(e.LogDir, name+".cpu.pprof")
		}
	}
	return p.Run(ctx, job)
}

// StartGateController runs udrain's readiness-gate controller over every
// namespace, as a user would deploy it, until the returned stop is called.
// Its errors go to the context's logger.
func (e *Env) StartGateController(ctx context.Context) (stop func() error, err error) {
	c, err := gate.New(e.Client, gate.Options{})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(quietLogger(ctx))
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	return func() error {
		cancel()
		if err := <-done; err != nil {
			return fmt.Errorf("readiness-gate controller: %w", err)
		}
		return nil
	}, nil
}

func (e *Env) logf(format string, args ...any) {
	if e.Logf != nil {
		e.Logf(format, args...)
	}
}

// quietLogger keeps the info logs of the harness's own components (the
// gate controller) off the terminal; errors still show.
func quietLogger(ctx context.Context) context.Context {
	return klog.NewContext(ctx, klog.Background().V(10))
}

// saveTimeline writes a pool's pod timeline (and, when given, udrain's
// events) into LogDir, for finding out where time went or what broke.
func (e *Env) saveTimeline(name string, p *Pool, events []eviction.Event) {
	if e.LogDir == "" || p.Recorder == nil {
		return
	}
	if err := os.MkdirAll(e.LogDir, 0o755); err != nil {
		e.logf("%v", err)
		return
	}
	var b bytes.Buffer
	if err := p.Recorder.WriteTimeline(&b); err != nil {
		e.logf("timeline of %s: %v", p.Name, err)
	}
	if err := os.WriteFile(filepath.Join(e.LogDir, name+"-pods.txt"), b.Bytes(), 0o644); err != nil {
		e.logf("%v", err)
	}
	if e.DumpPods {
		b.Reset()
		enc := json.NewEncoder(&b)
		for _, ev := range p.Recorder.Events() {
			if err := enc.Encode(ev); err != nil {
				e.logf("%v", err)
				break
			}
		}
		if err := os.WriteFile(filepath.Join(e.LogDir, name+"-pods.jsonl"), b.Bytes(), 0o644); err != nil {
			e.logf("%v", err)
		}
	}
	if events == nil {
		return
	}
	b.Reset()
	for _, ev := range events {
		phase := "-"
		if ev.Phase != 0 {
			phase = ev.Phase.String()
		}
		fmt.Fprintf(&b, "%s %-16s %-8s %s %s %s\n", ev.Time.Format("15:04:05.000"), ev.Type, phase, ev.Domain, ev.Pod+ev.Node, ev.Message)
	}
	if err := os.WriteFile(filepath.Join(e.LogDir, name+"-events.txt"), b.Bytes(), 0o644); err != nil {
		e.logf("%v", err)
	}
}
