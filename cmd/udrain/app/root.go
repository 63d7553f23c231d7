package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/kubeclient"
	"github.com/udrain/udrain/redact"
)

// ClientFactory builds the clientset a command talks to, from the kubectl
// connection flags (--kubeconfig, --context, ...). Tests pass one that
// returns a fake clientset and ignores the flags.
type ClientFactory func(getter genericclioptions.RESTClientGetter) (kubernetes.Interface, error)

// Config is what the commands take from their surroundings. The zero value
// means the real ones: the kubeconfig, the wall clock, the process
// environment and terminal.
type Config struct {
	// Name is the program's name in help texts and hints: "udrain", or
	// "kubectl udrain" for the kubectl plugin. Empty means
	// DisplayName(os.Args[0]).
	Name string
	// NewClient builds the clientset; nil means from the connection flags,
	// with the QPS and burst of --kube-api-qps and --kube-api-burst.
	NewClient ClientFactory
	// Clock times drains, rollouts and waits; nil means the real clock.
	Clock clock.WithTicker
	// IsTerminal reports whether w is a terminal (for the live progress
	// view); nil means a check of w's file descriptor.
	IsTerminal func(w io.Writer) bool
	// TerminalWidth returns the width of the terminal w in columns; nil
	// means the terminal's own, or 120 when it cannot be read.
	TerminalWidth func(w io.Writer) int
	// Environ returns the environment handed to the rollout's upgrade
	// command (before the UDRAIN_* variables); nil means os.Environ
	// (upgrade.CommandOptions.Env).
	Environ func() []string
	// LookPath finds the rollout's shell (sh) before anything is drained;
	// nil means exec.LookPath (upgrade.CommandOptions.LookPath).
	LookPath func(file string) (string, error)
	// LookupEnv reads one variable (for serve-readiness --from-lws-env);
	// nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Listen opens serve-readiness's listener; nil means net.Listen.
	Listen func(network, address string) (net.Listener, error)
}

// DisplayName returns the name a program called argv0 shows in its help:
// "kubectl udrain" when it is installed as the kubectl plugin
// kubectl-udrain, else the base name of argv0.
func DisplayName(argv0 string) string {
	base := filepath.Base(argv0)
	base = strings.TrimSuffix(base, ".exe")
	if plugin, ok := strings.CutPrefix(base, "kubectl-"); ok && plugin != "" {
		return "kubectl " + strings.ReplaceAll(plugin, "_", "-")
	}
	if base == "" || base == "." || base == "/" {
		return "udrain"
	}
	return base
}

// options is the state shared by all commands of one tree.
type options struct {
	cfg     Config
	streams genericiooptions.IOStreams
	kube    *genericclioptions.ConfigFlags
	qps     float32
	burst   int
	verbose int
	// requestTimeout bounds each request (kubeclient.BoundRequests):
	// --request-timeout, or kubeclient.DefaultRequestTimeout without it;
	// zero means no limit.
	requestTimeout time.Duration
	// clusterFlags are the names of the flags that connect to the
	// cluster: kubectl's and the client's rate limits.
	clusterFlags []string
}

// client builds the clientset from the connection flags.
func (o *options) client() (kubernetes.Interface, error) {
	c, err := o.cfg.NewClient(o.kube)
	var usage *UsageError
	if errors.As(err, &usage) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("connecting to the cluster: %w (give a kubeconfig with --kubeconfig or $KUBECONFIG, or run in a pod with a service account)", err)
	}
	return c, nil
}

// explicitNamespace returns --namespace when it was given, else "".
func (o *options) explicitNamespace() string { return ptr.Deref(o.kube.Namespace, "") }

// defaultClientFactory builds a clientset from the connection flags with
// the rate limits of --kube-api-qps and --kube-api-burst and the bound of
// --request-timeout (kubeclient.ConfigFromFlags: a context, cluster or user
// that the kubeconfig does not have is a usage error).
func defaultClientFactory(o *options) ClientFactory {
	return func(genericclioptions.RESTClientGetter) (kubernetes.Interface, error) {
		cfg, err := kubeclient.ConfigFromFlags(o.kube, o.clientOptions())
		if err != nil {
			return nil, inFlagTerms(err)
		}
		return kubernetes.NewForConfig(cfg)
	}
}

// clientOptions are the client settings of --kube-api-qps,
// --kube-api-burst and --request-timeout, whose 0 means no limit (as
// kubectl's), with udrain's user agent.
func (o *options) clientOptions() kubeclient.Options {
	timeout := o.requestTimeout
	if timeout == 0 {
		timeout = kubeclient.NoRequestTimeout
	}
	return kubeclient.Options{QPS: o.qps, Burst: o.burst, RequestTimeout: timeout, UserAgent: kubeclient.UserAgent("udrain", thisBuild().Version)}
}

