package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/udrain/udrain/readiness"
)

// readinessShutdownTimeout bounds the graceful shutdown of serve-readiness:
// a probe in flight gets this long to be answered.
const readinessShutdownTimeout = 5 * time.Second

func newServeReadinessCommand(o *options) *cobra.Command {
	var (
		listen     string
		members    []string
		fromLWS    bool
		lws        readiness.LWSOptions
		checkerOpt readiness.Options
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
member checked at --scheme://<member>:--port--path.

Members are checked concurrently, each within --member-timeout and all within
--check-timeout, and results are reused for --ttl. Member health changes are
logged to stderr. SIGTERM shuts the server down cleanly (exit code 0).`,
		Example: `  # A LeaderWorkerSet leader whose members serve /health on port 8000
  udrain serve-readiness --from-lws-env --port 8000 --path /health --listen :8090

  # An explicit member list
  udrain serve-readiness --member worker-1=http://w1.grp.ns:8000/health --member worker-2=tcp://w2.grp.ns:8000`,
		Args: exactArgs(0, "no arguments (members are flags)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var list []readiness.Member
			switch {
			case fromLWS && len(members) > 0:
				return usageErrorf("give members either with --member or with --from-lws-env, not both")
			case fromLWS:
				ms, err := readiness.MembersFromLWSEnv(o.cfg.LookupEnv, lws)
				if err != nil {
					return inFlagTerms(err)
				}
				list = ms
			case len(members) == 0:
				return usageErrorf("no members: give --member NAME=URL (repeatable), or --from-lws-env --port PORT in a LeaderWorkerSet leader")
			default:
				for _, spec := range members {
					m, err := readiness.ParseMember(spec)
					if err != nil {
						return inFlagTerms(err)
					}
					list = append(list, m)
				}
			}
			if !fromLWS && (flagChanged(cmd.Flags(), "port") || flagChanged(cmd.Flags(), "path") || flagChanged(cmd.Flags(), "scheme") || flagChanged(cmd.Flags(), "exclude-leader")) {
				return usageErrorf("--port, --path, --scheme and --exclude-leader go with --from-lws-env")
			}
			logger := klog.FromContext(cmd.Context())
			checkerOpt.OnChange = func(r readiness.MemberResult) {
				if err := r.State.Verdict(checkerOpt.FailureThreshold); err != nil {
					logger.Info("Member unhealthy", "member", r.Name, "err", err)
				} else {
					logger.Info("Member healthy", "member", r.Name)
				}
			}
			checker, err := readiness.NewChecker(list, checkerOpt)
			if err != nil {
				return inFlagTerms(err)
			}
			ln, err := o.cfg.Listen("tcp", listen)
			if err != nil {
				return usageErrorf("--listen=%q: %v", listen, err)
			}
			fmt.Fprintf(o.streams.ErrOut, "serving the readiness of %s on http://%s/readyz\n", plural(len(list), "member", "members"), ln.Addr())
			return serveReadiness(cmd.Context(), ln, checker.Handler())
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&listen, "listen", ":8090", "Address to serve on (HOST:PORT)")
	fs.StringArrayVar(&members, "member", nil, "A member as NAME=URL (repeatable): http(s)://... answers 2xx when healthy, tcp://HOST:PORT accepts connections")
	fs.BoolVar(&fromLWS, "from-lws-env", false, "Take the members from the LeaderWorkerSet variables of the leader pod")
	fs.IntVar(&lws.Port, "port", 0, "With --from-lws-env: the port every member serves its health on")
	fs.StringVar(&lws.Path, "path", "/health", "With --from-lws-env: the HTTP path of the members' health")
	fs.StringVar(&lws.Scheme, "scheme", "http", "With --from-lws-env: http, https, or tcp to only connect")
	fs.BoolVar(&lws.ExcludeLeader, "exclude-leader", false, "With --from-lws-env: leave the leader itself out")
	fs.DurationVar(&checkerOpt.MemberTimeout, "member-timeout", readiness.DefaultMemberTimeout, "Bound of one member's check")
	fs.DurationVar(&checkerOpt.Timeout, "check-timeout", readiness.DefaultTimeout, "Bound of a round of checks over all members (keep it below the probe's timeoutSeconds)")
	fs.DurationVar(&checkerOpt.TTL, "ttl", readiness.DefaultTTL, "How long a round's results answer further probes")
	fs.IntVar(&checkerOpt.FailureThreshold, "failure-threshold", 1, "Consecutive soft failures (slow or bad answers) before a reachable member counts as down")
	return cmd
}

// serveReadiness serves h on ln until ctx ends, then shuts down gracefully.
// A clean shutdown returns nil.
func serveReadiness(ctx context.Context, ln net.Listener, h http.Handler) error {
	mux := http.NewServeMux()
	mux.Handle("/readyz", h)
	mux.Handle("/readyz/", h)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, "ok")
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serving readiness: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readinessShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutting down the readiness server: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
