package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// Goals of issues 8 and 15.
const (
	// GoalRequestRatio: udrain's API requests per evicted pod at most a
	// fifth of kubectl drain's (issue 8, pods terminating in 10 s or more).
	GoalRequestRatio = 0.2
	// GoalRequestRatioInstant and GoalRequestRatio3s: at most 0.40 of
	// kubectl's with instant termination, 0.25 with 3 s (issue 15's small
	// case: one domain, 4 pods, a 30 s block).
	GoalRequestRatioInstant = 0.40
	GoalRequestRatio3s      = 0.25
	// GoalBoundRatio: a udrain rollout at most 1.25 times its lower bound.
	GoalBoundRatio = 1.25
	// GoalUnblock: a blocked leader evicted within 100 ms of its budget
	// freeing, p95 over the runs (issue 15).
	GoalUnblock = 100 * time.Millisecond
	// Goals of the fleet (issue 15): drainer peak Go heap and RSS, API
	// requests per evicted pod.
	GoalFleetHeap = 150 << 20
	GoalFleetRSS  = 300 << 20
	// GoalFleetRequestsPerEvict: API requests per evicted pod (issue 15:
	// 3; issue 35: 1.5).
	GoalFleetRequestsPerEvict = 1.5
	// GoalParallelWall: a fleet rolled with parallel domains in at most
	// 0.35 times the wall time of the same fleet one domain at a time, in
	// the same report (issue 35).
	GoalParallelWall = 0.35
	// Goals of issue 22 for the fleet with udrain's steering: evictions
	// per ordinary pod, and no group disrupted more than once.
	GoalEvictionsPerOrdinaryPod = 1.05
)

// GoalRequestRatioAt is the goal of the API-cost ratio for pods that
// terminate in d: issue 15's below 10 s, issue 8's from 10 s.
func GoalRequestRatioAt(d time.Duration) float64 {
	switch {
	case d < time.Second:
		return GoalRequestRatioInstant
	case d < 10*time.Second:
		return GoalRequestRatio3s
	default:
		return GoalRequestRatio
	}
}

// Machine describes where the results were measured.
type Machine struct {
	CPUs      int    `json:"cpus"`
	CPUModel  string `json:"cpuModel,omitempty"`
	MemoryGiB int    `json:"memoryGiB,omitempty"`
	OS        string `json:"os"`
	GoVersion string `json:"goVersion"`
	// Note says what else ran there (a shared machine).
	Note string `json:"note,omitempty"`
}

// Settings are the harness's parameters for a run.
type Settings struct {
	Small              Shape           `json:"small"`
	API                Shape           `json:"api"`
	Scale              Shape           `json:"scale"`
	Fleet              FleetShape      `json:"fleet"`
	Block              time.Duration   `json:"block"`
	APITerminateDelays []time.Duration `json:"apiTerminateDelays"`
	UpgradeStep        time.Duration   `json:"upgradeStep"`
	KubectlNodeTimeout time.Duration   `json:"kubectlNodeTimeout"`
	QPS                float32         `json:"qps"`
	Burst              int             `json:"burst"`
	Repeat             int             `json:"repeat"`
}

// Results is everything one harness run measured: the JSON document of
// _output/bench/results.json, rendered by [WriteMarkdown].
type Results struct {
	Started  time.Time     `json:"started"`
	Duration time.Duration `json:"duration"`
	// Command reproduces the run; Commit is the udrain commit measured
	// ("-dirty" when the checkout had changes).
	Command  string        `json:"command"`
	Commit   string        `json:"commit,omitempty"`
	Machine  Machine       `json:"machine"`
	Settings Settings      `json:"settings"`
	APICost  []*Comparison `json:"apiCost,omitempty"`
	Rollout  []*Comparison `json:"rollout,omitempty"`
	Scale    *ScaleResult  `json:"scale,omitempty"`
	// Fleet is the fleet's rollout in udrain's default mode (or in the
	// only mode run before issue 22); FleetOld the same fleet with the old
	// behaviour (FleetOld), on a cluster of its own, for the side by side.
	// FleetStrict is the same fleet with the strict steering;
	// FleetScoreAll udrain's default with kube-scheduler scoring every
	// node.
	Fleet         *FleetResult `json:"fleet,omitempty"`
	FleetOld      *FleetResult `json:"fleetOld,omitempty"`
	FleetStrict   *FleetResult `json:"fleetStrict,omitempty"`
	FleetScoreAll *FleetResult `json:"fleetScoreAll,omitempty"`
	// FleetParallel is udrain's default with parallel domains (issue
	// 35), beside Fleet, one domain at a time.
	FleetParallel *FleetResult `json:"fleetParallel,omitempty"`
	// FleetInPlace is the same with RolloutOptions.InPlace.
	FleetInPlace *FleetResult `json:"fleetInPlace,omitempty"`
	// GoBench are the packages' Go benchmarks (hack/bench.sh runs them).
	GoBench []GoBenchmark `json:"goBenchmarks,omitempty"`
	// GoBenchCommand is the command that produced GoBench.
	GoBenchCommand string `json:"goBenchCommand,omitempty"`
	// BootstrapOutage is the JSON line of hack/bench/bootstrap-outage.
	BootstrapOutage json.RawMessage `json:"bootstrapOutage,omitempty"`
	// Errors are the scenarios that failed, with why.
	Errors []string `json:"errors,omitempty"`
}

// WriteMarkdown renders the results as the tables of docs/PERFORMANCE.md.
func WriteMarkdown(w io.Writer, r *Results) error {
	m := &mdWriter{w: w}
	m.f("# udrain benchmark results\n\n")
	commit := ""
	if r.Commit != "" {
		commit = " of commit " + r.Commit
	}
	m.f("Run%s %s, took %s. Machine: %s. Reproduce: `%s`.\n\n", commit, r.Started.UTC().Format(time.RFC3339), dur(r.Duration), r.Machine.describe(), r.Command)
	for _, e := range r.Errors {
		m.f("**Failed:** %s\n\n", e)
	}
	m.summary(r)
	if len(r.APICost) > 0 {
		m.apiCost(r)
	}
	if len(r.Rollout) > 0 {
		m.rollout(r)
	}
	if r.Scale != nil {
		m.scale(r.Scale)
	}
	if len(r.fleetRuns()) > 0 {
		m.fleets(r)
	}
	if len(r.GoBench) > 0 || len(r.BootstrapOutage) > 0 {
		m.goBench(r)
	}
	return m.err
}