// refuseClusterFlags returns a usage error if a flag that connects to the
// cluster was given to cmd, which does not use the cluster: ignoring it
// would let a user believe, say, that --certificate-authority verifies a
// member's certificate.
func (o *options) refuseClusterFlags(cmd *cobra.Command) error {
	instead := map[string]string{
		"certificate-authority": "--ca-file",
		"client-certificate":    "--client-cert",
		"tls-server-name":       "--server-name",
	}
	inherited := cmd.InheritedFlags()
	for _, name := range o.clusterFlags {
		if !inherited.Changed(name) {
			continue
		}
		if flag, ok := instead[name]; ok {
			return usageErrorf("--%s connects to the Kubernetes API server and has no effect on %s; use %s", name, cmd.Name(), flag)
		}
		return usageErrorf("--%s connects to the Kubernetes API server and has no effect on %s; drop it", name, cmd.Name())
	}
	return nil
}

// NewRootCommand returns the udrain command tree, connected to the real
// cluster (kubeconfig and connection flags), clock, environment and
// terminal. Execute it with Run, or with ExecuteContext and map the error
// with ExitCode.
func NewRootCommand(streams genericiooptions.IOStreams) *cobra.Command {
	return NewCommand(streams, Config{})
}

// NewCommand returns the udrain command tree with cfg's substitutes for the
// real surroundings.
func NewCommand(streams genericiooptions.IOStreams, cfg Config) *cobra.Command {
	o := &options{cfg: cfg, streams: streams, kube: genericclioptions.NewConfigFlags(true), qps: kubeclient.DefaultQPS, burst: kubeclient.DefaultBurst,
		requestTimeout: kubeclient.DefaultRequestTimeout}
	o.cfg.Name = cmp.Or(o.cfg.Name, DisplayName(os.Args[0]))
	if o.cfg.NewClient == nil {
		o.cfg.NewClient = defaultClientFactory(o)
	}
	o.cfg.Clock = cmp.Or[clock.WithTicker](o.cfg.Clock, clock.RealClock{})
	if o.cfg.IsTerminal == nil {
		o.cfg.IsTerminal = isTerminal
	}
	if o.cfg.TerminalWidth == nil {
		o.cfg.TerminalWidth = terminalWidth
	}
	if o.cfg.LookupEnv == nil {
		o.cfg.LookupEnv = os.LookupEnv
	}
	if o.cfg.Listen == nil {
		o.cfg.Listen = net.Listen
	}

	root := &cobra.Command{
		Use:   "udrain",
		Short: "Drain upgrade domains without breaking gang-scheduled groups",
		Long: fmt.Sprintf(`%[1]s drains upgrade domains (sets of nodes named by a node label) in an order
that a PodDisruptionBudget over each group's leader can protect, and rolls an
upgrade over all domains, resumably. It reads the placement contract off the
cluster, plans before it acts, and speaks kubectl drain's flags.

Connection flags are kubectl's (--kubeconfig, --context, --namespace, ...).
Requests to the API server are limited to %[2]d per second in bursts of %[3]d
(client-go's defaults are 5 and 10, too few for a drain); change that with
--kube-api-qps and --kube-api-burst.

Exit codes: 0 done, 1 error, 2 usage, 3 blocked by a PodDisruptionBudget past
--timeout, 4 placement contract violated, 130 interrupted (run the same
command again to resume).`, o.cfg.Name, kubeclient.DefaultQPS, kubeclient.DefaultBurst),
		Example: fmt.Sprintf(`  # What each upgrade domain holds
  %[1]s domains

  # Is the placement contract kept?
  %[1]s audit

  # What draining ud-1 would do, then do it
  %[1]s plan ud-1 --ignore-daemonsets
  %[1]s drain ud-1 --ignore-daemonsets --timeout 30m

  # Upgrade every domain in turn; run it again to resume
  %[1]s rollout --ignore-daemonsets --upgrade-command ./upgrade-nodes.sh`, o.cfg.Name),
		SilenceErrors: true,
		SilenceUsage:  true,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErrorf("unknown command %s for %q", strconv.Quote(redact.URL(args[0])), o.cfg.Name)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmd.Help()
		},
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			if o.qps <= 0 || o.burst <= 0 {
				return usageErrorf("--kube-api-qps and --kube-api-burst must be positive (got %v and %d)", o.qps, o.burst)
			}
			if t := o.kube.Timeout; t != nil && *t != "" {
				d, err := clientcmd.ParseTimeout(*t)
				if err != nil {
					return usageErrorf("--request-timeout=%q: want a duration with a unit (1s, 2m, 3h) or a whole number of seconds; 0 means no timeout", *t)
				}
				if cmd.Flags().Changed("request-timeout") {
					o.requestTimeout = d
				}
			}
			logger := inFlagTermsLogger(textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(o.verbose), textlogger.Output(o.streams.ErrOut))))
			cmd.SetContext(klog.NewContext(cmd.Context(), logger))
			return nil
		},
	}
	root.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: o.cfg.Name}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return &UsageError{Err: err}
	})
	root.CompletionOptions.DisableDefaultCmd = true

	pf := root.PersistentFlags()
	o.kube.AddFlags(pf)
	pf.Float32Var(&o.qps, "kube-api-qps", o.qps, "Requests per second to the API server (client-go's default is 5)")
	pf.IntVar(&o.burst, "kube-api-burst", o.burst, "Burst of requests to the API server (client-go's default is 10)")
	pf.VisitAll(func(f *pflag.Flag) { o.clusterFlags = append(o.clusterFlags, f.Name) })
	pf.IntVarP(&o.verbose, "v", "v", 0, "Log verbosity (klog levels; 2 shows each retry, 4 and above client details)")

	root.AddCommand(
		newDomainsCommand(o),
		newAuditCommand(o),
		newPlanCommand(o),
		newDrainCommand(o),
		newUncordonCommand(o),
		newWaitHealthyCommand(o),
		newRolloutCommand(o),
		newGPUCommand(o),
		newWaitServerCommand(o),
		newServeReadinessCommand(o),
		newReadinessGateCommand(o),
		newVersionCommand(o),
	)
	return root
}

