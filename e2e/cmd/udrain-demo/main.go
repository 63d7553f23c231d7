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
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr, clientFromKubeconfig)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return
	case errors.Is(err, context.Canceled):
		os.Exit(130) // interrupted: the demo script says so
	}
	fmt.Fprintln(os.Stderr, "udrain-demo:", err)
	var usage *usageError
	if errors.As(err, &usage) {
		os.Exit(2)
	}
	os.Exit(1)
}

// usageError is a mistake in the command line.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// clients are the clients of the cluster: kube for everything, dyn for the
// CRDs, LeaderWorkerSets and RayClusters; cfg and kubeconfig (the file's
// path) for the LeaderWorkerSet manager.
type clients struct {
	kube       kubernetes.Interface
	dyn        dynamic.Interface
	cfg        *rest.Config
	kubeconfig string
}

// newClientFunc builds the clients from a kubeconfig path ("" for the
// default rules); tests pass one that returns fakes.
type newClientFunc func(kubeconfig string) (clients, error)

func clientFromKubeconfig(kubeconfig string) (clients, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
	if err != nil {
		return clients{}, fmt.Errorf("no cluster: %w (run hack/cluster.sh up, or give --kubeconfig)", err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return clients{}, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return clients{}, err
	}
	path := kubeconfig
	if path == "" {
		path = rules.GetDefaultFilename()
	}
	return clients{kube: kube, dyn: dyn, cfg: cfg, kubeconfig: path}, nil
}

// run parses args (a subcommand and its flags) and runs the subcommand,
// writing what it does to stdout.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, newClient newClientFunc) error {
	if len(args) == 0 || (args[0] != "deploy" && args[0] != "wait" && args[0] != "watch" && args[0] != "lws-manager") {
		fmt.Fprintln(stderr, "usage: udrain-demo deploy|wait|watch|lws-manager [flags]; udrain-demo deploy -h lists the flags")
		return &usageError{errors.New("give a subcommand: deploy (reset and create the demo), wait (until the workload is healthy), watch (record until SIGTERM, then say what the pods went through) or lws-manager (run the LeaderWorkerSet manager until SIGTERM)")}
	}
	sub := args[0]
	fs := flag.NewFlagSet("udrain-demo "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	kubeconfig := fs.String("kubeconfig", "", "path to a kubeconfig; empty: $KUBECONFIG or ~/.kube/config")
	cfg := defaultConfig()
	fs.StringVar(&cfg.Namespace, "namespace", cfg.Namespace, "namespace of the workload (deploy deletes and recreates it)")
	fs.StringVar(&cfg.Pool, "pool", cfg.Pool, "node pool: nodes <pool>-ud<d>-<i> in domains <pool>-ud<d> (deploy deletes and recreates them)")
	fs.IntVar(&cfg.Groups, "groups", cfg.Groups, "groups (LeaderWorkerSet replicas, or RayClusters), one per upgrade domain")
	fs.StringVar(&cfg.Workload, "workload", cfg.Workload, "lws (LeaderWorkerSet-shaped groups) or ray (RayClusters of the KubeRay operator)")
	timeout := 3 * time.Minute
	var lwsDir, workDir string
	switch sub {
	case "lws-manager":
		fs.StringVar(&lwsDir, "lws-dir", "", "the folder hack/lws.sh prints (the manager and its manifests)")
		fs.StringVar(&workDir, "work-dir", "", "where the manager's configuration and serving certificate go")
	case "deploy":
		fs.IntVar(&cfg.UDs, "uds", cfg.UDs, "upgrade domains")
		fs.IntVar(&cfg.NodesPerUD, "nodes-per-ud", cfg.NodesPerUD, "nodes per upgrade domain (8 GPUs each)")
		fs.IntVar(&cfg.GroupSize, "group-size", cfg.GroupSize, fmt.Sprintf("pods per group, the leader included (lws: 4 GPUs each; ray: a head and hosts of 8 GPUs, default %d)", rayGroupSize))
		fs.StringVar(&cfg.KubeRayDir, "kuberay-dir", "", "ray workload: the folder hack/kuberay.sh prints (its crds are installed)")
	case "wait":
		fs.DurationVar(&timeout, "timeout", timeout, "how long to wait for the workload")
	}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &usageError{err}
	}
	if fs.NArg() > 0 {
		return &usageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	if cfg.Workload == workloadRay && !flagSet(fs, "group-size") {
		cfg.GroupSize = rayGroupSize
	}
	if timeout <= 0 {
		return &usageError{fmt.Errorf("--timeout=%s: give a positive duration", timeout)}
	}
	if sub == "lws-manager" {
		if lwsDir == "" || workDir == "" {
			return &usageError{errors.New("lws-manager needs --lws-dir (the folder hack/lws.sh prints) and --work-dir")}
		}
		cs, err := newClient(*kubeconfig)
		if err != nil {
			return err
		}
		return runLWSManager(ctx, cs, lwsDir, workDir, stdout, stderr)
	}
	d, err := newDemo(cfg)
	if err != nil {
		return &usageError{err}
	}
	cs, err := newClient(*kubeconfig)
	if err != nil {
		return err
	}
	switch sub {
	case "watch":
		return d.watch(ctx, cs.kube, stdout)
	case "wait":
		return d.waitHealthy(ctx, cs.kube, stdout, timeout, 250*time.Millisecond)
	}
	if err := d.reset(ctx, cs.kube, stdout, 250*time.Millisecond); err != nil {
		return err
	}
	return d.deploy(ctx, cs, stdout)
}

// flagSet reports whether the named flag was given.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
