// Command udrain-bench is udrain's performance harness (issue 8). It brings
// up kwok clusters the way the end-to-end tests do (e2e/testbed, which calls
// hack/cluster.sh with a cluster name of its own), runs udrain and kubectl
// drain side by side on identical, fresh workloads, and writes
// results.json and results.md into -out (default _output/bench):
//
//	api      API requests per evicted pod, draining one domain with a PDB block
//	         (one domain of 2 nodes, groups of 4, at 0 s and 3 s of termination);
//	         each drainer's count checked against the API server's audit log;
//	         the time from the budget freeing to the blocked leader's eviction
//	rollout  rollout time against its lower bound; safety of both tools
//	scale    a udrain rollout over a large cluster (its own kwok cluster)
//	fleet    a udrain rollout over a fleet with ordinary pods (Deployments,
//	         DaemonSets on every node) beside the groups: 500 nodes by default,
//	         issue 15's 2,000 nodes with -fleet (its own kwok cluster)
//
// udrain runs in a child process (this binary, "udrain-bench drainer"), so
// its memory and CPU time are its own. hack/bench.sh runs the Go benchmarks
// first and hands their output in with -gobench and -outage.
//
//	udrain-bench                       # everything, at full scale
//	udrain-bench -quick                # scale scenario at 100 nodes
//	udrain-bench -run api,rollout -repeat 3
//	udrain-bench -run fleet -fleet     # the fleet at 2,000 nodes
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/udrain/udrain/e2e/bench"
	"github.com/udrain/udrain/e2e/testbed"
	"github.com/udrain/udrain/eviction"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "drainer" {
		os.Exit(drainer())
	}
	if len(os.Args) > 1 && os.Args[1] == "metrics-size" {
		os.Exit(metricsSize(os.Args[2:]))
	}
	os.Exit(run())
}

// metricsSize replays the events files of drainer jobs (logs/*.events.json
// of a run) through package metrics' Recorder and prints the size of its
// metrics as JSON, one line per file: for runs made before the drainer
// job sized them itself.
func metricsSize(files []string) int {
	if len(files) == 0 {
		fmt.Fprintln(os.Stderr, "usage: udrain-bench metrics-size EVENTS.json...")
		return 2
	}
	for _, name := range files {
		events, err := bench.ReadEventsFile(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, "udrain-bench metrics-size:", err)
			return 1
		}
		size, err := bench.MetricsSizeOf(events)
		if err != nil {
			fmt.Fprintln(os.Stderr, "udrain-bench metrics-size:", err)
			return 1
		}
		out, _ := json.Marshal(struct {
			File   string `json:"file"`
			Events int    `json:"events"`
			*bench.MetricsSize
		}{name, len(events), size})
		fmt.Println(string(out))
	}
	return 0
}

