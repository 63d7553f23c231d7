package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/topology"
)

// DrainerJob is what a drainer process does: drain one domain, or roll
// over several, with udrain's eviction package and kubectl's defaults.
type DrainerJob struct {
	Kubeconfig string `json:"kubeconfig"`
	// BearerToken, if set, is the token the drainer authenticates with
	// (a ServiceAccount's, for the audit log) instead of the kubeconfig's
	// credentials; the kubeconfig still gives the address and CA.
	BearerToken string  `json:"bearerToken,omitempty"`
	QPS         float32 `json:"qps"`
	Burst       int     `json:"burst"`
	// Drain, if set, names the one domain to drain (Drainer.Drain);
	// otherwise the job is a rollout over Domains (Drainer.Rollout).
	Drain   string   `json:"drain,omitempty"`
	Domains []string `json:"domains,omitempty"`
	// Order and Steering are the rollout's (eviction.RolloutOptions);
	// empty means the library's defaults.
	Order    eviction.RolloutOrder `json:"order,omitempty"`
	Steering eviction.Steering     `json:"steering,omitempty"`
	// Parallel is the rollout's RolloutOptions.Parallel.
	Parallel int `json:"parallel,omitempty"`
	// InPlace is the rollout's RolloutOptions.InPlace.
	InPlace bool `json:"inPlace,omitempty"`
	// RolloutID is the ID of the rollout, or of the drain
	// (DrainOptions.ID); empty means the library's default.
	RolloutID       string        `json:"rolloutID,omitempty"`
	UpgradeStep     time.Duration `json:"upgradeStep,omitempty"`
	RecoveryTimeout time.Duration `json:"recoveryTimeout,omitempty"`
	// EventsFile, if set, receives the job's events as JSON lines as they
	// come, instead of the report keeping them in the drainer's memory
	// (100,000 events at 2,000 nodes: 15 MB of a heap that is udrain's to
	// measure); DrainerProcess reads them back into the report.
	EventsFile string `json:"eventsFile,omitempty"`
	// CPUProfile, if set, is the file the job's CPU profile goes to, and
	// CPUProfile with ".heap" in place of ".cpu" (or appended) a heap
	// profile taken at the job's highest heap in use (at most every 5 s,
	// so near it): what the drainer held then.
	CPUProfile string `json:"cpuProfile,omitempty"`
}

// Memory is what the drainer process used.
type Memory struct {
	// PeakHeapAlloc and PeakHeapInuse are the highest values of
	// runtime.MemStats seen, sampled every 50ms while the job ran.
	PeakHeapAlloc uint64 `json:"peakHeapAlloc"`
	PeakHeapInuse uint64 `json:"peakHeapInuse"`
	// Sys is the memory obtained from the OS by the end; TotalAlloc the
	// bytes allocated over the job; NumGC the collections.
	Sys        uint64 `json:"sys"`
	TotalAlloc uint64 `json:"totalAlloc"`
	NumGC      uint32 `json:"numGC"`
	// JobMaxRSS is the process's peak resident set when the job ended
	// (VmHWM, Linux only), before the report is encoded.
	JobMaxRSS int64 `json:"jobMaxRSS,omitempty"`
	// MaxRSS, UserCPU and SystemCPU are the process's peak resident set
	// over its whole life, report included, and its CPU times
	// (getrusage), filled in by the parent.
	MaxRSS    int64         `json:"maxRSS"`
	UserCPU   time.Duration `json:"userCPU"`
	SystemCPU time.Duration `json:"systemCPU"`
}

// DrainerReport is what a drainer process reports.
type DrainerReport struct {
	Started time.Time     `json:"started"`
	Wall    time.Duration `json:"wall"`
	// Err is the drain's or rollout's error, if any.
	Err      string                  `json:"err,omitempty"`
	Drain    *eviction.Result        `json:"drain,omitempty"`
	Rollout  *eviction.RolloutResult `json:"rollout,omitempty"`
	Events   []eviction.Event        `json:"events"`
	Requests Requests                `json:"requests"`
	Memory   Memory                  `json:"memory"`
	// Metrics sizes package metrics' Recorder fed with the job's events.
	Metrics *MetricsSize `json:"metrics,omitempty"`
}

