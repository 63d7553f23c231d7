package testbed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
)

// ErrNotSupported is returned by what the cluster's provider cannot do, such
// as restarting the apiserver of a kind or foreign cluster.
var ErrNotSupported = errors.New("not supported by this cluster")

// cluster is what a provider does.
type cluster interface {
	up(ctx context.Context) (kubeconfig string, err error)
	down(ctx context.Context) error
	reaper() []string
	copyLogs(ctx context.Context, dest string) error
}

// Testbed is the cluster of one test package.
type Testbed struct {
	opts    Options
	cluster cluster // nil for an existing foreign cluster
	kwok    *kwokCluster
	owned   bool // the testbed makes and deletes the cluster
	runID   string
	env     env.Environment

	mu         sync.Mutex
	kubeconfig string
	config     *rest.Config
	client     kubernetes.Interface
	reaper     *reaper
	stopped    bool

	// Processes run next to the cluster (see process.go).
	procMu       sync.Mutex
	procs        []*process
	procsStopped bool
	procReaper   *reaper // guards procs when the cluster has no reaper

	kubeRayMu sync.Mutex
	kubeRay   *KubeRay

	lwsMu sync.Mutex
	lws   *LWS
}

// New returns a testbed for opts; nothing starts before [Testbed.Start] or
// [Testbed.Run]. Invalid options make Start fail with the reason.
func New(opts Options) *Testbed {
	b := &Testbed{opts: opts, runID: time.Now().Format("20060102-150405") + fmt.Sprintf("-%d", os.Getpid())}
	if err := b.opts.validate(); err == nil {
		switch b.opts.Provider {
		case Kwok:
			b.kwok = newKwokCluster(b.opts)
			b.cluster, b.owned = b.kwok, true
		case Kind:
			b.cluster, b.owned = newKindCluster(b.opts), true
		case Existing:
			if b.opts.ClusterName != "" {
				b.kwok = newKwokCluster(b.opts)
				b.cluster = b.kwok
			}
		}
	}
	b.env = env.NewWithConfig(envconf.New())
	return b
}

// Env is the e2e-framework environment of the tests (its kubeconfig is the
// testbed's once started), for tests written as e2e-framework features.
func (b *Testbed) Env() env.Environment { return b.env }

// Run is the whole body of a TestMain: it starts the cluster (e2e-framework
// Setup), runs the tests, and tears the cluster down (Finish) when they end,
// fail or panic in TestMain; on SIGINT/SIGTERM it tears down and exits; a
// reaper process tears down after a panic in a test or a test timeout.
// It returns the exit code for os.Exit.
func (b *Testbed) Run(m *testing.M) int {
	b.env.Setup(func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		if err := b.Start(ctx); err != nil {
			return ctx, err
		}
		cfg.WithKubeconfigFile(b.Kubeconfig())
		return ctx, nil
	})
	b.env.Finish(func(ctx context.Context, _ *envconf.Config) (context.Context, error) {
		return ctx, b.Stop(context.WithoutCancel(ctx))
	})
	stop := b.onSignal()
	defer stop()
	return b.env.Run(m)
}

func (b *Testbed) onSignal() func() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	quit := make(chan struct{})
	go func() {
		select {
		case sig := <-ch:
			b.opts.Logf("got %s: tearing the cluster down", sig)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if err := b.Stop(ctx); err != nil {
				b.opts.Logf("teardown: %v", err)
			}
			code := 130
			if sig == syscall.SIGTERM {
				code = 143
			}
			os.Exit(code)
		case <-quit:
		}
	}()
	return func() { signal.Stop(ch); close(quit) }
}

