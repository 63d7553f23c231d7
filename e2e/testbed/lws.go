package testbed

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/udrain/udrain/e2e/fixture"
)

// LWSVersion is the LeaderWorkerSet version hack/lws.sh builds.
const LWSVersion = "v0.10.0"

// LWSWebhookPrefix prefixes the names of the webhook configurations
// [LWSSetup.Install] applies, as LWS's config/default kustomization does
// (namePrefix lws-).
const LWSWebhookPrefix = "lws-"

// LWS is the LeaderWorkerSet manager (sigs.k8s.io/lws, the version
// hack/lws.sh pins) running out of process against the testbed's cluster,
// with its CRDs and webhooks installed (see [LWSSetup]). Tests create
// LeaderWorkerSets (see [fixture.LeaderWorkerSet]); its pod webhook labels
// their pods and injects the LWS_* environment, its controllers make the
// leader StatefulSet, one worker StatefulSet per group (owned by the
// group's leader pod) and recreate groups, and kwok runs the pods.
//
// There is one manager per cluster (the webhook configurations are
// cluster-wide): the tests of a package share it.
type LWS struct {
	// Dir is hack/lws.sh's cache folder of the manager and its manifests.
	Dir string
	// Log is the manager's log file (with the control-plane logs in a
	// failed test's artifacts when the cluster is kwok's).
	Log string
	// Setup is how it runs: its configuration, certificate and ports.
	Setup *LWSSetup

	proc *process
}

// PID is the manager's process ID, for measuring what it costs.
func (l *LWS) PID() int { return l.proc.cmd.Process.Pid }

