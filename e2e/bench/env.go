package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/udrain/udrain/e2e/testbed"
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
	// Identities, if set, gives each drainer a ServiceAccount of its own,
	// and AuditLog reads the API server's audit log of a user (the
	// testbed's [testbed.Testbed.AuditLog]): each drainer's request count
	// is then checked against the audit log ([AuditCheck]).
	Identities *Identities
	AuditLog   func(ctx context.Context, user string) ([]testbed.AuditRequest, error)
	// ComponentPIDs, if set, names the testbed's control-plane processes
	// (the testbed's [testbed.Testbed.ComponentPIDs]), whose CPU the fleet
	// scenario measures ([Load]).
	ComponentPIDs func(ctx context.Context) (map[string]int, error)

	pools atomic.Int32
}

// poolName names a scenario's pools: prefix and a number of its own, so
// that a pool never meets the terminating namespace of an earlier one.
func (e *Env) poolName(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, e.pools.Add(1))
}

// countedClient returns a client of its own whose every request is
// counted; with Identities, it authenticates as ServiceAccount name
// (returned as user) for the audit log.
func (e *Env) countedClient(ctx context.Context, name string) (c kubernetes.Interface, counter *RequestCounter, user string, err error) {
	cfg := rest.CopyConfig(e.Config)
	if e.Identities != nil {
		if cfg, user, err = e.Identities.New(ctx, name); err != nil {
			return nil, nil, "", err
		}
	}
	cfg.QPS, cfg.Burst = e.QPS, e.Burst
	counter = &RequestCounter{}
	counter.Wrap(cfg)
	c, err = kubernetes.NewForConfig(cfg)
	return c, counter, user, err
}

// identityName names a drainer's ServiceAccount after its pool and tool.
func identityName(pool, tool string) string {
	return tool + "-" + pool
}

// audit checks requests (counted by the harness) against the audit log of
// user, once the log has settled (two reads 500ms apart agree); nil
// without an audit log.
func (e *Env) audit(ctx context.Context, user string, requests Requests) *AuditCheck {
	if e.AuditLog == nil || user == "" {
		return nil
	}
	var last []testbed.AuditRequest
	var err error
	for i := 0; i < 20; i++ {
		var reqs []testbed.AuditRequest
		reqs, err = e.AuditLog(ctx, user)
		if err == nil && last != nil && len(reqs) == len(last) {
			last = reqs
			break
		}
		if err == nil {
			last = reqs
		}
		if sleep(ctx, 500*time.Millisecond) != nil {
			break
		}
	}
	if last == nil {
		c := &AuditCheck{User: user, Err: fmt.Sprint(err)}
		e.logf("audit log of %s: %v", user, err)
		return c
	}
	c := CompareAudit(user, requests, TallyAudit(last))
	if !c.Agrees {
		e.logf("FLAG: the harness counted %d requests of %s, the audit log %d (%.1f%% apart, more than %.0f%%): %v",
			c.CounterTotal, user, c.AuditTotal, 100*c.Deviation, 100*AuditTolerance, c.Differences)
	}
	return &c
}

// runDrainer runs a udrain job in a child process whose log goes to
// LogDir/name.log; with Identities, as ServiceAccount "udrain-<name>"
// (returned as user).
func (e *Env) runDrainer(ctx context.Context, name string, job DrainerJob) (*DrainerReport, string, error) {
	job.Kubeconfig, job.QPS, job.Burst = e.Kubeconfig, e.QPS, e.Burst
	var user string
	if e.Identities != nil {
		cfg, u, err := e.Identities.New(ctx, identityName(name, "udrain"))
		if err != nil {
			return nil, "", err
		}
		job.BearerToken, user = cfg.BearerToken, u
	}
	p := e.Drainer
	if e.LogDir != "" {
		if err := os.MkdirAll(e.LogDir, 0o755); err != nil {
			return nil, "", err
		}
		p.LogFile = filepath.Join(e.LogDir, name+".log")
		if e.Profile {
			job.CPUProfile = filepath.Join(e.LogDir, name+".cpu.pprof")
		}
	}
	rep, err := p.Run(ctx, job)
	return rep, user, err
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
		if n := ev.Stage.Phase(); n != 0 {
			phase = fmt.Sprintf("phase %d", n)
		}
		fmt.Fprintf(&b, "%s %-16s %-8s %s %s %s\n", ev.Time.Format("15:04:05.000"), ev.Type, phase, ev.Domain, eventSubject(ev), ev.Message)
	}
	if err := os.WriteFile(filepath.Join(e.LogDir, name+"-events.txt"), b.Bytes(), 0o644); err != nil {
		e.logf("%v", err)
	}
}

// eventSubject names what an event is about: "namespace/name@node" for a
// pod event, the node for a node event.
func eventSubject(e eviction.Event) string {
	if e.Pod != nil {
		return e.Pod.String() + "@" + e.Pod.Node
	}
	return e.Node
}