// drainer is the child: a DrainerJob on stdin, a DrainerReport on stdout.
func drainer() int {
	var job bench.DrainerJob
	if err := json.NewDecoder(os.Stdin).Decode(&job); err != nil {
		fmt.Fprintln(os.Stderr, "udrain-bench drainer: reading the job from stdin:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx = klog.NewContext(ctx, klog.Background())
	rep, err := bench.RunDrainerJob(ctx, job)
	if err != nil {
		fmt.Fprintln(os.Stderr, "udrain-bench drainer:", err)
		return 1
	}
	if err := json.NewEncoder(os.Stdout).Encode(rep); err != nil {
		fmt.Fprintln(os.Stderr, "udrain-bench drainer: writing the report:", err)
		return 1
	}
	return 0
}

type flags struct {
	out, runList, cluster, scaleCluster, kubeconfig, scaleKubeconfig string
	fleetCluster, fleetKubeconfig, fleetKwokConfig                   string
	goBench, goBenchCmd, outage, note, repo, render                  string
	repeat                                                           int
	quick, dumpPods, profile, fullFleet, noAudit, fleetQPSLimits     bool
	small, api, scale                                                bench.Shape
	fleet                                                            bench.FleetShape
	fleetModes                                                       []bench.FleetMode
	scaleNodes, scaleGroups                                          int
	block, upgradeStep, kubectlTimeout, timeout                      time.Duration
	apiTerminate                                                     []time.Duration
	qps                                                              float64
	burst                                                            int
}

func parseFlags() (*flags, error) {
	f := &flags{}
	fs := flag.NewFlagSet("udrain-bench", flag.ContinueOnError)
	fs.StringVar(&f.out, "out", "", "folder for results.json and results.md (default <repo>/_output/bench)")
	fs.StringVar(&f.runList, "run", "api,rollout,scale,fleet", "scenarios to run, comma-separated: api, rollout, scale, fleet (none: only collect -gobench/-outage)")
	fs.IntVar(&f.repeat, "repeat", 1, "runs of the api and rollout scenarios (for their spread)")
	fs.BoolVar(&f.quick, "quick", false, "a quick run: the scale scenario at 100 nodes in 5 domains with 20 groups (unless -scale-* are given)")
	fs.StringVar(&f.cluster, "cluster", "udrain-bench", "kwok cluster of the api and rollout scenarios (made and deleted here)")
	fs.StringVar(&f.scaleCluster, "scale-cluster", "udrain-bench-scale", "kwok cluster of the scale scenario (made and deleted here)")
	fs.StringVar(&f.fleetCluster, "fleet-cluster", "udrain-bench-fleet", "kwok cluster of the fleet scenario (made and deleted here)")
	fs.StringVar(&f.fleetKubeconfig, "fleet-kubeconfig", "", "use this existing cluster for fleet instead of making one (never deleted)")
	fs.BoolVar(&f.fleetQPSLimits, "fleet-component-qps-limits", false, "fleet: keep kwokctl's default client limits of kube-controller-manager (20 QPS) and kube-scheduler (50 QPS) and the apiserver's inflight limits; by default the fleet's cluster is made with kwokctl --disable-qps-limits, as a cluster of thousands of nodes is tuned")
	fs.StringVar(&f.fleetKwokConfig, "fleet-kwok-config", "hack/kwok/kwok-bench.yaml", "fleet: kwok's own configuration for the fleet's cluster (kwokctl --config; a path in the checkout or an absolute one); it lets kwok play 32 pod Stages at once instead of 4. Empty: kwok's defaults")
	fs.BoolVar(&f.noAudit, "no-audit", false, "drainers use the admin's credentials, not ServiceAccounts of their own: no check against the audit log")
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "use this existing cluster for api and rollout instead of making one (never deleted)")
	fs.StringVar(&f.scaleKubeconfig, "scale-kubeconfig", "", "use this existing cluster for scale instead of making one (never deleted)")
	fs.StringVar(&f.repo, "repo", "", "the udrain checkout (default: found from the working directory)")
	fs.IntVar(&f.small.UDs, "uds", 3, "api/rollout: upgrade domains")
	fs.IntVar(&f.small.PerUD, "nodes-per-ud", 5, "api/rollout: 8-GPU nodes per domain (a group of 8 pods of 4 GPUs fills 4)")
	fs.IntVar(&f.small.Size, "size", 8, "rollout: pods per group")
	fs.IntVar(&f.api.Size, "api-size", 4, "api: pods per group (issue 15's small case: 4, one domain drained)")
	fs.IntVar(&f.api.PerUD, "api-nodes-per-ud", 2, "api: 8-GPU nodes per domain (a group of 4 pods of 4 GPUs fills 2)")
	fs.IntVar(&f.scaleNodes, "scale-nodes", 500, "scale: nodes")
	fs.IntVar(&f.scale.UDs, "scale-uds", 10, "scale: upgrade domains")
	fs.IntVar(&f.scaleGroups, "scale-groups", 100, "scale: groups (a multiple of -scale-uds: one workload per -scale-uds groups)")
	fs.IntVar(&f.scale.Size, "scale-size", 8, "scale: pods per group")
	full, quarter := bench.FullFleet(), bench.FullFleet().Quarter()
	fs.BoolVar(&f.fullFleet, "fleet", false, fmt.Sprintf("the fleet scenario at full size: %d nodes in %d domains, %d groups, %d ordinary pods (default: a quarter, %d nodes)", full.Nodes, full.UDs, full.Groups, full.OrdinaryPods, quarter.Nodes))
	fs.IntVar(&f.fleet.Nodes, "fleet-nodes", quarter.Nodes, "fleet: nodes (default a quarter of the full fleet; -fleet: "+fmt.Sprint(full.Nodes)+")")
	fs.IntVar(&f.fleet.UDs, "fleet-uds", quarter.UDs, "fleet: upgrade domains (-fleet: "+fmt.Sprint(full.UDs)+")")
	fs.IntVar(&f.fleet.Groups, "fleet-groups", quarter.Groups, "fleet: groups of -fleet-size pods (-fleet: "+fmt.Sprint(full.Groups)+")")
	fs.IntVar(&f.fleet.Size, "fleet-size", full.Size, "fleet: pods per group")
	fs.IntVar(&f.fleet.OrdinaryPods, "fleet-ordinary-pods", quarter.OrdinaryPods, "fleet: pods in no group, DaemonSet pods included (-fleet: "+fmt.Sprint(full.OrdinaryPods)+")")
	fs.IntVar(&f.fleet.DaemonSets, "fleet-daemonsets", full.DaemonSets, "fleet: DaemonSets, a pod on every node each (counted in -fleet-ordinary-pods)")
	fs.IntVar(&f.fleet.Namespaces, "fleet-namespaces", quarter.Namespaces, "fleet: namespaces of the Deployments (-fleet: "+fmt.Sprint(full.Namespaces)+")")
	ordinaryTwoStep := fs.Bool("fleet-ordinary-two-step", false, "fleet: kwok starts ordinary pods as group pods (Running, then ready after the start-up delay, an Event each); default: in one step, without Events")
	fs.IntVar(&f.fleet.ReplicasPerDeployment, "fleet-replicas", full.ReplicasPerDeployment, "fleet: replicas per Deployment")
	fs.IntVar(&f.fleet.Spare, "fleet-spare", full.Spare, "fleet: empty domains added once the workloads run (spare capacity, last in natural order)")
	fs.IntVar(&f.fleet.BudgetGroups, "fleet-budget", 1, "fleet: groups of a workload its PDB lets be down at once (minAvailable groups minus this; issue 35's fleet: 4)")
	fleetModes := fs.String("fleet-modes", "old,new", "fleet: rollouts to run, each on a fresh cluster, side by side in the report: old (no steering taint, natural order), new (udrain's default: steering, spare domains first), parallel (new with parallel domains: as many at once as the budgets and the upgraded room allow), parallel-in-place (parallel with InPlace and strict steering: as many as the budgets allow, groups without upgraded room waiting for their own domain), strict (NoSchedule on pending domains, spare domains first), new-score-all (new, on a cluster whose kube-scheduler scores every node: hack/kwok/scheduler-score-all.yaml); comma-separated")
	var ready, terminate time.Duration
	var grace int64
	fs.DurationVar(&ready, "ready-delay", 5*time.Second, "pods' start-up delay (kwok) before their containers are ready")
	fs.DurationVar(&terminate, "terminate-delay", 3*time.Second, "pods' termination delay (kwok) after deletion")
	fs.Int64Var(&grace, "grace", 30, "pods' termination grace period, seconds")
	apiTerminate := fs.String("api-terminate-delays", "0s,3s", "api: the pods' termination delays to measure at (the API cost of kubectl drain grows with them; 0s: gone within the second of the deletion)")
	fs.DurationVar(&f.block, "block", 30*time.Second, "api: how long another group stays unhealthy after the drains start")
	fs.DurationVar(&f.upgradeStep, "upgrade-step", 2*time.Second, "rollout/scale: upgrade step per domain (udrain) and per node (kubectl)")
	fs.DurationVar(&f.kubectlTimeout, "kubectl-node-timeout", 3*time.Minute, "kubectl drain --timeout per node (kubectl's default, none, can hang forever)")
	fs.DurationVar(&f.timeout, "timeout", 15*time.Minute, "limit of each deployment and recovery wait")
	fs.Float64Var(&f.qps, "qps", 50, "client QPS of both drainers (udrain's CLI default)")
	fs.IntVar(&f.burst, "burst", 100, "client burst of both drainers (udrain's CLI default)")
	fs.StringVar(&f.goBench, "gobench", "", "output of go test -bench to include")
	fs.StringVar(&f.goBenchCmd, "gobench-cmd", "", "the command that produced -gobench, for the report")
	fs.StringVar(&f.outage, "outage", "", "JSON line of hack/bench/bootstrap-outage to include")
	fs.BoolVar(&f.profile, "profile", false, "each udrain drainer process writes a CPU profile next to its log (go tool pprof)")
	fs.BoolVar(&f.dumpPods, "dump-pods", false, "also write every recorded pod event in full (JSON lines) next to the logs")
	fs.StringVar(&f.render, "render", "", "only render this results.json again as results.md into -out (after a change of the report)")
	fs.StringVar(&f.note, "note", "shared with other jobs", "what else runs on the machine, for the report")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return nil, err
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if f.quick {
		if !set["scale-nodes"] {
			f.scaleNodes = 100
		}
		if !set["scale-uds"] {
			f.scale.UDs = 5
		}
		if !set["scale-groups"] {
			f.scaleGroups = 20
		}
	}
	if f.fullFleet {
		for name, v := range map[string]*int{"fleet-nodes": &f.fleet.Nodes, "fleet-uds": &f.fleet.UDs, "fleet-groups": &f.fleet.Groups,
			"fleet-ordinary-pods": &f.fleet.OrdinaryPods, "fleet-namespaces": &f.fleet.Namespaces} {
			if !set[name] {
				*v = map[string]int{"fleet-nodes": full.Nodes, "fleet-uds": full.UDs, "fleet-groups": full.Groups,
					"fleet-ordinary-pods": full.OrdinaryPods, "fleet-namespaces": full.Namespaces}[name]
			}
		}
	}
	for _, s := range []*bench.Shape{&f.small, &f.api, &f.scale} {
		s.GPUsPerPod, s.ReadyDelay, s.TerminateDelay, s.Grace = 4, ready, terminate, grace
	}
	f.fleet.GPUsPerPod, f.fleet.ReadyDelay, f.fleet.OrdinaryReadyDelay, f.fleet.TerminateDelay, f.fleet.Grace = 4, ready, full.OrdinaryReadyDelay, terminate, grace
	f.fleet.OrdinaryStartReady = !*ordinaryTwoStep
	f.small.Workloads = 1
	f.api.UDs, f.api.Workloads = f.small.UDs, 1
	if f.scale.UDs < 1 || f.scaleNodes%f.scale.UDs != 0 || f.scaleGroups%f.scale.UDs != 0 {
		return nil, fmt.Errorf("-scale-nodes (%d) and -scale-groups (%d) must be multiples of -scale-uds (%d)", f.scaleNodes, f.scaleGroups, f.scale.UDs)
	}
	f.scale.PerUD, f.scale.Workloads = f.scaleNodes/f.scale.UDs, f.scaleGroups/f.scale.UDs
	for _, s := range []struct {
		name  string
		shape bench.Shape
	}{{"rollout", f.small}, {"api", f.api}, {"scale", f.scale}} {
		if err := s.shape.Validate(); err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
	}
	if err := f.fleet.Validate(); err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	modes, err := bench.ParseFleetModes(*fleetModes)
	if err != nil {
		return nil, fmt.Errorf("-fleet-modes: %w", err)
	}
	f.fleetModes = modes
	for _, d := range strings.Split(*apiTerminate, ",") {
		v, err := time.ParseDuration(strings.TrimSpace(d))
		if err != nil || v < 0 || v > time.Duration(grace)*time.Second {
			return nil, fmt.Errorf("-api-terminate-delays: %q must be a duration between 0 and the grace period (%ds)", d, grace)
		}
		f.apiTerminate = append(f.apiTerminate, v)
	}
	if f.repeat < 1 {
		return nil, errors.New("-repeat must be at least 1")
	}
	for _, s := range strings.Split(f.runList, ",") {
		switch s {
		case "api", "rollout", "scale", "fleet", "none", "":
		default:
			return nil, fmt.Errorf("-run: unknown scenario %q (api, rollout, scale, fleet, none)", s)
		}
	}
	return f, nil
}

func (f *flags) runs(s string) bool {
	for _, x := range strings.Split(f.runList, ",") {
		if x == s {
			return true
		}
	}
	return false
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "udrain-bench: %s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

func run() int {
	f, err := parseFlags()
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(os.Stderr, "udrain-bench:", err)
		return 2
	}
	if f.repo == "" {
		if f.repo, err = findRepoRoot(); err != nil {
			fmt.Fprintln(os.Stderr, "udrain-bench:", err)
			return 2
		}
	}
	if f.out == "" {
		f.out = filepath.Join(f.repo, "_output", "bench")
	}
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "udrain-bench:", err)
		return 1
	}
	if f.render != "" {
		if err := render(f.render, f.out); err != nil {
			fmt.Fprintln(os.Stderr, "udrain-bench:", err)
			return 1
		}
		return 0
	}
	if f.runList != "none" && f.runList != "" {
		// This run's logs, timelines and profiles only.
		if err := os.RemoveAll(filepath.Join(f.out, "logs")); err != nil {
			fmt.Fprintln(os.Stderr, "udrain-bench:", err)
			return 1
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	res := &bench.Results{
		Started: time.Now(),
		Command: command(),
		Commit:  os.Getenv("UDRAIN_BENCH_COMMIT"),
		Machine: machine(f.note),
		Settings: bench.Settings{Small: f.small, API: f.api, Scale: f.scale, Fleet: f.fleet, Block: f.block, APITerminateDelays: f.apiTerminate, UpgradeStep: f.upgradeStep,
			KubectlNodeTimeout: f.kubectlTimeout, QPS: float32(f.qps), Burst: f.burst, Repeat: f.repeat},
		GoBenchCommand: f.goBenchCmd,
	}
	fail := func(what string, err error) {
		logf("%s: %v", what, err)
		res.Errors = append(res.Errors, fmt.Sprintf("%s: %v", what, err))
	}
	cmp := bench.ComparisonConfig{Shape: f.small, Block: f.block, UpgradeStep: f.upgradeStep, KubectlNodeTimeout: f.kubectlTimeout, Timeout: f.timeout}
	if f.runs("api") || f.runs("rollout") {
		err := withCluster(ctx, f, f.cluster, f.kubeconfig, nil, func(env *bench.Env) {
			for i := 1; i <= f.repeat && ctx.Err() == nil; i++ {
				for _, d := range f.apiTerminate {
					if !f.runs("api") || ctx.Err() != nil {
						break
					}
					c := cmp
					c.Shape = f.api
					c.Shape.TerminateDelay = d
					if r, err := env.RunAPICost(ctx, c, i); err != nil {
						fail(fmt.Sprintf("api run %d (termination %s)", i, d), err)
					} else {
						res.APICost = append(res.APICost, r)
					}
					saveOrLog(f, res)
				}
				if f.runs("rollout") && ctx.Err() == nil {
					if c, err := env.RunRollout(ctx, cmp, i); err != nil {
						fail(fmt.Sprintf("rollout run %d", i), err)
					} else {
						res.Rollout = append(res.Rollout, c)
					}
					saveOrLog(f, res)
				}
			}
		})
		if err != nil {
			fail("cluster "+f.cluster, err)
		}
	}
	if f.runs("scale") && ctx.Err() == nil {
		err := withCluster(ctx, f, f.scaleCluster, f.scaleKubeconfig, nil, func(env *bench.Env) {
			if s, err := env.RunScale(ctx, f.scale, f.upgradeStep, f.timeout); err != nil {
				fail("scale", err)
			} else {
				res.Scale = s
			}
		})
		if err != nil {
			fail("cluster "+f.scaleCluster, err)
		}
	}
	for _, mode := range f.fleetModes {
		if !f.runs("fleet") || ctx.Err() != nil {
			break
		}
		// Each mode on a cluster of its own: the same fresh start, and
		// no namespace of the other still being deleted.
		flags, shown := fleetKwokctlFlags(f, mode)
		name := fleetClusterName(f.fleetCluster, mode, len(f.fleetModes))
		err := withCluster(ctx, f, name, f.fleetKubeconfig, flags, func(env *bench.Env) {
			if r, err := env.RunFleet(ctx, f.fleet, mode, f.upgradeStep, f.timeout); err != nil {
				fail("fleet ("+string(mode)+")", err)
			} else {
				r.KwokctlFlags = shown
				res.SetFleet(r)
			}
		})
		if err != nil {
			fail("cluster "+name, err)
		}
		saveOrLog(f, res)
	}
	if f.goBench != "" {
		data, err := os.ReadFile(f.goBench)
		if err == nil {
			res.GoBench, err = bench.ParseGoBench(bytes.NewReader(data))
		}
		if err != nil {
			fail("go benchmarks", err)
		}
	}
	if f.outage != "" {
		data, err := os.ReadFile(f.outage)
		if err == nil && !json.Valid(bytes.TrimSpace(data)) {
			err = fmt.Errorf("%s is not one JSON document", f.outage)
		}
		if err != nil {
			fail("bootstrap outage", err)
		} else {
			res.BootstrapOutage = json.RawMessage(bytes.TrimSpace(data))
		}
	}
	res.Duration = time.Since(res.Started)
	if err := save(f, res); err != nil {
		fmt.Fprintln(os.Stderr, "udrain-bench:", err)
		return 1
	}
	logf("results in %s and %s", filepath.Join(f.out, "results.json"), filepath.Join(f.out, "results.md"))
	switch {
	case ctx.Err() != nil:
		return 130
	case len(res.Errors) > 0:
		return 1
	}
	return 0
}

// withCluster brings up (or connects to) a cluster, runs the
// readiness-gate controller there, calls fn, and tears down what it made,
// also on a panic; a reaper process tears it down if this process is
// killed.
func withCluster(ctx context.Context, f *flags, name, kubeconfig string, kwokctlFlags []string, fn func(*bench.Env)) (err error) {
	opts := testbed.Options{Provider: testbed.Kwok, ClusterName: name, RepoRoot: f.repo, KwokctlFlags: kwokctlFlags,
		ArtifactsDir: filepath.Join(f.out, "artifacts"), Logf: logf}
	if kubeconfig != "" {
		opts = testbed.Options{Provider: testbed.Existing, Kubeconfig: kubeconfig, RepoRoot: f.repo, ArtifactsDir: opts.ArtifactsDir, Logf: logf}
	}
	bed := testbed.New(opts)
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		err = errors.Join(err, bed.Stop(ctx))
	}()
	if err := bed.Start(ctx); err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	env := &bench.Env{Kubeconfig: bed.Kubeconfig(), Config: bed.Config(), Client: bed.Client(),
		Drainer: bench.DrainerProcess{Command: exe, Args: []string{"drainer"}},
		QPS:     float32(f.qps), Burst: f.burst, LogDir: filepath.Join(f.out, "logs"), DumpPods: f.dumpPods, Profile: f.profile, Logf: logf}
	// A rollout takes its Lease in eviction.DefaultLockNamespace, which a
	// user's deployment makes (deploy/); a fresh testbed has none.
	lockNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: eviction.DefaultLockNamespace}}
	if _, err := bed.Client().CoreV1().Namespaces().Create(ctx, lockNS, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", lockNS.Name, err)
	}
	if _, err := bed.ComponentPIDs(ctx); err == nil {
		env.ComponentPIDs = bed.ComponentPIDs
	}
	if !f.noAudit {
		if _, err := bed.AuditLog(ctx, "nobody"); err != nil {
			logf("no check of the request counts against the audit log: %v", err)
		} else {
			env.Identities = &bench.Identities{Admin: bed.Client(), Config: bed.Config(), Namespace: "udrain-bench-clients"}
			if err := env.Identities.Setup(ctx); err != nil {
				return err
			}
			env.AuditLog = bed.AuditLog
		}
	}
	stopGate, err := env.StartGateController(ctx)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, stopGate()) }()
	fn(env)
	return nil
}