// LWS returns the testbed's LeaderWorkerSet manager, starting it on the
// first call: it builds the manager if the cache lacks it (hack/lws.sh,
// about 80 s cold), applies its CRDs server-side, writes its configuration
// (leader election off, internal certificate management off, webhooks on
// 127.0.0.1 at a free port with a serving certificate of the testbed's own
// CA, health probes on 127.0.0.1, metrics off), starts it with
// --kubeconfig, applies its webhook configurations (url clientConfig and
// caBundle, the pod webhooks' objectSelector from LWS's kustomization),
// and waits until the API server calls its webhooks. The manager runs with
// the testbed's cluster-admin kubeconfig (LWS's own ClusterRole is in
// Dir/rbac for clusters where it must not), until [Testbed.Stop] (also on a
// signal; the reaper kills it if the test process dies). It fails if the
// manager has exited since.
func (b *Testbed) LWS(ctx context.Context) (*LWS, error) {
	b.lwsMu.Lock()
	defer b.lwsMu.Unlock()
	if l := b.lws; l != nil {
		if done, err := l.proc.exited(); done {
			return nil, fmt.Errorf("the LeaderWorkerSet manager exited (%v); the end of its log %s:\n%s", err, l.Log, l.proc.logTail(20))
		}
		return l, nil
	}
	if b.Client() == nil {
		return nil, errors.New("testbed: the cluster is not started")
	}
	start := time.Now()
	dir, err := b.buildCached(ctx, "lws.sh")
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(b.opts.ArtifactsDir, b.runID, "lws-manager.log")
	workDir := filepath.Join(os.TempDir(), "udrain-e2e-lws-"+b.runID)
	if b.kwok != nil {
		// With the control-plane logs: copied into a failed test's
		// artifacts, saved by the reaper, deleted with the cluster.
		if d, err := b.kwok.dir(ctx); err == nil {
			logPath = filepath.Join(d, "logs", "lws-manager.log")
			workDir = filepath.Join(d, "lws")
		}
	}
	cfg := b.Config()
	// A port free a moment ago may be taken before the manager binds it
	// (several clusters run on one machine): try again on fresh ports.
	var last error
	for range 3 {
		setup, err := NewLWSSetup(dir, workDir, b.Kubeconfig())
		if err != nil {
			return nil, err
		}
		if err := setup.InstallCRDs(ctx, cfg); err != nil {
			return nil, err
		}
		p, err := b.startProcess("LeaderWorkerSet manager", setup.Command(), []string{"KUBECONFIG=" + b.Kubeconfig()}, logPath)
		if err != nil {
			return nil, err
		}
		l := &LWS{Dir: dir, Log: logPath, Setup: setup, proc: p}
		last = setup.Start(ctx, cfg, p.exited)
		if last == nil {
			b.opts.Logf("LeaderWorkerSet manager %s ready in %s, webhooks on %s (log %s)", LWSVersion, time.Since(start).Round(100*time.Millisecond), setup.WebhookHost(), logPath)
			b.lws = l
			return l, nil
		}
		_ = p.stop(5 * time.Second)
		last = fmt.Errorf("%w; the end of its log %s:\n%s", last, logPath, p.logTail(20))
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("the LeaderWorkerSet manager did not start: %w", last)
}

// LWSSetup is what running the LeaderWorkerSet manager out of cluster
// needs, as [NewLWSSetup] makes it: its configuration file, a serving
// certificate for 127.0.0.1 and the ports. [Testbed.LWS] uses it with the
// testbed's processes; the demo (e2e/cmd/udrain-demo) with its own.
type LWSSetup struct {
	// Dir is hack/lws.sh's cache folder: lws-manager, crds/, rbac/,
	// webhook/.
	Dir string
	// WorkDir holds the configuration (config.yaml) and the serving
	// certificate (certs/tls.crt, certs/tls.key).
	WorkDir string
	// Kubeconfig is the kubeconfig the manager runs with.
	Kubeconfig string
	// WebhookPort and HealthPort are the ports on 127.0.0.1 of its
	// webhook server and health probes, free when the setup was made.
	WebhookPort, HealthPort int
	// Cert is the webhook server's certificate and the CA that signed it.
	Cert *ServingCert
}

// NewLWSSetup picks free ports, makes a serving certificate and writes the
// manager's configuration into workDir. dir is hack/lws.sh's cache folder.
func NewLWSSetup(dir, workDir, kubeconfig string) (*LWSSetup, error) {
	if _, err := os.Stat(filepath.Join(dir, "lws-manager")); err != nil {
		return nil, fmt.Errorf("no LeaderWorkerSet manager in %s (run hack/lws.sh): %w", dir, err)
	}
	s := &LWSSetup{Dir: dir, WorkDir: workDir, Kubeconfig: kubeconfig}
	var err error
	if s.WebhookPort, err = freePort(); err != nil {
		return nil, err
	}
	if s.HealthPort, err = freePort(); err != nil {
		return nil, err
	}
	if s.Cert, err = NewServingCert(7 * 24 * time.Hour); err != nil {
		return nil, err
	}
	if err := s.Cert.WriteDir(filepath.Join(workDir, "certs")); err != nil {
		return nil, err
	}
	if err := os.WriteFile(s.configPath(), []byte(s.config()), 0o644); err != nil {
		return nil, fmt.Errorf("write the LeaderWorkerSet manager's configuration: %w", err)
	}
	return s, nil
}

func (s *LWSSetup) configPath() string { return filepath.Join(s.WorkDir, "config.yaml") }

// config is the manager's Configuration (config.lws.x-k8s.io/v1alpha1):
// no leader election (one manager), no internal certificate management
// (it issues for the in-cluster Service name, which the API server cannot
// reach from here), webhooks and probes on 127.0.0.1, no metrics server
// (its authorization would ask the API server about every scrape).
func (s *LWSSetup) config() string {
	return fmt.Sprintf(`apiVersion: config.lws.x-k8s.io/v1alpha1
kind: Configuration
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
webhook:
  host: 127.0.0.1
  port: %d
  certDir: %s
health:
  healthProbeBindAddress: 127.0.0.1:%d
metrics:
  bindAddress: "0"
`, s.WebhookPort, strconv.Quote(filepath.Join(s.WorkDir, "certs")), s.HealthPort)
}

// WebhookHost is where the manager serves its webhooks, as the API server
// dials it: https://127.0.0.1:<WebhookPort>.
func (s *LWSSetup) WebhookHost() string { return "https://127.0.0.1:" + strconv.Itoa(s.WebhookPort) }

// Command is the manager's command line.
func (s *LWSSetup) Command() []string {
	return []string{filepath.Join(s.Dir, "lws-manager"), "--config", s.configPath(), "--kubeconfig", s.Kubeconfig}
}

// InstallCRDs applies LeaderWorkerSet's CRDs (and the two DisaggregatedSet
// ones: the manager runs their controllers too, and waits for every kind
// it watches) server-side and waits until they are established.
func (s *LWSSetup) InstallCRDs(ctx context.Context, cfg *rest.Config) error {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if err := fixture.InstallCRDs(ctx, dyn, filepath.Join(s.Dir, "crds"), fixture.LWSCRDFiles...); err != nil {
		return fmt.Errorf("LeaderWorkerSet's CRDs (cached by hack/lws.sh): %w", err)
	}
	return nil
}

// Start waits until the manager (started from [LWSSetup.Command]) answers
// its readiness probe, applies its webhook configurations pointing at it,
// and waits until the API server calls them; exited reports whether the
// manager's process has exited (nil: not known).
func (s *LWSSetup) Start(ctx context.Context, cfg *rest.Config, exited func() (bool, error)) error {
	if exited == nil {
		exited = func() (bool, error) { return false, nil }
	}
	if err := waitReadyFunc(ctx, exited, fmt.Sprintf("http://127.0.0.1:%d/readyz", s.HealthPort), time.Minute); err != nil {
		return fmt.Errorf("the LeaderWorkerSet manager did not become ready: %w", err)
	}
	configs, err := s.WebhookConfigurations()
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	for _, c := range configs {
		body, err := json.Marshal(c.Object)
		if err != nil {
			return err
		}
		gvr := schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: strings.ToLower(c.GetKind()) + "s"}
		if _, err := dyn.Resource(gvr).Patch(ctx, c.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: fixture.CRDFieldManager, Force: new(true)}); err != nil {
			return fmt.Errorf("apply %s %s: %w", c.GetKind(), c.GetName(), err)
		}
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	return waitLWSWebhooks(ctx, dyn, kube, exited, time.Minute)
}