// reportedEvent is e as the report keeps it: without its Health, which
// the analysis does not read and which, kept for every one of a long
// recovery's WaitingRecovery events, made the harness's event log most of
// the drainer's measured heap (466 MiB in a fleet run with 15,603 of them,
// each a domain's full health).
func reportedEvent(e eviction.Event) eviction.Event {
	e.Health = nil
	return e
}

// RunDrainerJob runs the job in this process, counting every API request
// of the drainer's client, and reports. Errors of the drain itself go into
// the report; the error returned means the job could not start.
func RunDrainerJob(ctx context.Context, job DrainerJob) (*DrainerReport, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", job.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", job.Kubeconfig, err)
	}
	if job.BearerToken != "" {
		cfg = rest.AnonymousClientConfig(cfg)
		cfg.BearerToken = job.BearerToken
	}
	cfg.QPS, cfg.Burst = job.QPS, job.Burst
	counter := &RequestCounter{}
	counter.Wrap(cfg)
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	rep := &DrainerReport{}
	var mu sync.Mutex
	keep := func(e eviction.Event) { rep.Events = append(rep.Events, e) }
	if job.EventsFile != "" {
		f, err := os.Create(job.EventsFile)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		w := bufio.NewWriter(f)
		defer w.Flush()
		enc := json.NewEncoder(w)
		keep = func(e eviction.Event) { _ = enc.Encode(e) } // a lost line shows as a missing event
	}
	// kubectl's defaults and --ignore-daemonsets, as kubectlHelper: a node
	// runs DaemonSet pods (the fleet scenario's) that no drain evicts.
	helper := eviction.KubectlDefaults()
	helper.IgnoreAllDaemonSets = true
	mc, err := newMetricsCounter()
	if err != nil {
		return nil, err
	}
	d, err := eviction.New(client, eviction.Options{
		Helper: helper,
		OnEvent: func(ctx context.Context, e eviction.Event) {
			mc.rec.Record(ctx, e)
			mu.Lock()
			keep(reportedEvent(e))
			mu.Unlock()
		},
	})
	if err != nil {
		return nil, err
	}
	if job.CPUProfile != "" {
		f, err := os.Create(job.CPUProfile)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return nil, err
		}
		defer pprof.StopCPUProfile()
	}
	var onPeak func()
	if job.CPUProfile != "" {
		name, last := heapProfileName(job.CPUProfile), time.Time{}
		onPeak = func() {
			if time.Since(last) > 5*time.Second {
				last = time.Now()
				_ = writeHeapProfile(name) // a profile that cannot be written is left out
			}
		}
	}
	stopSampling := sampleMemory(&rep.Memory, onPeak)
	rep.Started = time.Now()
	if job.Drain != "" {
		_, rep.Drain, err = d.Drain(ctx, job.Drain, eviction.DrainOptions{ID: job.RolloutID})
	} else {
		rep.Rollout, err = d.Rollout(ctx, eviction.RolloutOptions{
			ID: job.RolloutID, Domains: job.Domains, Order: job.Order, Steering: job.Steering, Parallel: job.Parallel, InPlace: job.InPlace, RecoveryTimeout: job.RecoveryTimeout,
			Upgrade: func(ctx context.Context, _ topology.Domain) error { return sleep(ctx, job.UpgradeStep) },
		})
	}
	rep.Wall = time.Since(rep.Started)
	stopSampling()
	if rss, err := processPeakRSS(os.Getpid()); err == nil { // Linux only
		rep.Memory.JobMaxRSS = rss
	}
	if err != nil {
		rep.Err = err.Error()
	}

	rep.Requests = counter.Snapshot()
	if rep.Metrics, err = mc.size(); err != nil {
		return nil, err
	}
	return rep, nil
}