// fleetClusterName names the fleet's cluster of a mode: base, with the
// mode when several run. A cluster made again under the same name in one
// process is not reached: client-go (v0.37, CA rotation on) keys its
// cached TLS transports by the CA and client certificate files' paths,
// which the kwok kubeconfig names and which a cluster of the same name
// reuses, so the new cluster's certificate was checked against the old
// CA ("x509: certificate signed by unknown authority" for a minute, when
// the second mode's cluster came up under the first one's name).
func fleetClusterName(base string, mode bench.FleetMode, modes int) string {
	if modes < 2 {
		return base
	}
	return base + "-" + string(mode)
}

// fleetKwokctlFlags returns the extra kwokctl flags of the fleet's cluster,
// and the same with a path in the checkout relative to it, for the report.
func fleetKwokctlFlags(f *flags, mode bench.FleetMode) (flags, shown []string) {
	if !f.fleetQPSLimits {
		flags = append(flags, "--disable-qps-limits")
	}
	shown = slices.Clone(flags)
	file := func(flag, c string) {
		abs := c
		if !filepath.IsAbs(c) {
			abs = filepath.Join(f.repo, c)
		}
		flags = append(flags, flag+"="+abs)
		if rel, err := filepath.Rel(f.repo, abs); err == nil && filepath.IsLocal(rel) {
			c = rel
		}
		shown = append(shown, flag+"="+c)
	}
	if c := f.fleetKwokConfig; c != "" {
		file("--config", c)
	}
	if c := mode.SchedulerConfig(); c != "" {
		file("--kube-scheduler-config", c)
	}
	return flags, shown
}