func (mc Machine) describe() string {
	s := fmt.Sprintf("%d CPUs", mc.CPUs)
	if mc.CPUModel != "" {
		s += " (" + mc.CPUModel + ")"
	}
	if mc.MemoryGiB > 0 {
		s += fmt.Sprintf(", %d GiB", mc.MemoryGiB)
	}
	s += ", " + mc.OS + ", " + mc.GoVersion
	if mc.Note != "" {
		s += "; " + mc.Note
	}
	return s
}

type mdWriter struct {
	w   io.Writer
	err error
}

func (m *mdWriter) f(format string, args ...any) {
	if m.err == nil {
		_, m.err = fmt.Fprintf(m.w, format, args...)
	}
}

func (m *mdWriter) row(cells ...string) { m.f("| %s |\n", strings.Join(cells, " | ")) }

func (m *mdWriter) header(cells ...string) {
	m.row(cells...)
	seps := make([]string, len(cells))
	for i := range seps {
		seps[i] = "---"
	}
	m.row(seps...)
}

func (m *mdWriter) summary(r *Results) {
	m.f("## Summary\n\n")
	m.f("Figures over %d run(s) side by side: median [min–max].\n\n", max(r.Settings.Repeat, 1))
	m.header("figure", "udrain", "kubectl drain", "udrain / kubectl", "goal", "met")
	for _, cs := range byTermination(r.APICost) {
		u, k, ratio := collect(cs, func(s Side) float64 { return s.RequestsPerEvictedPod })
		goal := GoalRequestRatioAt(cs[0].Shape.TerminateDelay)
		m.row(fmt.Sprintf("API requests per evicted pod, drain of one domain (%d pods) with a %s PDB block, pods terminating in %s", cs[0].Shape.Size, dur(cs[0].Block), dur(cs[0].Shape.TerminateDelay)),
			spread(u, "%.2f"), spread(k, "%.2f"), spread(ratio, "%.2f"), fmt.Sprintf("≤ %.2f", goal), metAudited(median(ratio) <= goal, cs))
	}
	if len(r.APICost) > 0 {
		var ua, ka []*AuditCheck
		for _, c := range r.APICost {
			ua, ka = append(ua, c.Udrain.Audit), append(ka, c.Kubectl.Audit)
		}
		m.row("API cost runs: harness's request count against the audit log (worst deviation; runs within 5%)", auditSummary(ua), auditSummary(ka), "", "≤ 5%", auditMet(r.APICost))
		u, k, _ := collect(r.APICost, func(s Side) float64 { return s.Unblocked.Seconds() })
		m.row("API cost runs: blocked leader evicted after the held group was healthy again (s)", spread(u, "%.2f"), spread(k, "%.2f"), "", "", "")
		ub, kb := unblocks(r.APICost, func(c *Comparison) Side { return c.Udrain }), unblocks(r.APICost, func(c *Comparison) Side { return c.Kubectl })
		m.row(fmt.Sprintf("API cost runs: blocked leader evicted after its PDB allowed a disruption (p50 / p95 / max over %d)", len(ub)),
			percentiles(ub), percentiles(kb), "", fmt.Sprintf("p95 ≤ %s", dur(GoalUnblock)), met(len(ub) > 0 && len(ub) == len(r.APICost) && percentile(ub, 0.95) <= GoalUnblock))
	}
	if len(r.Rollout) > 0 {
		var ratios, observed, walls, kwalls []float64
		for _, c := range r.Rollout {
			if b := c.Udrain.Breakdown; b != nil {
				ratios = append(ratios, b.Ratio)
				observed = append(observed, b.RatioObserved)
			}
			walls = append(walls, c.Udrain.Wall.Seconds())
			kwalls = append(kwalls, c.Kubectl.Wall.Seconds())
		}
		m.row("rollout time over its lower bound (configured termination delay)", spread(ratios, "%.2f"), "", "", fmt.Sprintf("≤ %.2f", GoalBoundRatio), met(len(ratios) > 0 && median(ratios) <= GoalBoundRatio))
		m.row("rollout time over its lower bound (termination as the recording saw it)", spread(observed, "%.2f"), "", "", fmt.Sprintf("≤ %.2f", GoalBoundRatio), met(len(observed) > 0 && median(observed) <= GoalBoundRatio))
		m.row("rollout wall time (s)", spread(walls, "%.1f"), spread(kwalls, "%.1f")+kubectlNote(r.Rollout), "", "", "")
		u, k, _ := collect(r.Rollout, func(s Side) float64 { return float64(s.Safety.MaxDisruptions) })
		uOnce, kOnce := true, true
		for _, c := range r.Rollout {
			uOnce = uOnce && c.Udrain.Safety.EachOnce()
			kOnce = kOnce && c.Kubectl.Safety.EachOnce()
		}
		m.row("rollout: every group disrupted exactly once (most disruptions of one group)", yesNo(uOnce)+" ("+spread(u, "%.0f")+")", yesNo(kOnce)+" ("+spread(k, "%.0f")+")", "", "each group once", met(uOnce))
		um, km, _ := collect(r.Rollout, func(s Side) float64 { return float64(s.Safety.MinMargin) })
		m.row("rollout: fewest healthy groups − PDB minAvailable", spread(um, "%+.0f"), spread(km, "%+.0f"), "", "≥ 0", met(minOf(um) >= 0))
		ur, kr, rr := collect(r.Rollout, func(s Side) float64 { return s.RequestsPerEvictedPod })
		m.row("rollout: API requests per evicted pod", spread(ur, "%.1f"), spread(kr, "%.1f"), spread(rr, "%.2f"), "", "")
		var ua, ka []*AuditCheck
		for _, c := range r.Rollout {
			ua, ka = append(ua, c.Udrain.Audit), append(ka, c.Kubectl.Audit)
		}
		m.row("rollout: harness's request count against the audit log (worst deviation; runs within 5%)", auditSummary(ua), auditSummary(ka), "", "≤ 5%", auditMet(r.Rollout))
	}
	if s := r.Scale; s != nil {
		u := s.Udrain
		label := fmt.Sprintf("scale (%d nodes, %d domains, %d groups of %d)", s.Shape.Nodes(), s.Shape.UDs, s.Shape.Groups(), s.Shape.Size)
		safe := u.Safety.EachOnce() && u.Safety.MinMargin >= 0 && u.Err == ""
		ratio := ""
		if b := u.Breakdown; b != nil {
			ratio = fmt.Sprintf(", %.2f× its bound (%.2f× with the termination observed)", b.Ratio, b.RatioObserved)
		}
		m.row(label+": completes, each group once, never below minAvailable", fmt.Sprintf("%s in %s%s", yesNo(safe), dur(u.Wall), ratio), "not run", "", "same guarantees", met(safe))
		if mem := u.Memory; mem != nil {
			m.row(label+": drainer peak heap / peak RSS / CPU", fmt.Sprintf("%s / %s / %s", mib(mem.PeakHeapAlloc), mib(uint64(mem.MaxRSS)), dur(mem.UserCPU+mem.SystemCPU)), "", "", "", "")
		}
		m.row(label+": API requests per evicted pod", fmt.Sprintf("%.2f", u.RequestsPerEvictedPod), "", "", "", "")
	}
	for _, fl := range r.fleetRuns() {
		m.fleetSummary(fl)
		if (fl.Mode == FleetParallel || fl.Mode == FleetParallelInPlace) && r.Fleet != nil && r.Fleet.Udrain.Wall > 0 {
			x := float64(fl.Udrain.Wall) / float64(r.Fleet.Udrain.Wall)
			with := "parallel domains"
			if fl.Mode == FleetParallelInPlace {
				with = "parallel domains in place"
			}
			m.row(fmt.Sprintf("fleet: rollout wall time with %s against one at a time (%s against %s, same report)", with, dur(fl.Udrain.Wall), dur(r.Fleet.Udrain.Wall)),
				fmt.Sprintf("%.2f", x), "", "", fmt.Sprintf("≤ %.2f", GoalParallelWall), met(x <= GoalParallelWall))
			if floor := fl.RolloutLoad.Floor(); floor > 0 {
				m.row(fmt.Sprintf("fleet: the least wall time the CPU work of the rollout with %s allows on this machine (%s: CPU time of the processes metered over %d CPUs), against one at a time", with, dur(floor), fl.RolloutLoad.CPUs),
					fmt.Sprintf("%.2f", float64(floor)/float64(r.Fleet.Udrain.Wall)), "", "", "reported", "")
			}
		}
	}
	m.f("\n")
}

