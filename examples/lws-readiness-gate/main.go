package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/readiness/gate"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx = klog.NewContext(ctx, klog.Background())
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr, clientFromKubeconfig); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "lws-readiness-gate:", err)
		var usage *usageError
		if errors.As(err, &usage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// usageError is a mistake in the command line.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// newClientFunc builds a clientset from a kubeconfig path ("" for the
// default rules); tests pass one that returns a fake.
type newClientFunc func(kubeconfig string) (kubernetes.Interface, error)

// run parses args, builds the controller and runs it until ctx is done,
// printing every condition it writes to stdout.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, newClient newClientFunc) error {
	fs := flag.NewFlagSet("lws-readiness-gate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kubeconfig := fs.String("kubeconfig", "", "path to a kubeconfig; empty: $KUBECONFIG, ~/.kube/config, or the pod's service account")
	namespace := fs.String("namespace", "", "watch pods of this namespace only; empty: all namespaces")
	selector := fs.String("selector", "", "watch only pods with these labels (as for kubectl -l); it must select every member of a group, not only leaders")
	leaseNamespace := fs.String("lease-namespace", "", "elect one writing replica through a Lease in this namespace; required to run more than one replica")
	leaseName := fs.String("lease-name", gate.DefaultLeaseName, "name of the Lease (with --lease-namespace)")
	id := fs.String("id", "", "identity of this replica in the election; empty: hostname and a random suffix")
	workers := fs.Int("workers", gate.DefaultWorkers, "groups reconciled concurrently")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &usageError{err}
	}
	if fs.NArg() > 0 {
		return &usageError{fmt.Errorf("unexpected arguments %q; every setting is a flag, see -h", fs.Args())}
	}

	opts := gate.Options{
		Namespace: *namespace,
		Selector:  *selector,
		Workers:   *workers,
		OnChange:  func(c gate.Change) { fmt.Fprintln(stdout, c) },
	}
	if *leaseNamespace != "" {
		opts.LeaderElection = &gate.LeaderElection{Namespace: *leaseNamespace, Name: *leaseName, Identity: *id}
	}
	client, err := newClient(*kubeconfig)
	if err != nil {
		return err
	}
	c, err := gate.New(client, opts)
	if err != nil {
		var ce *udrain.ConfigError
		if errors.As(err, &ce) {
			return &usageError{err}
		}
		return err
	}
	return c.Run(ctx)
}

// clientFromKubeconfig loads a kubeconfig as kubectl does (an explicit
// path, else $KUBECONFIG, else ~/.kube/config), falling back to the pod's
// service account.
func clientFromKubeconfig(path string) (kubernetes.Interface, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	config, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("load the kubeconfig (give one with --kubeconfig, or run in a pod): %w", err)
	}
	config.UserAgent = "udrain-lws-readiness-gate"
	return kubernetes.NewForConfig(config)
}