// saveOrLog saves the results so far; a failure is only logged, the
// final save reports it.
func saveOrLog(f *flags, res *bench.Results) {
	if err := save(f, res); err != nil {
		logf("saving the results so far: %v", err)
	}
}

// save writes results.json and results.md, and a copy of both named by
// the run's start under runs/.
func save(f *flags, res *bench.Results) error {
	data, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	var md bytes.Buffer
	if err := bench.WriteMarkdown(&md, res); err != nil {
		return err
	}
	stamp := res.Started.Format("20060102-150405")
	runs := filepath.Join(f.out, "runs")
	if err := os.MkdirAll(runs, 0o755); err != nil {
		return err
	}
	for path, b := range map[string][]byte{
		filepath.Join(f.out, "results.json"):       data,
		filepath.Join(f.out, "results.md"):         md.Bytes(),
		filepath.Join(runs, stamp+"-results.json"): data,
		filepath.Join(runs, stamp+"-results.md"):   md.Bytes(),
	} {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// render writes results.md into out from a results.json.
func render(from, out string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	var res bench.Results
	if err := json.Unmarshal(data, &res); err != nil {
		return fmt.Errorf("%s: %w", from, err)
	}
	var md bytes.Buffer
	if err := bench.WriteMarkdown(&md, &res); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "results.md"), md.Bytes(), 0o644)
}

// command is how the run can be reproduced: hack/bench.sh names itself in
// UDRAIN_BENCH_COMMAND.
func command() string {
	if c := os.Getenv("UDRAIN_BENCH_COMMAND"); c != "" {
		return c
	}
	return "udrain-bench " + strings.Join(os.Args[1:], " ")
}

func machine(note string) bench.Machine {
	m := bench.Machine{CPUs: runtime.NumCPU(), OS: runtime.GOOS + "/" + runtime.GOARCH, GoVersion: runtime.Version(), Note: note}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				m.CPUModel = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				if kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB")); err == nil {
					m.MemoryGiB = (kb + (1 << 19)) >> 20
				}
			}
		}
	}
	return m
}

// findRepoRoot walks up from the working directory to the folder that
// holds hack/cluster.sh.
func findRepoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "hack", "cluster.sh")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no hack/cluster.sh above %s: run from the udrain checkout or pass -repo", wd)
		}
	}
}