// readEvents reads the events a job wrote to its EventsFile.
func readEvents(name string) ([]eviction.Event, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []eviction.Event
	dec := json.NewDecoder(f)
	for {
		var e eviction.Event
		if err := dec.Decode(&e); err == io.EOF {
			return out, nil
		} else if err != nil {
			return out, fmt.Errorf("events of %s: %w", name, err)
		}
		out = append(out, e)
	}
}

// heapProfileName is the heap profile's file beside the CPU profile's.
func heapProfileName(cpu string) string {
	if strings.Contains(cpu, ".cpu.") {
		return strings.Replace(cpu, ".cpu.", ".heap.", 1)
	}
	return cpu + ".heap"
}

// writeHeapProfile writes the heap profile (its in-use figures are those
// of the last collection).
func writeHeapProfile(name string) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	defer f.Close()
	return pprof.WriteHeapProfile(f)
}

// sampleMemory records the peaks of the Go heap until the returned
// function is called, which also records the final totals. onPeak, if set,
// is called when the heap in use reaches a new peak.
func sampleMemory(m *Memory, onPeak func()) func() {
	done := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	read := func() {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		mu.Lock()
		defer mu.Unlock()
		peak := ms.HeapInuse > m.PeakHeapInuse
		m.PeakHeapAlloc = max(m.PeakHeapAlloc, ms.HeapAlloc)
		m.PeakHeapInuse = max(m.PeakHeapInuse, ms.HeapInuse)
		m.Sys, m.TotalAlloc, m.NumGC = ms.Sys, ms.TotalAlloc, ms.NumGC
		if peak && onPeak != nil {
			onPeak()
		}
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			read()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
		read()
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// DrainerProcess runs drainer jobs in child processes, so that each job's
// memory and CPU are its own: the command is Command plus Args, and it
// must run [RunDrainerJob] on the DrainerJob it reads as JSON on stdin and
// write the DrainerReport as JSON on stdout (see cmd/udrain-bench).
type DrainerProcess struct {
	Command string
	Args    []string
	// LogFile, if set, receives the child's stderr (its klog output).
	LogFile string
}

// Run starts the child, hands it the job, and returns its report with
// the child's peak RSS and CPU times. Cancelling ctx interrupts the child
// (and kills it 30s later if it is still there).
func (p DrainerProcess) Run(ctx context.Context, job DrainerJob) (*DrainerReport, error) {
	if job.EventsFile == "" {
		f, err := os.CreateTemp("", "udrain-bench-events-*.jsonl")
		if err != nil {
			return nil, err
		}
		f.Close()
		defer os.Remove(f.Name())
		job.EventsFile = f.Name()
	}
	in, err := json.Marshal(job)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, p.Command, p.Args...)
	cmd.Stdin = bytes.NewReader(in)
	var out, errTail bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &errTail
	if p.LogFile != "" {
		f, err := os.Create(p.LogFile)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		cmd.Stderr = f
	}
	// On cancel, ask the drainer to stop (it reports what it did), and
	// kill it if it does not within WaitDelay.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 30 * time.Second
	setParentDeathSignal(cmd)
	if err := cmd.Run(); err != nil {
		where := p.LogFile
		if where == "" {
			where = lastLines(errTail.String(), 20)
		}
		return nil, fmt.Errorf("drainer process %s: %w (log: %s)", p.Command, err, where)
	}
	var rep DrainerReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		return nil, fmt.Errorf("drainer process %s wrote no report: %w", p.Command, err)
	}
	rep.Memory.MaxRSS, rep.Memory.UserCPU, rep.Memory.SystemCPU = processUsage(cmd.ProcessState)
	events, err := readEvents(job.EventsFile)
	if err != nil {
		return nil, err
	}
	rep.Events = append(rep.Events, events...)
	return &rep, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
