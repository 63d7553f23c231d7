package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/kubectl/pkg/drain"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/examples/controller-runtime/upgrade"
	"github.com/udrain/udrain/topology"
)

func main() {
	fs := flag.CommandLine // controller-runtime registers --kubeconfig here
	klog.InitFlags(fs)
	domainLabel := fs.String("domain-label", topology.DefaultDomainLabel, "node label naming upgrade domains")
	recoveryTimeout := fs.Duration("recovery-timeout", 30*time.Minute, "give up waiting for a domain's groups to recover after this long (0: never); the rollout is tried again later")
	retryAfter := fs.Duration("retry-after", upgrade.DefaultRetryAfter, "wait this long before trying a failed rollout again")
	leaderElect := fs.Bool("leader-elect", false, "elect one active replica through a Lease (run more than one replica with it)")
	leaseNamespace := fs.String("leader-election-namespace", "", "namespace of the Lease; empty: the pod's namespace")
	metricsAddr := fs.String("metrics-bind-address", "0", "address of the metrics endpoint; 0 disables it")
	probeAddr := fs.String("health-probe-bind-address", ":8081", "address of the /healthz and /readyz endpoints; 0 disables them")
	flag.Parse()
	logger := klog.Background().WithName(upgrade.ControllerName)
	ctrl.SetLogger(logger)
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "%s: unexpected arguments %q; every setting is a flag, see -h\n", upgrade.ControllerName, flag.Args())
		os.Exit(2)
	}

	cfg, err := ctrl.GetConfig()
	if err != nil {
		logger.Error(err, "No cluster to talk to: give --kubeconfig, or run in a pod")
		os.Exit(1)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Cache:                   upgrade.CacheOptions(),
		Metrics:                 metricsserver.Options{BindAddress: *metricsAddr},
		HealthProbeBindAddress:  *probeAddr,
		LeaderElection:          *leaderElect,
		LeaderElectionID:        upgrade.ControllerName,
		LeaderElectionNamespace: *leaseNamespace,
	})
	if err != nil {
		logger.Error(err, "Cannot make the manager")
		os.Exit(1)
	}
	ctx := ctrl.SetupSignalHandler()
	_, err = upgrade.SetupWithManager(ctx, mgr, upgrade.Options{
		Drainer: eviction.Options{
			// kubectl drain --ignore-daemonsets --delete-emptydir-data: a
			// platform's usual settings, as a drain.Helper.
			Helper:      &drain.Helper{GracePeriodSeconds: -1, IgnoreAllDaemonSets: true, DeleteEmptyDirData: true},
			DomainLabel: *domainLabel,
		},
		RecoveryTimeout: *recoveryTimeout,
		RetryAfter:      *retryAfter,
	})
	if err != nil {
		logger.Error(err, "Cannot set the controller up")
		os.Exit(1)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		logger.Error(err, "Cannot add the health check")
		os.Exit(1)
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		logger.Error(err, "Cannot add the readiness check")
		os.Exit(1)
	}
	if err := mgr.Start(ctx); err != nil {
		logger.Error(err, "The manager stopped")
		os.Exit(1)
	}
}