func kubectlNote(cs []*Comparison) string {
	failed := 0
	for _, c := range cs {
		if c.Kubectl.Err != "" {
			failed++
		}
	}
	if failed == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d of %d did not finish)", failed, len(cs))
}

func (m *mdWriter) apiCost(r *Results) {
	c0 := r.APICost[0]
	m.f("## 1. API cost: one domain drained with a %s PDB block\n\n", dur(c0.Block))
	m.f("%s. The group in domain 1 is held unhealthy (a worker's containers unready) for %s after both drains start, so the leader of domain 0 is refused (429) for that long. Each tool has its own identical, fresh pool; both run at the same time; every HTTP request of each drainer's client is counted, udrain's list and watch requests included. An evicted pod is an eviction the API server accepted.\n\n",
		c0.Shape.describe(), dur(c0.Block))
	m.f("Each drainer authenticates as a ServiceAccount of its own, so the API server's audit log counts its requests independently of the harness (the reference); the harness's count must be within 5%% of it.\n\n")
	m.header("run", "termination delay", "tool", "requests (harness)", "requests (audit log)", "429s", "evictions accepted", "requests / evicted pod", "udrain / kubectl", "wall",
		"leader evicted after the held group healthy", "after the PDB allowed", "workers evicted before a leader of their domain", "fewest healthy − minAvailable", "error")
	for _, cs := range byTermination(r.APICost) {
		for _, c := range cs {
			for _, s := range []Side{c.Udrain, c.Kubectl} {
				ratio := ""
				if s.Tool == "udrain" {
					ratio = fmt.Sprintf("%.2f", c.RequestRatio)
				}
				m.row(fmt.Sprint(c.Run), dur(c.Shape.TerminateDelay), s.Tool, fmt.Sprint(s.Requests.Total()), auditCell(s.Audit), fmt.Sprint(s.Requests.TooMany()), fmt.Sprint(s.EvictedPods),
					fmt.Sprintf("%.2f", s.RequestsPerEvictedPod), ratio, dur(s.Wall), seen(s.Unblocked), seen(s.UnblockedAfterBudget), fmt.Sprint(s.Safety.WorkersBeforeLeaders), margin(s.Safety), s.Err)
			}
		}
	}
	m.f("\nRequests by kind, run %d (termination delay %s):\n\n", c0.Run, dur(c0.Shape.TerminateDelay))
	m.requestKinds(c0.Udrain.Requests, c0.Kubectl.Requests)
}

// byTermination groups comparisons by their pods' termination delay, in
// the order they came.
func byTermination(cs []*Comparison) [][]*Comparison {
	var out [][]*Comparison
	idx := map[time.Duration]int{}
	for _, c := range cs {
		i, ok := idx[c.Shape.TerminateDelay]
		if !ok {
			i = len(out)
			idx[c.Shape.TerminateDelay] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], c)
	}
	return out
}

func (m *mdWriter) requestKinds(u, k Requests) {
	kinds := map[Request][2]Tally{}
	for _, t := range u {
		v := kinds[t.Request]
		v[0] = t
		kinds[t.Request] = v
	}
	for _, t := range k {
		v := kinds[t.Request]
		v[1] = t
		kinds[t.Request] = v
	}
	keys := make([]Request, 0, len(kinds))
	for r := range kinds {
		keys = append(keys, r)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := kinds[keys[i]], kinds[keys[j]]
		if x, y := a[0].Count+a[1].Count, b[0].Count+b[1].Count; x != y {
			return x > y
		}
		return keys[i].String() < keys[j].String()
	})
	m.header("request", "udrain", "kubectl drain")
	cell := func(t Tally) string {
		if t.Count == 0 {
			return "–"
		}
		s := fmt.Sprint(t.Count)
		if t.TooMany > 0 {
			s += fmt.Sprintf(" (%d × 429)", t.TooMany)
		}
		return s
	}
	for _, r := range keys {
		m.row(r.String(), cell(kinds[r][0]), cell(kinds[r][1]))
	}
	m.row("**total** (response bytes)", fmt.Sprintf("**%d** (%s)", u.Total(), kib(u.Bytes())), fmt.Sprintf("**%d** (%s)", k.Total(), kib(k.Bytes())))
	m.f("\n")
}