// Start brings the cluster up (or connects to the existing one) and waits
// until it serves. For a cluster the testbed makes, a reaper is armed first,
// so that even a crash during Start leaves nothing running.
func (b *Testbed) Start(ctx context.Context) error {
	if err := b.opts.validate(); err != nil {
		return err
	}
	kubeconfig := b.opts.Kubeconfig
	if b.owned {
		env := []string(nil)
		saved := filepath.Join(b.opts.ArtifactsDir, b.runID, "teardown", "logs")
		if b.kwok != nil {
			env = b.kwok.reaperEnv()
			if dir, err := b.kwok.dir(ctx); err == nil {
				env = append(env, "REAPER_SAVE_FROM="+filepath.Join(dir, "logs"), "REAPER_SAVE_TO="+saved)
			}
		}
		reaperLog := filepath.Join(os.TempDir(), "udrain-e2e-reaper-"+b.opts.ClusterName+".log")
		r, err := startReaper(b.cluster.reaper(), env, reaperLog)
		if err != nil {
			return err
		}
		b.opts.Logf("if this process dies, a reaper deletes the cluster (log %s) and saves its logs in %s", reaperLog, saved)
		b.mu.Lock()
		b.reaper = r
		b.mu.Unlock()
		start := time.Now()
		b.opts.Logf("bringing up %s cluster %s", b.opts.Provider, b.opts.ClusterName)
		kubeconfig, err = b.cluster.up(ctx)
		if err != nil && ctx.Err() == nil {
			// A fresh control plane on a busy CI machine has once not
			// become usable within cluster.sh's wait: remake it once
			// before failing every test of the package.
			b.opts.Logf("bringing up cluster %s failed after %s; deleting it and trying once more: %v", b.opts.ClusterName, time.Since(start).Round(100*time.Millisecond), err)
			b.saveLogs(ctx, "setup-first-try")
			if derr := b.cluster.down(ctx); derr != nil {
				b.opts.Logf("deleting cluster %s: %v", b.opts.ClusterName, derr)
			}
			kubeconfig, err = b.cluster.up(ctx)
		}
		if err != nil {
			return fmt.Errorf("bring up %s cluster %s: %w%s", b.opts.Provider, b.opts.ClusterName, err, b.saveLogs(ctx, "setup"))
		}
		b.opts.Logf("cluster %s is up in %s (KUBECONFIG=%s)", b.opts.ClusterName, time.Since(start).Round(100*time.Millisecond), kubeconfig)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("load kubeconfig %s: %w", kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = 100, 200
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	b.mu.Lock()
	b.kubeconfig, b.config, b.client = kubeconfig, cfg, client
	b.mu.Unlock()
	if err := b.waitServes(ctx, time.Minute); err != nil {
		return err
	}
	for _, name := range b.opts.Namespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s: %w", ns.Name, err)
		}
	}
	return nil
}

// saveLogs copies the cluster's logs into the artifacts and says where, for
// an error message; "" if there is nothing to copy.
func (b *Testbed) saveLogs(ctx context.Context, name string) string {
	if b.cluster == nil {
		return ""
	}
	dir := filepath.Join(b.opts.ArtifactsDir, b.runID, name, "logs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := b.cluster.copyLogs(ctx, dir); err != nil {
		return fmt.Sprintf(" (collecting logs: %v)", err)
	}
	return "; control-plane logs in " + dir
}

// Stop stops the processes run next to the cluster (an operator, see
// [Testbed.KubeRay]) and deletes the cluster if the testbed made it; it is
// safe to call twice.
func (b *Testbed) Stop(ctx context.Context) error {
	perr := b.stopProcesses(10 * time.Second)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped || !b.owned {
		b.stopped = true
		return perr
	}
	b.stopped = true
	b.opts.Logf("deleting cluster %s", b.opts.ClusterName)
	err := errors.Join(perr, b.cluster.down(ctx))
	if b.reaper == nil {
		return err
	}
	if err != nil {
		// Let the reaper try once more, now.
		return errors.Join(err, b.reaper.fire())
	}
	return b.reaper.disarm()
}

// Kubeconfig is the path of the cluster's kubeconfig.
func (b *Testbed) Kubeconfig() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.kubeconfig
}

// Config is the cluster-admin REST config of the cluster.
func (b *Testbed) Config() *rest.Config {
	b.mu.Lock()
	defer b.mu.Unlock()
	return rest.CopyConfig(b.config)
}

// Client is a cluster-admin clientset.
func (b *Testbed) Client() kubernetes.Interface {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.client
}