// WebhookConfigurations returns LWS's webhook configurations as its
// config/webhook kustomization makes them (the pod webhooks get their
// objectSelector on leaderworkerset.sigs.k8s.io/name there: without it
// every pod of the cluster would go through a webhook whose failurePolicy
// is Fail), renamed with [LWSWebhookPrefix] and pointed at the manager:
// clientConfig.url https://127.0.0.1:<port><path> and caBundle. The
// testbed's one change: every webhook applies only in namespaces labelled
// [fixture.LWSNamespaceLabel] (namespaceSelector), since tests of the
// StatefulSet model of LWS share the cluster and their pods carry LWS's
// name label too (LWS's pod webhook refuses them: no size annotation).
func (s *LWSSetup) WebhookConfigurations() ([]*unstructured.Unstructured, error) {
	return lwsWebhookConfigurations(filepath.Join(s.Dir, "webhook"), s.WebhookHost(), s.Cert.CA)
}

func lwsWebhookConfigurations(dir, host string, caBundle []byte) ([]*unstructured.Unstructured, error) {
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize LeaderWorkerSet's webhooks (%s): %w", dir, err)
	}
	var out []*unstructured.Unstructured
	for _, r := range m.Resources() {
		kind := r.GetKind()
		if kind != "MutatingWebhookConfiguration" && kind != "ValidatingWebhookConfiguration" {
			continue // the webhook Service: nothing runs in the cluster
		}
		obj, err := r.Map()
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{Object: obj}
		u.SetName(LWSWebhookPrefix + u.GetName())
		hooks, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
		for i, h := range hooks {
			wh, ok := h.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s %s: webhook %d is not an object", kind, u.GetName(), i)
			}
			path, _, _ := unstructured.NestedString(wh, "clientConfig", "service", "path")
			if path == "" {
				return nil, fmt.Errorf("%s %s: webhook %v has no clientConfig.service.path", kind, u.GetName(), wh["name"])
			}
			// caBundle is bytes: base64 in JSON.
			wh["clientConfig"] = map[string]any{"url": host + path, "caBundle": base64.StdEncoding.EncodeToString(caBundle)}
			wh["namespaceSelector"] = map[string]any{"matchLabels": map[string]any{fixture.LWSNamespaceLabel: "true"}}
			hooks[i] = wh
		}
		if err := unstructured.SetNestedSlice(u.Object, hooks, "webhooks"); err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	if len(out) != 2 {
		return nil, fmt.Errorf("kustomize LeaderWorkerSet's webhooks (%s): %d webhook configurations, want a mutating and a validating one", dir, len(out))
	}
	return out, nil
}

