package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/kubectl/pkg/drain"

	"github.com/udrain/udrain/clusterinformers"
	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/health"
	"github.com/udrain/udrain/report"
	"github.com/udrain/udrain/topology"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx = klog.NewContext(ctx, klog.Background().WithName("platform-controller"))
	err := run(ctx, os.Args[1:], os.Stderr, clientsFromKubeconfig)
	var usage *usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case errors.As(err, &usage):
		fmt.Fprintln(os.Stderr, "platform-controller:", err)
		os.Exit(2)
	default:
		os.Exit(1) // run logged why
	}
}

// usageError is a mistake in the command line.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// settings are the program's flags.
type settings struct {
	kubeconfig      string
	version         string
	webhook         string
	domainLabel     string
	domains         []string
	drainTimeout    time.Duration
	recoveryTimeout time.Duration
	statusResource  bool
}

func parseFlags(args []string, stderr io.Writer) (*settings, error) {
	s := &settings{}
	fs := flag.NewFlagSet("platform-controller", flag.ContinueOnError)
	fs.SetOutput(stderr)
	klog.InitFlags(fs) // -v and friends: the program's logging, as in any Kubernetes component
	fs.StringVar(&s.kubeconfig, "kubeconfig", "", "path to a kubeconfig; empty: $KUBECONFIG, ~/.kube/config, or the pod's service account")
	fs.StringVar(&s.version, "target-version", "", "version to upgrade the nodes to; names the rollout (required)")
	fs.StringVar(&s.webhook, "webhook", "", "URL of an upgrade service to POST each drained domain to ({domain, nodes, version}); empty: label the nodes only")
	fs.StringVar(&s.domainLabel, "domain-label", topology.DefaultDomainLabel, "node label naming upgrade domains")
	fs.Func("domain", "upgrade only this domain (repeatable, in order); default all", func(v string) error { s.domains = append(s.domains, v); return nil })
	fs.DurationVar(&s.drainTimeout, "drain-timeout", time.Hour, "give up a domain's drain after this long (0: never)")
	fs.DurationVar(&s.recoveryTimeout, "recovery-timeout", 30*time.Minute, "give up waiting for a domain's groups to recover after this long (0: never)")
	fs.BoolVar(&s.statusResource, "status-resource", false, "keep the rollout's progress in the status of a NodeUpgrade named after it (kubectl get nodeupgrades); needs the resource of crd.yaml")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, &usageError{err}
	}
	if fs.NArg() > 0 {
		return nil, &usageError{fmt.Errorf("unexpected arguments %q; every setting is a flag, see -h", fs.Args())}
	}
	if s.version == "" {
		return nil, &usageError{errors.New("--target-version is required: the version the nodes are upgraded to, e.g. --target-version 1.37.2")}
	}
	if errs := validation.IsValidLabelValue(s.version); len(errs) > 0 {
		return nil, &usageError{fmt.Errorf("--target-version %q cannot be a label value: %v", s.version, errs)}
	}
	return s, nil
}

// clients are the program's API clients: a clientset, and a dynamic
// client for its NodeUpgrade resource.
type clients struct {
	kube    kubernetes.Interface
	dynamic dynamic.Interface
}

// newClientsFunc builds the clients from a kubeconfig path; tests pass one
// returning fakes.
type newClientsFunc func(kubeconfig string) (*clients, error)

// run parses the flags, rolls the upgrade over every domain, and logs the
// rollout's summary and, if it stopped, where and why. Usage errors are
// returned without a log line.
func run(ctx context.Context, args []string, stderr io.Writer, newClients newClientsFunc) error {
	s, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	logger := klog.FromContext(ctx)
	c, err := newClients(s.kubeconfig)
	if err != nil {
		logger.Error(err, "No client")
		return err
	}
	res, err := rollout(ctx, c, s, http.DefaultClient)
	var usage *usageError
	if errors.As(err, &usage) {
		return err
	}
	if res != nil {
		sum := report.SummarizeRollout(res)
		kv := []any{"id", res.ID, "domainsDone", sum.DomainsDone, "domainsSkipped", sum.DomainsSkipped,
			"phase1Evicted", sum.Phase1Evicted, "phase2Evicted", sum.Phase2Evicted, "groupsDisrupted", sum.GroupsDisrupted, "duration", res.Duration.Duration()}
		if b := sum.LongestBlock; b != nil {
			kv = append(kv, "longestBlock", b.Duration.Duration(), "longestBlockPDB", b.Namespace+"/"+b.PDB)
		}
		for _, d := range res.Domains {
			kv = append(kv, "domain."+d.Domain, d.State)
		}
		logger.Info("Rollout summary", kv...)
	}
	if err != nil {
		logStop(logger, err)
	}
	return err
}