// waitServes polls /readyz until it answers ok.
func (b *Testbed) waitServes(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		body, err := b.Client().Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err == nil && string(body) == "ok" {
			return nil
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("apiserver not ready after %s: %v", timeout, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// KillComponent SIGKILLs one control-plane component of a kwok cluster
// (etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
// kwok-controller), as a crash would. [Testbed.StartComponents] brings it
// back. Other providers return [ErrNotSupported].
func (b *Testbed) KillComponent(ctx context.Context, component string) error {
	if b.kwok == nil {
		return fmt.Errorf("kill %s: %w", component, ErrNotSupported)
	}
	_, err := b.kwok.run(ctx, "kill", component)
	return err
}

// StartComponents starts every component of a kwok cluster that is not
// running and waits until the apiserver is ready again.
func (b *Testbed) StartComponents(ctx context.Context) error {
	if b.kwok == nil {
		return fmt.Errorf("start components: %w", ErrNotSupported)
	}
	if _, err := b.kwok.run(ctx, "start"); err != nil {
		return err
	}
	return b.waitServes(ctx, time.Minute)
}

// SnapshotEtcd saves the kwok cluster's etcd state to the file path
// (etcdctl snapshot save).
func (b *Testbed) SnapshotEtcd(ctx context.Context, path string) error {
	if b.kwok == nil {
		return fmt.Errorf("etcd snapshot: %w", ErrNotSupported)
	}
	_, err := b.kwok.run(ctx, "snapshot", path)
	return err
}

// RestoreEtcd restores the kwok cluster's etcd from a snapshot SnapshotEtcd
// saved, the way an operator does: the apiserver and etcd stop, etcdutl
// restores the snapshot into a new data dir (flags go to etcdutl, e.g.
// "--bump-revision", "1000000", "--mark-compacted"), every component
// starts again; it returns once the apiserver is ready. Without
// --bump-revision, resourceVersions go back to the snapshot's.
func (b *Testbed) RestoreEtcd(ctx context.Context, path string, etcdutlFlags ...string) error {
	if b.kwok == nil {
		return fmt.Errorf("etcd restore: %w", ErrNotSupported)
	}
	if _, err := b.kwok.run(ctx, append([]string{"restore", path}, etcdutlFlags...)...); err != nil {
		return err
	}
	return b.waitServes(ctx, time.Minute)
}

// RestartAPIServer kills the kube-apiserver (SIGKILL) and starts it again,
// returning once it is ready; watches and clients reconnect by themselves.
func (b *Testbed) RestartAPIServer(ctx context.Context) error {
	if err := b.KillComponent(ctx, "kube-apiserver"); err != nil {
		return err
	}
	return b.StartComponents(ctx)
}

// SuperviseControlPlane does for a kwok cluster's kube-scheduler and
// kube-controller-manager what the kubelet does for their static pods:
// while the test runs, a component whose process has exited (or, where its
// pid file cannot be read, that stops renewing its leader lease) is
// started again ([Testbed.StartComponents]), and every component is started
// once more when the test ends, so that later tests find a whole control
// plane. Tests that restart the apiserver need it: after a restart the
// kube-scheduler's pod informer may relist and turn "pod deleted,
// replacement created under the same name" into one update between pods of
// different UIDs and nodes, which the scheduler takes for a corrupted cache
// and exits (k8s.io/kubernetes v1.37.2
// pkg/scheduler/backend/cache/cache.go, UpdatePod: FlushAndExit).
func (b *Testbed) SuperviseControlPlane(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(2 * time.Second)
		defer tick.Stop()
		var dir string // the kwok cluster's, with the components' pid files
		if b.kwok != nil {
			dir, _ = b.kwok.dir(ctx)
		}
		var quietUntil time.Time // a started component needs a moment to take its lease
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if time.Now().Before(quietUntil) {
				continue
			}
			for _, name := range []string{"kube-scheduler", "kube-controller-manager"} {
				why := b.componentStopped(ctx, dir, name)
				if why == "" {
					continue
				}
				t.Logf("%s %s: starting the control plane's stopped components, as a kubelet would", name, why)
				if err := b.StartComponents(ctx); err != nil && ctx.Err() == nil {
					t.Logf("starting components: %v", err)
				}
				quietUntil = time.Now().Add(20 * time.Second)
				break
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := b.StartComponents(ctx); err != nil && !errors.Is(err, ErrNotSupported) {
			t.Errorf("starting the control plane's stopped components after the test: %v", err)
		}
	})
}

// componentStopped says why component name of the control plane looks
// stopped, or "" if it runs: its process has exited (its pid file in the
// kwok cluster's dir names no live process), or, without a pid file to
// read, its leader lease has not been renewed in time. The testbed's
// components run without leader election (hack/kwok/kwokctl.yaml), so
// the pid file is what tells.
func (b *Testbed) componentStopped(ctx context.Context, dir, name string) string {
	if dir != "" {
		if alive, err := processAlive(filepath.Join(dir, "pids", name+".pid")); err == nil {
			if !alive {
				return "has exited"
			}
			return ""
		}
	}
	lease, err := b.Client().CoordinationV1().Leases(metav1.NamespaceSystem).Get(ctx, name, metav1.GetOptions{})
	if err != nil || lease.Spec.RenewTime == nil || lease.Spec.LeaseDurationSeconds == nil {
		return "" // the apiserver is down, or there is no lease
	}
	stale := time.Duration(*lease.Spec.LeaseDurationSeconds)*time.Second + 5*time.Second
	if since := time.Since(lease.Spec.RenewTime.Time); since > stale {
		return fmt.Sprintf("has not renewed its lease for %s", since.Round(time.Second))
	}
	return ""
}

// processAlive reads a pid file (kwokctl writes the pid without a newline)
// and says whether that process runs: a zombie (its parent, here a killed
// kwokctl, does not reap it) counts as exited. An error means the file
// could not be read.
func processAlive(pidFile string) (bool, error) {
	data, err := os.ReadFile(pidFile)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil // removed by cluster.sh kill or start
	}
	if err != nil {
		return false, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return false, fmt.Errorf("pid file %s: %w", pidFile, err)
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false, nil // gone
	}
	// "pid (comm) S ...": the state follows the last ')'.
	rest := string(stat)
	if i := strings.LastIndexByte(rest, ')'); i >= 0 {
		rest = strings.TrimSpace(rest[i+1:])
	}
	return !strings.HasPrefix(rest, "Z") && !strings.HasPrefix(rest, "X"), nil
}