func (m *mdWriter) rollout(r *Results) {
	c0 := r.Rollout[0]
	m.f("## 2. Rollout time against its lower bound\n\n")
	m.f("%s; upgrade step %s per domain. The lower bound of a rollout is the sum over domains of: one eviction round trip (median Evicting→Evicted), the termination delay, the upgrade step, and the time from the last uncordon until the pod recording shows every group of the domain Ready again (scheduling, start-up delay, readiness gate). Everything else is udrain's overhead.\n\n",
		c0.Shape.describe(), dur(c0.UpgradeStep))
	m.header("run", "wall", "lower bound", "ratio", "bound with observed termination", "ratio", "Σ wait gone − termination delay", "startup (watches, audit)", "Σ evict", "Σ uncordon + mark", "Σ PDB catch-up after groups Ready")
	for _, c := range r.Rollout {
		b := c.Udrain.Breakdown
		if b == nil {
			m.row(fmt.Sprint(c.Run), dur(c.Udrain.Wall), "–", "–", "–", "–", "–", "–", "–", "–", c.Udrain.Err)
			continue
		}
		var lag, evict, gone, unc time.Duration
		for _, d := range b.Domains {
			lag += d.RecoveryLag
			evict += d.Evict
			gone += d.WaitGone - c.Shape.TerminateDelay
			unc += d.Uncordon
		}
		m.row(fmt.Sprint(c.Run), dur(b.Wall), dur(b.Bound), fmt.Sprintf("%.2f", b.Ratio), dur(b.BoundObserved), fmt.Sprintf("%.2f", b.RatioObserved),
			dur(gone), dur(b.Startup), dur(evict), dur(unc), dur(lag))
	}
	m.f("\nPer domain, run %d:\n\n", c0.Run)
	if b := c0.Udrain.Breakdown; b != nil {
		m.domains(b)
	}
	m.f("## 3. Safety under the same clock\n\n")
	m.f("The same rollout, side by side with kubectl drain node by node (cordon, drain, upgrade step of %s, uncordon, next node) on an identical pool. A group is disrupted when it turns from healthy (whole, all members ready, leader Ready) to unhealthy in the pod recording.\n\n", dur(c0.UpgradeStep))
	m.header("run", "tool", "wall", "all groups healthy again after", "disruptions (groups once / more / never)", "most of one group", "fewest healthy − minAvailable", "glitches", "evictions accepted (pods terminated)", "requests / evicted pod", "error")
	for _, c := range r.Rollout {
		for _, s := range []Side{c.Udrain, c.Kubectl} {
			sf := s.Safety
			healthy := "–"
			if s.HealthyAfter > 0 {
				healthy = dur(s.HealthyAfter)
			}
			m.row(fmt.Sprint(c.Run), s.Tool, dur(s.Wall), healthy, fmt.Sprintf("%d (%d / %d / %d)", sf.Disruptions, sf.DisruptedOnce, sf.DisruptedMore, sf.NeverDisrupted),
				fmt.Sprint(sf.MaxDisruptions), margin(sf), fmt.Sprint(sf.Glitches), fmt.Sprintf("%d (%d)", s.EvictedPods, s.PodsTerminated), fmt.Sprintf("%.2f", s.RequestsPerEvictedPod), s.Err)
		}
	}
	m.f("\nRequests by kind, rollout run %d:\n\n", c0.Run)
	m.requestKinds(c0.Udrain.Requests, c0.Kubectl.Requests)
}

func (m *mdWriter) domains(b *Breakdown) {
	m.header("domain", "groups", "total", "prepare", "evict (round trip)", "wait gone (longest termination seen)", "upgrade", "uncordon + mark", "groups Ready after uncordon", "PDB catch-up", "finish", "bound (observed)")
	for _, d := range b.Domains {
		ready := dur(d.GroupsReady)
		if d.GroupsReady < 0 {
			ready = "not seen"
		}
		m.row(d.Domain, fmt.Sprint(d.Groups), dur(d.Total), dur(d.Prepare), fmt.Sprintf("%s (%s)", dur(d.Evict), dur(d.EvictionRoundTrip)),
			fmt.Sprintf("%s (%s)", dur(d.WaitGone), dur(d.Termination)), dur(d.Upgrade), dur(d.Uncordon), ready, dur(d.RecoveryLag), dur(d.Finish),
			fmt.Sprintf("%s (%s)", dur(d.Bound), dur(d.BoundObserved)))
	}
	m.f("\n")
}

func (m *mdWriter) scale(s *ScaleResult) {
	u := s.Udrain
	m.f("## 4. Scale\n\n")
	m.f("%s, on a kwok cluster of its own; upgrade step %s per domain. udrain runs in a child process (its peak RSS and CPU time from getrusage).\n\n", s.Shape.describe(), dur(s.UpgradeStep))
	m.header("figure", "value")
	m.row("deploy (nodes, workloads, all groups healthy)", dur(s.Deploy))
	m.row("rollout wall time", dur(u.Wall))
	if b := u.Breakdown; b != nil {
		m.row("lower bound; ratio", fmt.Sprintf("%s; %.2f", dur(b.Bound), b.Ratio))
		m.row("lower bound with the termination observed; ratio", fmt.Sprintf("%s; %.2f", dur(b.BoundObserved), b.RatioObserved))
	}
	if u.HealthyAfter > 0 {
		m.row("all groups healthy again after", dur(u.HealthyAfter))
	}
	sf := u.Safety
	m.row("disruptions (groups once / more / never)", fmt.Sprintf("%d (%d / %d / %d) of %d groups", sf.Disruptions, sf.DisruptedOnce, sf.DisruptedMore, sf.NeverDisrupted, sf.Groups))
	m.row("fewest healthy − minAvailable (worst workload)", margin(sf))
	m.row("glitches (kwok stage races, see below)", fmt.Sprint(sf.Glitches))
	m.row("API requests; per evicted pod", fmt.Sprintf("%d (%d × 429, %s); %.2f for %d evictions (%d pods terminated)", u.Requests.Total(), u.Requests.TooMany(), kib(u.Requests.Bytes()), u.RequestsPerEvictedPod, u.EvictedPods, u.PodsTerminated))
	m.row("the audit log's count", auditCell(u.Audit))
	m.row("response bytes of watches", mib(uint64(u.WatchBytes)))
	m.drainerRows(u)
	m.f("\nRequests by kind:\n\n")
	m.requestKinds(u.Requests, nil)
	if b := u.Breakdown; b != nil {
		m.f("Per domain:\n\n")
		m.domains(b)
	}
}

