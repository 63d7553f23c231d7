package app

import (
	"time"

	"github.com/spf13/cobra"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/drain"

	"github.com/udrain/udrain/eviction"
)

// drainFlags are kubectl drain's flags, with its names, defaults and help
// texts, plus udrain's own. They build the *drain.Helper handed to package
// eviction, as kubectl drain builds its own.
type drainFlags struct {
	force                    bool
	ignoreDaemonSets         bool
	deleteEmptyDirData       bool
	gracePeriod              int
	timeout                  time.Duration
	podSelector              string
	disableEviction          bool
	skipWaitForDeleteTimeout int
	chunkSize                int64
	dryRun                   string

	allowViolations bool
	concurrency     int
}

// add registers the flags. timeoutHelp describes --timeout, which bounds
// a drain in kubectl but a whole domain drain in a rollout.
func (f *drainFlags) add(cmd *cobra.Command, timeoutHelp string) {
	fs := cmd.Flags()
	fs.BoolVar(&f.force, "force", false, "Continue even if there are pods that do not declare a controller.")
	fs.BoolVar(&f.ignoreDaemonSets, "ignore-daemonsets", false, "Ignore DaemonSet-managed pods.")
	fs.BoolVar(&f.deleteEmptyDirData, "delete-emptydir-data", false, "Continue even if there are pods using emptyDir (local data that will be deleted when the node is drained).")
	fs.IntVar(&f.gracePeriod, "grace-period", -1, "Period of time in seconds given to each pod to terminate gracefully. If negative, the default value specified in the pod will be used.")
	fs.DurationVar(&f.timeout, "timeout", 0, timeoutHelp)
	fs.StringVar(&f.podSelector, "pod-selector", "", "Label selector to filter pods on the node")
	fs.BoolVar(&f.disableEviction, "disable-eviction", false, "Force drain to use delete, even if eviction is supported. This will bypass checking PodDisruptionBudgets, use with caution.")
	fs.IntVar(&f.skipWaitForDeleteTimeout, "skip-wait-for-delete-timeout", 0, "If pod DeletionTimestamp older than N seconds, skip waiting for the pod.  Seconds must be greater than 0 to skip.")
	fs.Int64Var(&f.chunkSize, "chunk-size", cmdutil.DefaultChunkSize, "Return large lists in chunks rather than all at once. Pass 0 to disable.")
	fs.StringVar(&f.dryRun, "dry-run", "none", `Must be "none", "server", or "client". If client strategy, only print what would be evicted, without sending anything. If server strategy, send every cordon and eviction with dryRun=All, once, so the API server checks them against the budgets without persisting anything.`)
	fs.Lookup("dry-run").NoOptDefVal = "client"
	fs.BoolVar(&f.allowViolations, "allow-violations", false, "Drain despite placement contract violations (see audit); pods under two PDBs still stop the domain, since the Eviction API cannot evict them.")
	fs.IntVar(&f.concurrency, "concurrency", eviction.DefaultConcurrency, "Evictions (and node patches) in flight at once; 0 for the default.")
}

// dryRunStrategy parses --dry-run as kubectl does, without its deprecated
// boolean forms.
func (f *drainFlags) dryRunStrategy() (cmdutil.DryRunStrategy, error) {
	switch f.dryRun {
	case "none", "":
		return cmdutil.DryRunNone, nil
	case "client":
		return cmdutil.DryRunClient, nil
	case "server":
		return cmdutil.DryRunServer, nil
	}
	return cmdutil.DryRunNone, usageErrorf(`invalid --dry-run value %q: must be "none", "server", or "client"`, f.dryRun)
}

// helper builds the drain.Helper of these flags: the fields kubectl drain
// sets from the same flags, with kubectl's defaults. Fields kubectl sets
// from elsewhere (Client, Ctx, Out, ErrOut, the node Selector) are not
// used by package eviction and stay zero. Only --dry-run is parsed here;
// the values are package eviction's to judge (validate).
func (f *drainFlags) helper() (*drain.Helper, error) {
	dry, err := f.dryRunStrategy()
	if err != nil {
		return nil, err
	}
	return &drain.Helper{
		Force:                           f.force,
		GracePeriodSeconds:              f.gracePeriod,
		IgnoreAllDaemonSets:             f.ignoreDaemonSets,
		Timeout:                         f.timeout,
		DeleteEmptyDirData:              f.deleteEmptyDirData,
		PodSelector:                     f.podSelector,
		ChunkSize:                       f.chunkSize,
		DisableEviction:                 f.disableEviction,
		SkipWaitForDeleteTimeoutSeconds: f.skipWaitForDeleteTimeout,
		DryRunStrategy:                  dry,
	}, nil
}

// options maps the flags to the Drainer's options; the caller adds what
// other flags and the command set (domain label, events, clock, reader).
func (f *drainFlags) options() (eviction.Options, error) {
	h, err := f.helper()
	if err != nil {
		return eviction.Options{}, err
	}
	// --timeout bounds the wait for an API server that cannot be reached,
	// too: a drain of 5s does not wait 15s to say it cannot connect.
	return eviction.Options{
		ConnectTimeout:  connectTimeout(f.timeout),
		Helper:          h,
		Concurrency:     f.concurrency,
		AllowViolations: f.allowViolations,
	}, nil
}

// validate checks the flags before anything is contacted, by package
// eviction's own validation (its *udrain.ConfigError in flag terms).
func (f *drainFlags) validate() error {
	o, err := f.options()
	if err != nil {
		return err
	}
	return inFlagTerms(o.Validate())
}
