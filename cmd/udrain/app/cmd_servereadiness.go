package app

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/udrain/udrain/metrics"
	"github.com/udrain/udrain/readiness"
)

func newServeReadinessCommand(o *options) *cobra.Command {
	var (
		listen     string
		members    []string
		fromLWS    bool
		lws        readiness.LWSOptions
		checkerOpt readiness.Options
		tlsOpt     readiness.TLSOptions
		serveOpt   readiness.ServeOptions
		mf         metricsFlag
	)
	cmd := &cobra.Command{
		Use:   "serve-readiness",
		Short: "Serve a group's health as a readiness endpoint (a sidecar in the leader pod)",
		Long: `Serve GET /readyz: 200 while every member of the group is healthy, 500 with one
line per member otherwise, in the kube-apiserver's /readyz format (?verbose,
?exclude=NAME, /readyz/NAME shows why a member failed). Point the leader's
readinessProbe at it (never its livenessProbe), so that a
PodDisruptionBudget over the leaders counts healthy groups. GET /healthz
answers 200 while the server runs.

Members come from --member NAME=URL (http://, https:// or tcp://HOST:PORT),
or, with --from-lws-env, from the variables LeaderWorkerSet sets in the
leader pod (LWS_LEADER_ADDRESS, LWS_GROUP_SIZE, LWS_WORKER_INDEX), each
member checked at --scheme://<member>:--port--path. Members served over
https with a private CA, or that ask for a client certificate, take
--ca-file, --client-cert, --client-key and --server-name.

Members are checked concurrently, each within --member-timeout and all within
--check-timeout, and results are reused for --ttl. Member health changes are
logged to stderr, with the credentials of member URLs redacted.

The endpoint answers whoever can reach the pod. It shows which members are
healthy and, on /readyz/NAME, the class of a failure (connection refused,
timeout, DNS, HTTP status, TLS); --expose-member-errors shows the whole error
instead (addresses, the DNS resolver, the start of the member's answer). It
answers only GET and HEAD, refuses headers over --max-header-bytes, and
keeps at most --max-connections open, closing those held without a request
first. SIGTERM shuts the server down cleanly (exit code 0) within 5s,
whatever clients do.`,
		Example: `  # A LeaderWorkerSet leader whose members serve /health on port 8000
  udrain serve-readiness --from-lws-env --port 8000 --path /health --listen :8090

  # An explicit member list
  udrain serve-readiness --member worker-1=http://w1.grp.ns:8000/health --member worker-2=tcp://w2.grp.ns:8000

  # Members behind TLS with a private CA mounted from a Secret
  udrain serve-readiness --from-lws-env --scheme https --port 8443 --ca-file /etc/group-ca/ca.crt`,
		Args: exactArgs(0, "no arguments (members are flags)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.refuseClusterFlags(cmd); err != nil {
				return err
			}
			if !fromLWS && (cmd.Flags().Changed("port") || cmd.Flags().Changed("path") || cmd.Flags().Changed("scheme") || cmd.Flags().Changed("exclude-leader")) {
				return usageErrorf("--port, --path, --scheme and --exclude-leader go with --from-lws-env")
			}
			src := readiness.MembersOptions{Specs: members, LookupEnv: o.cfg.LookupEnv, TLS: tlsOpt}
			if fromLWS {
				src.LWS = &lws
			}
			list, err := src.Members()
			if err != nil {
				return inFlagTerms(err)
			}
			reg := mf.registry()
			memberMetrics, err := metrics.NewMembers(reg)
			if err != nil {
				return err
			}
			logger := klog.FromContext(cmd.Context())
			checkerOpt.OnChange = func(r readiness.MemberResult) {
				memberMetrics.Record(r.Name, r.Err == nil)
				if r.Err != nil {
					logger.Info("Member unhealthy", "member", r.Name, "reason", readiness.ReasonOf(r.Err), "err", r.Err)
				} else {
					logger.Info("Member healthy", "member", r.Name)
				}
			}
			checker, err := readiness.NewChecker(list, checkerOpt)
			if err != nil {
				return inFlagTerms(err)
			}
			srv, err := checker.NewServer(serveOpt)
			if err != nil {
				return inFlagTerms(err)
			}
			ln, err := o.cfg.Listen("tcp", listen)
			if err != nil {
				return usageErrorf("--listen=%q: %v", listen, err)
			}
			if err := mf.serve(cmd.Context(), o, reg); err != nil {
				ln.Close()
				return err
			}
			fmt.Fprintf(o.streams.ErrOut, "serving the readiness of %s on http://%s/readyz\n", plural(len(list), "member", "members"), ln.Addr())
			return srv.Serve(cmd.Context(), ln)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&listen, "listen", ":8090", "Address to serve on (HOST:PORT)")
	mf.add(cmd)
	fs.StringArrayVar(&members, "member", nil, "A member as NAME=URL (repeatable): http(s)://... answers 2xx when healthy, tcp://HOST:PORT accepts connections")
	fs.BoolVar(&fromLWS, "from-lws-env", false, "Take the members from the LeaderWorkerSet variables of the leader pod")
	fs.IntVar(&lws.Port, "port", 0, "With --from-lws-env: the port every member serves its health on")
	fs.StringVar(&lws.Path, "path", "/health", "With --from-lws-env: the HTTP path of the members' health")
	fs.StringVar(&lws.Scheme, "scheme", "http", "With --from-lws-env: http, https, or tcp to only connect")
	fs.BoolVar(&lws.ExcludeLeader, "exclude-leader", false, "With --from-lws-env: leave the leader itself out")
	fs.DurationVar(&checkerOpt.MemberTimeout, "member-timeout", readiness.DefaultMemberTimeout, "Bound of one member's check")
	fs.DurationVar(&checkerOpt.Timeout, "check-timeout", readiness.DefaultTimeout, "Bound of a round of checks over all members (keep it below the probe's timeoutSeconds)")
	fs.DurationVar(&checkerOpt.TTL, "ttl", readiness.DefaultTTL, "How long a round's results answer further probes; negative: none, every probe starts a round (concurrent probes share one)")
	fs.IntVar(&checkerOpt.FailureThreshold, "failure-threshold", 1, "Consecutive soft failures (slow or bad answers) before a reachable member counts as down")
	fs.BoolVar(&checkerOpt.ExposeMemberErrors, "expose-member-errors", false, "Show a failed member's whole error on /readyz/NAME (addresses, DNS resolver, the start of its answer), not only the class of the failure; URL credentials stay redacted")
	fs.StringVar(&tlsOpt.CAFile, "ca-file", "", "PEM bundle of the CAs that sign the members' certificates (https members); default the system roots")
	fs.StringVar(&tlsOpt.ServerName, "server-name", "", "Name every member's certificate must be valid for (https members); default each member's host")
	fs.StringVar(&tlsOpt.ClientCertFile, "client-cert", "", "PEM client certificate for members that require one (https; with --client-key)")
	fs.StringVar(&tlsOpt.ClientKeyFile, "client-key", "", "PEM client key (https; with --client-cert)")
	fs.IntVar(&serveOpt.MaxConnections, "max-connections", readiness.DefaultMaxConnections, "Connections open at once; beyond, the oldest one held without a request is closed")
	fs.IntVar(&serveOpt.MaxHeaderBytes, "max-header-bytes", readiness.DefaultMaxHeaderBytes, "Longest request header (a probe's is a few hundred bytes)")
	return cmd
}

// serveReadinessIdle bounds "udrain serve-readiness" at rest: 5.6 MiB
// measured. cmd/udrain's black-box test holds the process to
// ServeReadinessMemory.
const serveReadinessIdle = 16 << 20

// ServeReadinessMemory returns the most anonymous memory, in bytes, that
// "udrain serve-readiness" holds with these server options and members,
// whatever its clients do: the idle process and what its checker and server
// add (opts.Memory). Set the sidecar's memory limit above it: what it holds
// beyond (the binary's own pages) the kernel can drop and read again.
func ServeReadinessMemory(opts readiness.ServeOptions, members int) int64 {
	return serveReadinessIdle + opts.Memory(members)
}