func (m *mdWriter) goBench(r *Results) {
	m.f("## 5. Go benchmarks\n\n")
	if r.GoBenchCommand != "" {
		m.f("`%s`\n\n", r.GoBenchCommand)
	}
	if len(r.GoBench) > 0 {
		m.header("package", "benchmark", "ns/op", "B/op", "allocs/op", "other")
		for _, b := range r.GoBench {
			var other []string
			for _, x := range b.Metrics {
				switch x.Unit {
				case "ns/op", "B/op", "allocs/op":
				default:
					other = append(other, fmt.Sprintf("%g %s", x.Value, x.Unit))
				}
			}
			get := func(unit string) string {
				if v, ok := b.Metric(unit); ok {
					return fmt.Sprintf("%.0f", v)
				}
				return "–"
			}
			m.row(strings.TrimPrefix(b.Package, "github.com/udrain/udrain/"), b.Name, get("ns/op"), get("B/op"), get("allocs/op"), strings.Join(other, ", "))
		}
		m.f("\n")
	}
	if len(r.BootstrapOutage) > 0 {
		var o struct {
			OutageS  float64 `json:"outage_s"`
			Clients  int     `json:"clients_per_kind"`
			Command  string  `json:"command"`
			Notice   float64 `json:"notice_ratio_loop_over_helper"`
			Requests float64 `json:"requests_ratio_helper_over_loop"`
			Helper   struct {
				Median   float64 `json:"notice_median_ms"`
				Requests float64 `json:"requests_during_outage_mean"`
			} `json:"helper"`
			Loop struct {
				Median   float64 `json:"notice_median_ms"`
				Requests float64 `json:"requests_during_outage_mean"`
			} `json:"sleep_loop"`
		}
		if err := json.Unmarshal(r.BootstrapOutage, &o); err != nil {
			m.f("Bootstrap outage harness: unreadable output (%v).\n\n", err)
			return
		}
		m.f("Bootstrap outage harness (`%s`): %d clients of each kind, a %.0fs outage.\n\n", o.Command, o.Clients, o.OutageS)
		m.header("client", "notices recovery after (median)", "requests during the outage (mean)")
		m.row("bootstrap.WaitForServer", fmt.Sprintf("%.0f ms", o.Helper.Median), fmt.Sprintf("%.1f", o.Helper.Requests))
		m.row("until curl; do sleep 5; done", fmt.Sprintf("%.0f ms", o.Loop.Median), fmt.Sprintf("%.1f", o.Loop.Requests))
		m.f("\nLoop's mean notice time over the helper's: %.1f×; the helper's requests over the loop's: %.2f×.\n\n", o.Notice, o.Requests)
	}
}

// seen formats a delay that is -1 when not seen.
func seen(d time.Duration) string {
	if d < 0 {
		return "not seen"
	}
	return dur(d)
}

// auditCell is the audit log's count of a side and whether the harness's
// agrees.
func auditCell(a *AuditCheck) string {
	switch {
	case a == nil:
		return "–"
	case a.Err != "":
		return "unreadable"
	case a.Agrees:
		return fmt.Sprintf("%d (%.1f%% apart)", a.AuditTotal, 100*a.Deviation)
	default:
		return fmt.Sprintf("**%d (%.1f%% apart: %s)**", a.AuditTotal, 100*a.Deviation, strings.Join(a.Differences, "; "))
	}
}

// auditSummary is the worst deviation of a side's runs and how many
// agreed.
func auditSummary(as []*AuditCheck) string {
	worst, agree, n := 0.0, 0, 0
	for _, a := range as {
		if a == nil || a.Err != "" {
			continue
		}
		n++
		worst = max(worst, a.Deviation)
		if a.Agrees {
			agree++
		}
	}
	if n == 0 {
		return "no audit log"
	}
	return fmt.Sprintf("%.1f%%; %d of %d", 100*worst, agree, n)
}

// audited says whether any side of the comparisons was checked against
// the audit log, and whether any check failed (unreadable, or more than
// AuditTolerance apart).
func audited(cs []*Comparison) (checked, failed bool) {
	for _, c := range cs {
		for _, a := range []*AuditCheck{c.Udrain.Audit, c.Kubectl.Audit} {
			if a == nil {
				continue
			}
			checked = true
			if a.Err != "" || !a.Agrees {
				failed = true
			}
		}
	}
	return checked, failed
}

// auditMet is the "met" cell of the audit agreement.
func auditMet(cs []*Comparison) string {
	checked, failed := audited(cs)
	if !checked {
		return "not checked"
	}
	return met(!failed)
}

// metAudited is the "met" cell of a request figure: flagged when the
// harness's count disagrees with the audit log.
func metAudited(ok bool, cs []*Comparison) string {
	if _, failed := audited(cs); failed {
		return "**flagged: the count disagrees with the audit log**"
	}
	return met(ok)
}

// unblocks lists a side's delays from the budget freeing to the blocked
// leader's eviction, of the runs where both were seen.
func unblocks(cs []*Comparison, side func(*Comparison) Side) []time.Duration {
	var out []time.Duration
	for _, c := range cs {
		if d := side(c).UnblockedAfterBudget; d > 0 {
			out = append(out, d)
		}
	}
	return out
}

// percentile is the nearest-rank p-quantile of ds (0 for none).
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func percentiles(ds []time.Duration) string {
	if len(ds) == 0 {
		return "not seen"
	}
	return fmt.Sprintf("%s / %s / %s", dur(percentile(ds, 0.5)), dur(percentile(ds, 0.95)), dur(percentile(ds, 1)))
}

func (s Shape) describe() string {
	return fmt.Sprintf("%d domains × %d nodes (8 GPUs each), %d workload(s) × %d groups × %d pods (%d GPUs each); start-up delay %s, termination delay %s",
		s.UDs, s.PerUD, s.Workloads, s.UDs, s.Size, s.GPUsPerPod, dur(s.ReadyDelay), dur(s.TerminateDelay))
}

// collect returns a per-side figure of each comparison and udrain's over
// kubectl's.
func collect(cs []*Comparison, f func(Side) float64) (u, k, ratio []float64) {
	for _, c := range cs {
		a, b := f(c.Udrain), f(c.Kubectl)
		u, k = append(u, a), append(k, b)
		if b != 0 {
			ratio = append(ratio, a/b)
		}
	}
	return u, k, ratio
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func minOf(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	m := xs[0]
	for _, x := range xs {
		m = min(m, x)
	}
	return m
}

// spread formats "median [min–max]", or one value.
func spread(xs []float64, format string) string {
	if len(xs) == 0 {
		return "–"
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s) == 1 || s[0] == s[len(s)-1] {
		return fmt.Sprintf(format, s[0])
	}
	return fmt.Sprintf(format+" ["+format+"–"+format+"]", median(s), s[0], s[len(s)-1])
}

// margin is the fewest healthy groups − minAvailable, glitches ignored,
// with the figure counting them when it differs.
func margin(s Safety) string {
	out := fmt.Sprintf("%+d", s.MinMargin)
	if s.MinMarginRaw != s.MinMargin {
		out += fmt.Sprintf(" (%+d with glitches)", s.MinMarginRaw)
	}
	return out
}

func met(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}

func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "no"
}

// dur formats a duration for a table: milliseconds below a second, else
// seconds with one decimal.
func dur(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case d > -time.Second && d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	default:
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
}