// LWSProbeNamespace is where the testbed probes LWS's webhooks (labelled
// [fixture.LWSNamespaceLabel]).
const LWSProbeNamespace = "udrain-testbed-lws"

// waitLWSWebhooks waits until the API server calls the manager's
// webhooks, probing with dry-run requests in [LWSProbeNamespace]:
//   - a LeaderWorkerSet comes back defaulted by the mutating webhook
//     (spec.networkConfig.subdomainPolicy Shared, which no CRD default sets);
//   - one with a subgroup-exclusive-topology annotation but no subgroup is
//     refused by the validating webhook;
//   - an LWS-labelled pod without the size annotation is refused by the
//     pod webhook (its objectSelector lets it through).
func waitLWSWebhooks(ctx context.Context, dyn dynamic.Interface, kube kubernetes.Interface, exited func() (bool, error), timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: LWSProbeNamespace, Labels: map[string]string{fixture.LWSNamespaceLabel: "true"}}}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", ns.Name, err)
	}
	lws := dyn.Resource(fixture.LeaderWorkerSetGVR).Namespace(LWSProbeNamespace)
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	var last error
	for {
		if done, err := exited(); done {
			return fmt.Errorf("the LeaderWorkerSet manager exited: %v", err)
		}
		last = probeLWSWebhooks(ctx, lws, kube, dry)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the API server does not call LeaderWorkerSet's webhooks within %s: %v", timeout, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func probeLWSWebhooks(ctx context.Context, lws dynamic.ResourceInterface, kube kubernetes.Interface, dry metav1.CreateOptions) error {
	probe := func(annotations map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
			"metadata": map[string]any{"name": "udrain-webhook-probe", "annotations": annotations},
			"spec": map[string]any{"leaderWorkerTemplate": map[string]any{"workerTemplate": map[string]any{
				"spec": map[string]any{"containers": []any{map[string]any{"name": "probe", "image": fixture.DefaultImage}}},
			}}},
		}}
	}
	got, err := lws.Create(ctx, probe(nil), dry)
	if err != nil {
		return fmt.Errorf("dry-run LeaderWorkerSet: %w", err)
	}
	if p, _, _ := unstructured.NestedString(got.Object, "spec", "networkConfig", "subdomainPolicy"); p != "Shared" {
		return errors.New("the mutating LeaderWorkerSet webhook is not called yet (a dry-run LeaderWorkerSet came back without networkConfig.subdomainPolicy)")
	}
	_, err = lws.Create(ctx, probe(map[string]any{"leaderworkerset.sigs.k8s.io/subgroup-exclusive-topology": "x"}), dry)
	if err == nil || !strings.Contains(err.Error(), "subgroup-exclusive-topology") {
		return fmt.Errorf("the validating LeaderWorkerSet webhook is not called yet (a dry-run LeaderWorkerSet it refuses got: %v)", err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "udrain-webhook-probe", Namespace: LWSProbeNamespace, Labels: map[string]string{fixture.LWSNameLabel: "udrain-webhook-probe"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "probe", Image: fixture.DefaultImage}}},
	}
	_, err = kube.CoreV1().Pods(pod.Namespace).Create(ctx, pod, dry)
	if err == nil || !strings.Contains(err.Error(), "size annotation") {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("namespace %s: %w", pod.Namespace, err)
		}
		return fmt.Errorf("the LeaderWorkerSet pod webhook is not called yet (a dry-run pod it refuses got: %v)", err)
	}
	return nil
}
