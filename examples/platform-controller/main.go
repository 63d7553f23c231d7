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
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/kubectl/pkg/drain"

	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/topology"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx = klog.NewContext(ctx, klog.Background().WithName("platform-controller"))
	err := run(ctx, os.Args[1:], os.Stderr, clientFromKubeconfig)
	var usage *usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case errors.As(err, &usage):
		fmt.Fprintln(os.Stderr, "platform-controller:", err)
		os.Exit(2)
	default:
		klog.FromContext(ctx).Error(err, "Rollout stopped; run again with the same --target-version to resume")
		os.Exit(1)
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

// newClientFunc builds a clientset from a kubeconfig path; tests pass one
// returning a fake.
type newClientFunc func(kubeconfig string) (kubernetes.Interface, error)

// run parses the flags and rolls the upgrade over every domain.
func run(ctx context.Context, args []string, stderr io.Writer, newClient newClientFunc) error {
	s, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	client, err := newClient(s.kubeconfig)
	if err != nil {
		return err
	}
	res, err := rollout(ctx, client, s, http.DefaultClient)
	if res != nil {
		t := res.Totals()
		kv := []any{"id", res.ID, "domainsDone", t.DomainsDone, "domainsSkipped", t.DomainsSkipped,
			"phase1Evicted", t.Phase1Evicted, "phase2Evicted", t.Phase2Evicted, "groupsDisrupted", t.GroupsDisrupted, "duration", res.Duration}
		if b := t.LongestBlock; b.PDB != "" {
			kv = append(kv, "longestBlock", b.Duration, "longestBlockPDB", b.Namespace+"/"+b.PDB)
		}
		klog.FromContext(ctx).Info("Rollout summary", kv...)
	}
	return err
}

// rollout runs the rollout: events to the API server and the log, the
// upgrade step labelling nodes and calling the webhook.
func rollout(ctx context.Context, client kubernetes.Interface, s *settings, httpClient *http.Client) (*eviction.RolloutResult, error) {
	logger := klog.FromContext(ctx)
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
	d, err := eviction.New(client, eviction.Options{
		// kubectl drain --ignore-daemonsets --delete-emptydir-data --timeout: a
		// platform's usual settings, as a drain.Helper.
		Helper:      &drain.Helper{GracePeriodSeconds: -1, IgnoreAllDaemonSets: true, DeleteEmptyDirData: true, Timeout: s.drainTimeout},
		DomainLabel: s.domainLabel,
		OnEvent:     reporter.report,
	})
	if err != nil {
		return nil, &usageError{err}
	}
	return d.Rollout(ctx, eviction.RolloutOptions{
		ID:              "platform-" + s.version,
		Domains:         s.domains,
		Upgrade:         nodeUpgrade(client, s.version, s.webhook, httpClient),
		RecoveryTimeout: s.recoveryTimeout,
	})
}

// clientFromKubeconfig loads a kubeconfig as kubectl does, falling back to
// the pod's service account, with rate limits fit for a drain.
func clientFromKubeconfig(path string) (kubernetes.Interface, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	config, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("load the kubeconfig (give one with --kubeconfig, or run in a pod): %w", err)
	}
	config.QPS, config.Burst = 50, 100
	config.UserAgent = "platform-controller"
	return kubernetes.NewForConfig(config)
}