func mib(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func kib(b int64) string { return fmt.Sprintf("%.0f KiB", float64(b)/(1<<10)) }

func (f FleetShape) describe() string {
	ordinary := dur(f.OrdinaryReadyDelay)
	if f.OrdinaryStartReady {
		ordinary += ", started by kwok in one step without Events"
	}
	spare := ""
	if f.Spare > 0 {
		spare = fmt.Sprintf(", and %d spare domain(s) of %d nodes added empty once the workloads ran", f.Spare, f.PerUD())
	}
	return fmt.Sprintf("%d nodes (8 GPUs each) in %d domains%s; %d groups of %d pods (%d GPUs each) in %d workloads, each with a PDB over its leaders allowing %d group(s) down; %d ordinary pods: %d DaemonSet pods (%d DaemonSets on every node) and %d Deployment pods (%d Deployments in %d namespaces); start-up delay %s (ordinary pods %s), termination delay %s",
		f.Nodes, f.UDs, spare, f.Groups, f.Size, f.GPUsPerPod, f.Workloads(), max(f.BudgetGroups, 1), f.OrdinaryPods, f.DaemonSetPods(), f.DaemonSets, f.DeploymentPods(), f.Deployments(), f.Namespaces,
		dur(f.ReadyDelay), ordinary, dur(f.TerminateDelay))
}

// SetFleet keeps a fleet result in its place: FleetOld for the old mode,
// FleetStrict for the strict one, FleetScoreAll for the default on a
// scheduler that scores every node, Fleet otherwise.
func (r *Results) SetFleet(fl *FleetResult) {
	switch fl.Mode {
	case FleetOld:
		r.FleetOld = fl
	case FleetStrict:
		r.FleetStrict = fl
	case FleetNewScoreAll:
		r.FleetScoreAll = fl
	case FleetParallel:
		r.FleetParallel = fl
	case FleetParallelInPlace:
		r.FleetInPlace = fl
	default:
		r.Fleet = fl
	}
}

// fleetRuns lists the fleet results, old first, then the default, with
// parallel domains, on a scheduler that scores every node, strict last.
func (r *Results) fleetRuns() []*FleetResult {
	var out []*FleetResult
	for _, fl := range []*FleetResult{r.FleetOld, r.Fleet, r.FleetParallel, r.FleetInPlace, r.FleetScoreAll, r.FleetStrict} {
		if fl != nil {
			out = append(out, fl)
		}
	}
	return out
}

// modeLabel names a fleet run's mode in the report.
func (fl *FleetResult) modeLabel() string {
	switch fl.Mode {
	case FleetOld:
		return "old behaviour"
	case FleetNew:
		return "udrain's default"
	case FleetStrict:
		return "strict steering"
	case FleetNewScoreAll:
		return "udrain's default, the scheduler scoring every node"
	case FleetParallel:
		return "udrain's default, parallel domains"
	case FleetParallelInPlace:
		return "parallel domains in place"
	}
	return ""
}

func (m *mdWriter) fleetSummary(fl *FleetResult) {
	u := fl.Udrain
	label := fmt.Sprintf("fleet (%d nodes, %d domains, %d groups of %d, %d ordinary pods", fl.Shape.Nodes, fl.Shape.UDs, fl.Shape.Groups, fl.Shape.Size, fl.Shape.OrdinaryPods)
	if fl.Shape.Spare > 0 {
		label += fmt.Sprintf(", %d spare domain(s)", fl.Shape.Spare)
	}
	if ml := fl.modeLabel(); ml != "" {
		label += "; " + ml
	}
	label += ")"
	// The old behaviour is the comparison, not a promise: no goal.
	goal := func(g string, ok bool) (string, string) {
		if fl.Mode == FleetOld {
			return "", ""
		}
		return g, met(ok)
	}
	safe := u.Safety.EachOnce() && u.Safety.MinMargin >= 0 && u.Safety.LeadersFirst() && u.Err == ""
	g, ok := goal("same guarantees", safe)
	m.row(label+": completes, each group once, never below minAvailable, leaders first", fmt.Sprintf("%s in %s", yesNo(safe), dur(u.Wall)), "not run", "", g, ok)
	if fl.Mode != "" {
		g, ok = goal("0", u.Safety.DisruptedMore == 0)
		m.row(label+": groups disrupted more than once (the harness's pod recording)", fmt.Sprint(u.Safety.DisruptedMore), "", "", g, ok)
		g, ok = goal(fmt.Sprintf("≤ %.2f", GoalEvictionsPerOrdinaryPod), fl.OrdinaryPodsEvicted >= 0 && fl.EvictionsPerOrdinaryPod <= GoalEvictionsPerOrdinaryPod)
		m.row(label+": evictions per ordinary pod (audit log / Deployment pods)", evictionsPerOrdinary(fl), "", "", g, ok)
	}
	if b := u.Breakdown; b != nil {
		g, ok = goal(fmt.Sprintf("≤ %.2f", GoalBoundRatio), b.Ratio <= GoalBoundRatio)
		m.row(label+": rollout time over its lower bound (configured termination / as observed)", fmt.Sprintf("%.2f / %.2f", b.Ratio, b.RatioObserved), "", "", g, ok)
	}
	if mem := u.Memory; mem != nil {
		g, ok = goal("≤ "+mib(GoalFleetHeap), mem.PeakHeapAlloc <= GoalFleetHeap)
		m.row(label+": drainer peak Go heap", mib(mem.PeakHeapAlloc), "", "", g, ok)
		g, ok = goal("≤ "+mib(GoalFleetRSS), mem.jobRSS() > 0 && mem.jobRSS() <= GoalFleetRSS)
		m.row(label+": drainer peak RSS", mib(uint64(mem.jobRSS())), "", "", g, ok)
	}
	g, ok = goal(fmt.Sprintf("≤ %g", GoalFleetRequestsPerEvict), u.RequestsPerEvictedPod > 0 && u.RequestsPerEvictedPod <= GoalFleetRequestsPerEvict && u.Audit != nil && u.Audit.Agrees)
	m.row(label+": API requests per evicted pod (group and ordinary pods; audit log)", fmt.Sprintf("%.2f (%d / %d; audit %s)", u.RequestsPerEvictedPod, u.Requests.Total(), u.EvictedPods, auditCell(u.Audit)), "", "", g, ok)
	m.row(label+": bytes received from watches by the drainer", mib(uint64(u.WatchBytes)), "", "", "reported", "")
}

// inFlightCell says how many domains a fleet's rollout had in flight.
func inFlightCell(fl *FleetResult) string {
	f := fl.InFlight
	if f == nil {
		return "–"
	}
	return fmt.Sprintf("%d / %.2f; %d / %.2f", f.Most, f.Mean, f.MostClosed, f.MeanClosed)
}

// heldCell counts a fleet's DomainHeld events by reason.
func heldCell(fl *FleetResult) string {
	f := fl.InFlight
	if f == nil || len(f.Held) == 0 {
		return "none"
	}
	var parts []string
	for _, r := range slices.Sorted(maps.Keys(f.Held)) {
		parts = append(parts, fmt.Sprintf("%s %d", r, f.Held[r]))
	}
	return strings.Join(parts, ", ")
}

// floorCell is a fleet run's floor (Load.Floor of its rollout), against
// first's wall time, and its wall time over its floor.
func floorCell(first *FleetResult) func(*FleetResult) string {
	return func(fl *FleetResult) string {
		floor := fl.RolloutLoad.Floor()
		if floor <= 0 {
			return "–"
		}
		return fmt.Sprintf("%s; %.2f; %.2f", dur(floor), float64(floor)/float64(max(first.Udrain.Wall, 1)), float64(fl.Udrain.Wall)/float64(floor))
	}
}

// evictionsPerOrdinary is the evictions per ordinary pod, with the counts.
func evictionsPerOrdinary(fl *FleetResult) string {
	if fl.OrdinaryPodsEvicted < 0 {
		return "no audit log"
	}
	return fmt.Sprintf("%.2f (%d / %d)", fl.EvictionsPerOrdinaryPod, fl.OrdinaryPodsEvicted, fl.Shape.DeploymentPods())
}

// fleets writes section 6: the modes side by side, then each in full.
func (m *mdWriter) fleets(r *Results) {
	runs := r.fleetRuns()
	m.f("## 6. Fleet\n\n")
	m.f("%s; on a kwok cluster of its own per run; upgrade step %s per domain. A full rollout by udrain in a child process (peak RSS and CPU from getrusage); the groups observed from a pod recording of their namespace.\n\n", runs[0].Shape.describe(), dur(runs[0].UpgradeStep))
	if len(runs) > 1 {
		m.f("The same fleet rolled in each mode (issue 22), each on a fresh cluster:\n\n")
		head := []string{"figure"}
		for _, fl := range runs {
			head = append(head, fmt.Sprintf("%s (%s)", fl.Mode, fl.modeLabel()))
		}
		m.header(head...)
		for _, x := range []struct {
			name string
			cell func(*FleetResult) string
		}{
			{"evictions per ordinary pod (ordinary evictions, audit log / Deployment pods)", evictionsPerOrdinary},
			{"groups disrupted more than once (pod recording)", func(fl *FleetResult) string {
				return fmt.Sprintf("%d of %d", fl.Udrain.Safety.DisruptedMore, fl.Udrain.Safety.Groups)
			}},
			{"group pods started on a domain not upgraded yet (pod recording)", func(fl *FleetResult) string { return fmt.Sprint(fl.GroupPodsOnPending) }},
			{"rollout; lower bound; ratio (termination observed)", func(fl *FleetResult) string {
				if b := fl.Udrain.Breakdown; b != nil {
					return fmt.Sprintf("%s; %s; %.2f (%.2f)", dur(b.Wall), dur(b.Bound), b.Ratio, b.RatioObserved)
				}
				return dur(fl.Udrain.Wall)
			}},
			{"rollout wall time; against the first column's", func(fl *FleetResult) string {
				return fmt.Sprintf("%s; %.2f", dur(fl.Udrain.Wall), float64(fl.Udrain.Wall)/float64(max(runs[0].Udrain.Wall, 1)))
			}},
			{"the least wall time the rollout's CPU work allows on this machine (the metered processes' CPU time / CPUs); against the first column's wall; the rollout over it", floorCell(runs[0])},
			{"domains in flight at once: most / mean; cordoned (draining or upgrading) at once: most / mean", inFlightCell},
			{"domains held back (DomainHeld events by reason)", heldCell},
			{"Σ evict (udrain's eviction phases)", func(fl *FleetResult) string {
				var evict time.Duration
				if b := fl.Udrain.Breakdown; b != nil {
					for _, d := range b.Domains {
						evict += d.Evict
					}
				}
				return dur(evict)
			}},
			{"evictions accepted: group pods / ordinary pods (audit log)", func(fl *FleetResult) string {
				return fmt.Sprintf("%d / %d", fl.GroupPodsEvicted, fl.OrdinaryPodsEvicted)
			}},
			{"fewest healthy − minAvailable", func(fl *FleetResult) string { return margin(fl.Udrain.Safety) }},
			{"API requests per evicted pod (audit log)", func(fl *FleetResult) string {
				u := fl.Udrain
				return fmt.Sprintf("%.2f (%d / %d; audit %s)", u.RequestsPerEvictedPod, u.Requests.Total(), u.EvictedPods, auditCell(u.Audit))
			}},
			{"drainer peak heap / RSS during the rollout", func(fl *FleetResult) string {
				if mem := fl.Udrain.Memory; mem != nil {
					return fmt.Sprintf("%s / %s", mib(mem.PeakHeapAlloc), mib(uint64(mem.jobRSS())))
				}
				return "–"
			}},
			{"domain order", func(fl *FleetResult) string { return strings.Join(fl.DomainOrder, ", ") }},
			{"error", func(fl *FleetResult) string { return fl.Udrain.Err }},
		} {
			row := []string{x.name}
			for _, fl := range runs {
				row = append(row, x.cell(fl))
			}
			m.row(row...)
		}
		m.f("\n")
	}
	for _, fl := range runs {
		m.fleet(fl, len(runs) > 1)
	}
}

func (m *mdWriter) fleet(fl *FleetResult, sub bool) {
	u := fl.Udrain
	if sub {
		m.f("### %s: %s\n\n", fl.Mode, fl.Mode.Describe())
	} else if fl.Mode != "" {
		m.f("Mode %s: %s.\n\n", fl.Mode, fl.Mode.Describe())
	}
	if len(fl.SpareDomains) > 0 {
		m.f("Spare domain(s) %s, empty, added once the workloads ran (their DaemonSet pods ready %s later); the rollout over %s, order %q, steering %q (empty: udrain's default).\n\n",
			strings.Join(fl.SpareDomains, ", "), dur(fl.SpareReady), strings.Join(fl.Domains, ", "), fl.Order, fl.Steering)
	}
	if len(fl.KwokctlFlags) > 0 {
		m.f("The cluster was made with `kwokctl create cluster %s`.\n\n", strings.Join(fl.KwokctlFlags, " "))
	}
	m.header("figure", "value")
	m.row("deploy: every group healthy / every ordinary pod ready (from the first create)", fmt.Sprintf("%s / %s", dur(fl.GroupsHealthy), dur(fl.OrdinaryReady)))
	m.row("pods in the cluster when the rollout started", fmt.Sprint(fl.PodsAtStart))
	m.row("rollout wall time", dur(u.Wall))
	if len(fl.DomainOrder) > 0 {
		m.row("domain order", strings.Join(fl.DomainOrder, ", "))
	}
	if fl.InFlight != nil {
		m.row("domains in flight at once: most / mean; cordoned at once: most / mean", inFlightCell(fl))
		held := heldCell(fl)
		if len(fl.InFlight.HeldExamples) > 0 {
			held += " (" + strings.Join(fl.InFlight.HeldExamples, "; ") + ")"
		}
		m.row("domains held back (DomainHeld events)", held)
	}
	if b := u.Breakdown; b != nil {
		m.row("lower bound; ratio", fmt.Sprintf("%s; %.2f", dur(b.Bound), b.Ratio))
		m.row("lower bound with the termination observed; ratio", fmt.Sprintf("%s; %.2f", dur(b.BoundObserved), b.RatioObserved))
		var evict, prep, unc, lag time.Duration
		for _, d := range b.Domains {
			evict += d.Evict
			prep += d.Prepare
			unc += d.Uncordon
			lag += d.RecoveryLag
		}
		m.row("udrain's own time: Σ prepare / Σ evict / Σ uncordon + mark / Σ PDB catch-up", fmt.Sprintf("%s / %s / %s / %s", dur(prep), dur(evict), dur(unc), dur(lag)))
		if fl.QPS > 0 {
			m.row(fmt.Sprintf("the drainer's requests at its client limit of %.0f QPS (the least time they take)", fl.QPS), dur(time.Duration(float64(u.Requests.Total())/float64(fl.QPS)*float64(time.Second))))
		}
	}
	if u.HealthyAfter > 0 {
		m.row("all groups healthy again after", dur(u.HealthyAfter))
	}
	sf := u.Safety
	m.row("disruptions (groups once / more / never)", fmt.Sprintf("%d (%d / %d / %d) of %d groups", sf.Disruptions, sf.DisruptedOnce, sf.DisruptedMore, sf.NeverDisrupted, sf.Groups))
	m.row("fewest healthy − minAvailable (worst workload)", margin(sf))
	m.row("group pods other than leaders seen terminating before the last leader of their domain (whoever deleted them)", fmt.Sprint(sf.WorkersBeforeLeaders))
	if sf.EvictedBeforeLeaders != nil {
		m.row("of them evicted by the drainer (audit log), before the last leader it evicted there", fmt.Sprint(*sf.EvictedBeforeLeaders))
	}
	m.row("glitches (kwok stage races)", fmt.Sprint(sf.Glitches))
	if fl.Mode != "" {
		pending := fmt.Sprint(fl.GroupPodsOnPending)
		if len(fl.PendingExamples) > 0 {
			pending += " (" + strings.Join(fl.PendingExamples, "; ") + ")"
		}
		m.row("group pods started on a domain the rollout had not reached (pod recording)", pending)
		m.row("evictions per ordinary pod (audit log / Deployment pods)", evictionsPerOrdinary(fl))
	}
	m.row("evictions accepted: group pods / ordinary pods (audit log, by namespace)", fmt.Sprintf("%d / %d", fl.GroupPodsEvicted, fl.OrdinaryPodsEvicted))
	m.row("group pods seen terminating; of them deleted by the testbed itself (kwok), not evicted", fmt.Sprintf("%d; %d", fl.GroupPodsTerminated, fl.GroupPodsDeletedByOthers))
	m.row("API requests; per evicted pod", fmt.Sprintf("%d (%d × 429); %.2f for %d evictions", u.Requests.Total(), u.Requests.TooMany(), u.RequestsPerEvictedPod, u.EvictedPods))
	m.row("the audit log's count", auditCell(u.Audit))
	m.row("response bytes: watches / all", fmt.Sprintf("%s / %s", mib(uint64(u.WatchBytes)), mib(uint64(u.Requests.Bytes()))))
	m.drainerRows(u)
	m.f("\n")
	for _, x := range []struct {
		name string
		l    *Load
	}{{"deploy", fl.DeployLoad}, {"rollout", fl.RolloutLoad}} {
		if x.l == nil {
			continue
		}
		m.f("What the machine spent during the %s (%s, %d CPUs; the whole machine %.0f%% busy, other jobs included; the processes below kept %.2f cores busy):\n\n",
			x.name, dur(x.l.Wall), x.l.CPUs, 100*x.l.MachineBusy, x.l.Cores())
		m.header("process", "CPU time", "cores (CPU / wall)", "peak RSS")
		for _, n := range x.l.Names() {
			rss := "–"
			if v, ok := x.l.PeakRSS[n]; ok {
				rss = mib(uint64(v))
			}
			m.row(n, dur(x.l.CPU[n]), fmt.Sprintf("%.2f", x.l.CPU[n].Seconds()/max(x.l.Wall.Seconds(), 1e-9)), rss)
		}
		if x.l.Err != "" {
			m.f("\n(metering: %s)\n", x.l.Err)
		}
		m.f("\n")
	}
	m.f("Requests by kind:\n\n")
	m.requestKinds(u.Requests, nil)
	if b := u.Breakdown; b != nil {
		m.f("Per domain:\n\n")
		m.domains(b)
	}
}

// drainerRows adds the drainer's memory, CPU and error rows of a side.
func (m *mdWriter) drainerRows(u Side) {
	if mem := u.Memory; mem != nil {
		m.row("drainer peak Go heap (sampled) / heap in use", fmt.Sprintf("%s / %s", mib(mem.PeakHeapAlloc), mib(mem.PeakHeapInuse)))
		m.row("drainer peak RSS during the rollout; over the process's life (its report included); memory from the OS", fmt.Sprintf("%s; %s; %s", mib(uint64(mem.jobRSS())), mib(uint64(mem.MaxRSS)), mib(mem.Sys)))
		m.row("drainer CPU time (user + system); allocated; GCs", fmt.Sprintf("%s + %s; %s; %d", dur(mem.UserCPU), dur(mem.SystemCPU), mib(mem.TotalAlloc), mem.NumGC))
	}
	if ms := u.Metrics; ms != nil {
		m.row("udrain's Prometheus metrics after the run: series; samples a scrape returns", fmt.Sprintf("%d; %d", ms.Series, ms.Samples))
	}
	if u.Err != "" {
		m.row("error", u.Err)
	}
}

// jobRSS is the drainer's peak resident set during its job where it was
// read (JobMaxRSS), else over the process's life.
func (m Memory) jobRSS() int64 {
	if m.JobMaxRSS > 0 {
		return m.JobMaxRSS
	}
	return m.MaxRSS
}