// Run executes the command line args on a tree built by NewCommand and
// returns the exit code. It prints the error, and a hint on what to do, to
// streams.ErrOut.
func Run(ctx context.Context, args []string, streams genericiooptions.IOStreams, cfg Config) int {
	root := NewCommand(streams, cfg)
	if args == nil {
		args = []string{} // cobra reads os.Args for nil
	}
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	code := ExitCode(err)
	program, cmdPath := root.DisplayName(), root.DisplayName()
	if cmd != nil {
		cmdPath = cmd.CommandPath()
	}
	// Whatever quotes the command line (a flag error of pflag's, say) must
	// not show the credentials of a URL in it.
	var secrets redact.Secrets
	for _, a := range args {
		secrets.AddURL(a)
	}
	var rep *reportedError
	if code == ExitInterrupted {
		fmt.Fprintln(streams.ErrOut, "interrupted")
	} else if errors.As(err, &rep) {
		fmt.Fprintf(streams.ErrOut, "error: %s\n", secrets.Scrub(rep.summary))
	} else {
		// The libraries' errors name Go settings; a user of the command
		// line reads flags.
		fmt.Fprintf(streams.ErrOut, "error: %s\n", secrets.Scrub(describe(err)))
	}
	if h := hint(err, program, cmdPath); h != "" {
		fmt.Fprintln(streams.ErrOut, h)
	}
	return code
}

// reportedError is an error whose details the command has already printed
// in its report; Run prints only the summary and the hint.
type reportedError struct {
	err     error
	summary string
}

func (e *reportedError) Error() string { return e.err.Error() }
func (e *reportedError) Unwrap() error { return e.err }

// exactArgs accepts exactly n positional arguments, none empty.
func exactArgs(n int, what string) cobra.PositionalArgs { return positionalArgs(n, n, what) }

// maxArgs accepts at most n positional arguments, none empty.
func maxArgs(n int, what string) cobra.PositionalArgs { return positionalArgs(0, n, what) }

// positionalArgs accepts least to most positional arguments, and refuses
// an empty one (plan "$DOMAIN" with DOMAIN unset), which would otherwise
// reach the cluster as a name.
func positionalArgs(least, most int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < least || len(args) > most {
			return usageErrorf("%s takes %s (got %d argument(s): %s)", cmd.CommandPath(), what, len(args), quoteArgs(args))
		}
		for _, a := range args {
			if strings.TrimSpace(a) == "" {
				return usageErrorf("%s takes %s, not an empty argument", cmd.CommandPath(), what)
			}
		}
		return nil
	}
}

// quoteArgs quotes the arguments for an error message, with the
// credentials of any URL among them redacted (package redact).
func quoteArgs(args []string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = strconv.Quote(redact.URL(a))
	}
	return "[" + strings.Join(quoted, " ") + "]"
}

// quietContext returns ctx for the library calls of the commands that show
// progress events (plan, drain, rollout, uncordon, wait-healthy, domains,
// audit): at -v 0 the library's V(0) lines would repeat those events, so
// only its errors are logged (udrain.ErrorsOnly); -v 1 and above shows its
// log next to them.
func (o *options) quietContext(ctx context.Context) context.Context {
	if o.verbose > 0 {
		return ctx
	}
	return klog.NewContext(ctx, udrain.ErrorsOnly(klog.FromContext(ctx)))
}