// logStop logs why the rollout stopped, from the structured error: the
// domain and stage, the pods still waiting, the budget blocking, the
// groups that did not recover (with package health's reasons).
func logStop(logger klog.Logger, err error) {
	const msg = "Rollout stopped; run again with the same --target-version to resume"
	var stop *eviction.DomainError
	if !errors.As(err, &stop) {
		logger.Error(err, msg)
		return
	}
	kv := []any{"domain", stop.Domain, "stage", stop.Stage, "id", stop.ID}
	switch {
	case errors.Is(err, context.Canceled):
		kv = append(kv, "cause", "cancelled")
	case errors.Is(err, context.DeadlineExceeded):
		kv = append(kv, "cause", "timeout", "timeout", stop.Timeout)
	}
	if n := len(stop.Pending); n > 0 {
		kv = append(kv, "podsPending", n, "firstPodPending", stop.Pending[0].String())
	}
	if b := stop.Block; b != nil {
		kv = append(kv, "blockedBy", b.Namespace+"/"+b.PDB, "blockedSince", b.Since, "disruptionsAllowed", b.DisruptionsAllowed)
	}
	if h := stop.Health; h != nil {
		kv = append(kv, "notRecovered", unhealthy(h))
	}
	logger.Error(stop.Err, msg, kv...)
}

// unhealthy lists the groups and budgets of h that are not healthy, each
// as "name: Reason", from package health's judgment.
func unhealthy(h *health.DomainStatus) []string {
	var out []string
	u := h.Unhealthy()
	for _, g := range u.Groups {
		out = append(out, fmt.Sprintf("%s: %s", g.ID, g.Reason))
	}
	for _, b := range u.Budgets {
		out = append(out, fmt.Sprintf("PodDisruptionBudget %s/%s: %s", b.Namespace, b.Name, b.Reason))
	}
	return out
}

// rollout runs the rollout over a shared informer factory, as a controller
// that already watches the cluster would: udrain reads through the same
// informers as the upgrade step (the nodes' lister), and adds no list or
// watch of its own. Events go to the API server and the log; the upgrade
// step labels the nodes and calls the webhook.
func rollout(ctx context.Context, c *clients, s *settings, httpClient *http.Client) (*eviction.RolloutResult, error) {
	logger := klog.FromContext(ctx)
	client := c.kube
	id := "platform-" + s.version
	factory := informers.NewSharedInformerFactory(client, 0)
	shared := clusterinformers.FromFactory(factory) // registers udrain's informers with the factory
	nodes := factory.Core().V1().Nodes().Lister()
	// Events outlive a cancel: the last ones (what was done before Ctrl-C)
	// matter most.
	broadcaster := record.NewBroadcaster(record.WithContext(context.WithoutCancel(ctx)))
	sink := &countingSink{EventSink: &typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")}}
	broadcaster.StartRecordingToSink(sink)
	defer broadcaster.Shutdown()
	reporter := &eventReporter{
		recorder: broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "platform-controller"}),
		sink:     sink,
		logger:   logger,
	}
	defer reporter.flush(context.WithoutCancel(ctx), 5*time.Second)
	onEvent := reporter.report
	var d *eviction.Drainer
	var status *statusWriter
	if s.statusResource {
		// The status, read afresh, comes from the Drainer's view of the
		// same informers: no list or watch, one GET of the rollout's Lease.
		status = newStatusWriter(c.dynamic, id, func(ctx context.Context) (*eviction.RolloutStatus, error) {
			return d.RolloutStatus(ctx, eviction.RolloutOptions{ID: id, Domains: s.domains})
		}, logger)
		onEvent = func(ctx context.Context, e eviction.Event) {
			reporter.report(ctx, e)
			status.observe(e)
		}
	}
	d, err := eviction.New(client, eviction.Options{
		// kubectl drain --ignore-daemonsets --delete-emptydir-data --timeout: a
		// platform's usual settings, as a drain.Helper.
		Helper:      &drain.Helper{GracePeriodSeconds: -1, IgnoreAllDaemonSets: true, DeleteEmptyDirData: true, Timeout: s.drainTimeout},
		DomainLabel: s.domainLabel,
		OnEvent:     onEvent,
		Informers:   shared,
	})
	if err != nil {
		return nil, &usageError{err}
	}
	informersCtx, stopInformers := context.WithCancel(ctx)
	defer func() {
		stopInformers()
		factory.Shutdown()
	}()
	factory.Start(informersCtx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return nil, fmt.Errorf("the %v informer did not sync: %w", typ, context.Cause(ctx))
		}
	}
	logger.V(2).Info("Informers synced")
	if status != nil {
		// Before the rollout changes anything, the resource shows where
		// the rollout stands: where a previous run stopped, if one did.
		if err := status.begin(ctx, s.version, s.domains); err != nil {
			return nil, err
		}
		defer status.stop(5 * time.Second)
	}
	res, err := d.Rollout(ctx, eviction.RolloutOptions{
		ID:              id,
		Domains:         s.domains,
		Upgrade:         nodeUpgrade(client, nodes, s.version, s.webhook, httpClient),
		RecoveryTimeout: s.recoveryTimeout,
	})
	if status != nil && res != nil && res.Status != nil {
		status.set(res.Status)
	}
	return res, err
}

// clientsFromKubeconfig loads a kubeconfig as kubectl does, falling back
// to the pod's service account, with rate limits fit for a drain.
func clientsFromKubeconfig(path string) (*clients, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	config, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("load the kubeconfig (give one with --kubeconfig, or run in a pod): %w", err)
	}
	config.QPS, config.Burst = 50, 100
	config.UserAgent = "platform-controller"
	kube, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	return &clients{kube: kube, dynamic: dyn}, nil
}
