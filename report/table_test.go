package report_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/health"
	"github.com/udrain/udrain/report"
	"github.com/udrain/udrain/topology"
)

// table is doc's table with options o.
func table(t *testing.T, doc report.Document, o report.TableOptions) string {
	t.Helper()
	var b bytes.Buffer
	if err := doc.WriteTable(&b, o); err != nil {
		t.Fatalf("%T: %v", doc, err)
	}
	return b.String()
}

// flags names two settings as a command line would.
func flags(setting string) string {
	return map[string]string{
		"eviction.RolloutOptions.NoLock":        "--no-lock",
		"eviction.RolloutOptions.LockNamespace": "--lock-namespace",
	}[setting]
}

// TestTables covers the documents whose table is a line or two, and the
// options of the tables.
func TestTables(t *testing.T) {
	at := time.Date(2026, 7, 1, 10, 0, 0, 0, time.UTC)
	renewed := at.Add(-3 * time.Second)
	group := func(name string, healthy bool, msg string) health.GroupStatus {
		return health.GroupStatus{ID: topology.GroupID{Kind: topology.KindLeaderWorkerSet, Namespace: "inference", Name: name}, Healthy: healthy, Message: msg}
	}
	status := func(noLock bool, st eviction.RolloutStatus) report.RolloutStatusReport {
		st.ID, st.Time = "r1", at
		return report.RolloutStatusReport{NoLock: noLock, Status: &st}
	}
	finding := topology.Finding{Code: topology.FindingDisruptedAgain, Severity: udrain.SeverityWarning, Namespace: "inference", Group: "llama-0", Domains: []string{"ud-1"}, Message: "it will be disrupted again"}
	for _, tc := range []struct {
		name string
		doc  report.Document
		o    report.TableOptions
		want string
	}{
		{"version", report.Version{Version: "v0.1.0", Commit: "abc", BuildDate: "2026-11-30T10:00:00Z", GoVersion: "go1.26.8", Platform: "linux/amd64"}, report.TableOptions{},
			"udrain v0.1.0 (commit abc, built 2026-11-30T10:00:00Z, go1.26.8, linux/amd64)\n"},
		{"version unknown", report.Version{Version: "(devel)", GoVersion: "go1.26.8", Platform: "linux/arm64"}, report.TableOptions{},
			"udrain (devel) (commit unknown, built unknown, go1.26.8, linux/arm64)\n"},
		{"uncordon nothing", report.UncordonResult{Domain: "ud-1"}, report.TableOptions{},
			"Domain ud-1: every node was schedulable already.\n"},
		{"uncordon one", report.UncordonResult{Domain: "ud-1", Uncordoned: []string{"gpu-1"}}, report.TableOptions{},
			"Domain ud-1: uncordoned 1 node: gpu-1\n"},
		{"server reachable over HTTP", report.WaitServerResult{Target: "http://s/healthz", Reachable: true, Attempts: 3, ElapsedSeconds: 1.5, StatusCode: 200, RemoteAddr: "10.0.0.1:80"}, report.TableOptions{},
			"Server http://s/healthz reachable after 3 attempts in 2s (HTTP 200 from 10.0.0.1:80).\n"},
		{"server reachable over TCP", report.WaitServerResult{Target: "tcp://s:6379", Reachable: true, Attempts: 1, ElapsedSeconds: 0.25, RemoteAddr: "10.0.0.1:6379"}, report.TableOptions{},
			"Server tcp://s:6379 reachable after 1 attempt in 250ms (10.0.0.1:6379).\n"},
		{"server not reachable", report.WaitServerResult{Target: "tcp://s:6379", Attempts: 0}, report.TableOptions{},
			"Server tcp://s:6379 not reachable after 0 attempts in 0s; last failure: none completed\n"},
		{"healthy", report.HealthReport{Domain: "ud-1", WaitedSeconds: 92, Health: &health.Report{Healthy: true, Domains: []health.DomainStatus{
			{Domain: "ud-1", Healthy: true, Groups: []health.GroupStatus{group("llama-0", true, "")}, Budgets: []health.BudgetStatus{{Namespace: "inference", Name: "leaders", Healthy: true}}},
		}}}, report.TableOptions{},
			"Domain ud-1 is healthy (1 group, 1 PodDisruptionBudget; waited 1m32s).\n"},
		{"not healthy", report.HealthReport{WaitedSeconds: 600, Health: &health.Report{Domains: []health.DomainStatus{
			{Domain: "ud-1", Groups: []health.GroupStatus{group("llama-0", true, ""), group("llama-1", false, "member llama-1-1 is not Ready")},
				Budgets: []health.BudgetStatus{{Namespace: "inference", Name: "leaders", Message: "its status has not caught up"}}},
		}, Unscheduled: []health.GroupStatus{group("llama-2", false, "no pod is on a node")}}}, report.TableOptions{},
			"Every domain is not healthy after 10m0s:\n" +
				"  ud-1: group inference/llama-1: member llama-1-1 is not Ready\n" +
				"  ud-1: PodDisruptionBudget inference/leaders: its status has not caught up\n" +
				"  unscheduled: group inference/llama-2: no pod is on a node\n"},
		{"finding without a note", report.AuditReport{LabelKey: "zone", Domains: []string{"ud-1"}, Warnings: 1, Findings: []topology.Finding{finding}}, report.TableOptions{},
			"Audited 1 domain (label zone), 0 groups and 0 PodDisruptionBudgets.\n0 errors, 1 warning.\n\n" +
				"SEVERITY  CODE            NAMESPACE  GROUP/WORKLOAD  DOMAINS  PDBS\n" +
				"Warning   DisruptedAgain  inference  llama-0         ud-1     -\n\n" +
				"1. WARNING DisruptedAgain: it will be disrupted again\n"},
		{"a parallel rollout's schedule", report.AuditReport{LabelKey: "zone", Domains: []string{"ud-1", "ud-2", "ud-3"}, Rollout: &eviction.RolloutPlan{
			Steering: eviction.SteerPreferUpgraded, Parallel: eviction.ParallelAuto, MaxInFlight: 2,
			Domains: []eviction.RolloutDomain{{Domain: "ud-1", State: eviction.StatePending}, {Domain: "ud-2", State: eviction.StatePending, With: []string{"ud-1"}},
				{Domain: "ud-3", State: eviction.StatePending, After: "ud-1", With: []string{"ud-2"}, HeldBy: &eviction.BlockInfo{Reason: eviction.BlockBudget,
					BudgetRef: health.BudgetRef{Namespace: "inference", PDB: "llama-leaders"}, Rule: "maxUnavailable 2", Allowed: 2, Down: 2, Needed: 1}}}}}, report.TableOptions{},
			"Audited 3 domains (label zone), 0 groups and 0 PodDisruptionBudgets.\n" +
				"A rollout over every domain (steering PreferUpgraded) would take them in the order ud-1, ud-2, ud-3.\n\n" +
				"Domains at once (eviction.RolloutOptions.Parallel auto): at most 2, as the budgets and the upgraded room allow (simulated before anything is touched):\n" +
				"DOMAIN  STARTS        WITH  HELD BACK BY\n" +
				"ud-1    at the start  -     -\n" +
				"ud-2    at the start  ud-1  -\n" +
				"ud-3    after ud-1    ud-2  budget inference/llama-leaders (maxUnavailable 2: 2 down, 1 more)\n\n" +
				"The placement contract holds: no findings.\n"},
		// ud-3 starts with ud-1, ud-2 once ud-1 ends: the table lists
		// them in that order; ud-0, upgraded already, is not scheduled.
		{"a parallel rollout's schedule, in start order", report.AuditReport{LabelKey: "zone", Domains: []string{"ud-0", "ud-1", "ud-2", "ud-3"}, Rollout: &eviction.RolloutPlan{
			Steering: eviction.SteerPreferUpgraded, Parallel: 2, MaxInFlight: 2,
			Domains: []eviction.RolloutDomain{{Domain: "ud-0", State: eviction.StateSkipped}, {Domain: "ud-1", State: eviction.StatePending},
				{Domain: "ud-2", State: eviction.StatePending, After: "ud-1", With: []string{"ud-3"}, HeldBy: &eviction.BlockInfo{Reason: eviction.BlockRoom,
					Group: &topology.GroupID{Kind: topology.KindLeaderWorkerSet, Namespace: "inference", Name: "llama-0"}}},
				{Domain: "ud-3", State: eviction.StatePending, With: []string{"ud-1"}}}}}, report.TableOptions{},
			"Audited 4 domains (label zone), 0 groups and 0 PodDisruptionBudgets.\n" +
				"A rollout over every domain (steering PreferUpgraded) would take them in the order ud-0, ud-1, ud-2, ud-3.\n\n" +
				"Domains at once (eviction.RolloutOptions.Parallel 2): at most 2, as the budgets and the upgraded room allow (simulated before anything is touched):\n" +
				"DOMAIN  STARTS        WITH  HELD BACK BY\n" +
				"ud-1    at the start  -     -\n" +
				"ud-3    at the start  ud-1  -\n" +
				"ud-2    after ud-1    ud-3  room for group inference/llama-0\n\n" +
				"The placement contract holds: no findings.\n"},
		{"a parallel rollout's schedule, in place", report.AuditReport{LabelKey: "zone", Domains: []string{"ud-1", "ud-2"}, Rollout: &eviction.RolloutPlan{
			Steering: eviction.SteerStrict, Parallel: eviction.ParallelAuto, MaxInFlight: 2, InPlace: true,
			Domains: []eviction.RolloutDomain{{Domain: "ud-1", State: eviction.StatePending}, {Domain: "ud-2", State: eviction.StatePending, With: []string{"ud-1"}}}}},
			report.TableOptions{SettingName: func(s string) string {
				return map[string]string{"eviction.RolloutOptions.InPlace": "--in-place", "eviction.RolloutOptions.Parallel": "--parallel"}[s]
			}},
			"Audited 2 domains (label zone), 0 groups and 0 PodDisruptionBudgets.\n" +
				"A rollout over every domain (steering Strict) would take them in the order ud-1, ud-2.\n\n" +
				"Domains at once (--parallel auto): at most 2, as the budgets allow (--in-place: groups without upgraded room wait for their own domain) (simulated before anything is touched):\n" +
				"DOMAIN  STARTS        WITH  HELD BACK BY\n" +
				"ud-1    at the start  -     -\n" +
				"ud-2    at the start  ud-1  -\n\n" +
				"The placement contract holds: no findings.\n"},
		{"finding with a note", report.AuditReport{LabelKey: "zone", Domains: []string{"ud-1"}, Warnings: 1, Findings: []topology.Finding{finding}},
			report.TableOptions{FindingNote: func(code topology.FindingCode) string { return " (see " + string(code) + ")" }},
			"Audited 1 domain (label zone), 0 groups and 0 PodDisruptionBudgets.\n0 errors, 1 warning.\n\n" +
				"SEVERITY  CODE            NAMESPACE  GROUP/WORKLOAD  DOMAINS  PDBS\n" +
				"Warning   DisruptedAgain  inference  llama-0         ud-1     -\n\n" +
				"1. WARNING DisruptedAgain: it will be disrupted again (see DisruptedAgain)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, table(t, tc.doc, tc.o)); diff != "" {
				t.Errorf("table (-want +got):\n%s", diff)
			}
		})
	}

	// The first line of a rollout's status: its Lease, with the settings
	// named by their Go names or, with SettingName, as a command line
	// names them.
	for _, tc := range []struct {
		name string
		doc  report.RolloutStatusReport
		o    report.TableOptions
		want string
	}{
		{"no lock, Go names", status(true, eviction.RolloutStatus{}), report.TableOptions{},
			"Rollout r1: whether it runs is unknown (eviction.RolloutOptions.NoLock: its Lease is not read)"},
		{"no lock, flags", status(true, eviction.RolloutStatus{}), report.TableOptions{SettingName: flags},
			"Rollout r1: whether it runs is unknown (--no-lock: its Lease is not read)"},
		{"no Lease, flags", status(false, eviction.RolloutStatus{}), report.TableOptions{SettingName: flags},
			"Rollout r1: no Lease found (the rollout is not running, or runs without a lock or with another --lock-namespace)"},
		{"held", status(false, eviction.RolloutStatus{Running: true, LockNamespace: "udrain-system", LockName: "udrain-rollout-r1", LockHolder: "host-a", LockRenewedAt: &renewed}), report.TableOptions{},
			"Rollout r1: running; Lease udrain-system/udrain-rollout-r1 held by host-a, renewed 3s ago"},
		{"released", status(false, eviction.RolloutStatus{LockNamespace: "udrain-system", LockName: "udrain-rollout-r1"}), report.TableOptions{},
			"Rollout r1: not running; Lease udrain-system/udrain-rollout-r1 released, never renewed"},
		{"expired", status(false, eviction.RolloutStatus{LockNamespace: "udrain-system", LockName: "udrain-rollout-r1", LockHolder: "host-a", LockRenewedAt: &renewed, LockDuration: udrain.Seconds(30 * time.Second)}), report.TableOptions{},
			"Rollout r1: not running; Lease udrain-system/udrain-rollout-r1 of host-a expired, renewed 3s ago (it holds 30s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			first, _, _ := strings.Cut(table(t, tc.doc, tc.o), "\n")
			if diff := cmp.Diff(tc.want, first); diff != "" {
				t.Errorf("first line (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTableOfAnIncompleteDocument: a document without what its table
// shows (a plan, a result, a status, a health report) is an error, not a
// panic; a failed drain or rollout without its error object still prints.
func TestTableOfAnIncompleteDocument(t *testing.T) {
	for _, doc := range []report.Document{report.PlanReport{}, report.DrainReport{}, report.RolloutReport{}, report.RolloutStatusReport{}, report.HealthReport{}} {
		var b bytes.Buffer
		if err := doc.WriteTable(&b, report.TableOptions{}); err == nil || !strings.Contains(err.Error(), "has no") {
			t.Errorf("%T{}: error %v, want one saying what it lacks", doc, err)
		}
	}
	for _, doc := range []report.Document{
		report.PlanReport{Plan: &eviction.Plan{Domain: "ud-1"}},
		report.DrainReport{Result: &eviction.Result{Domain: "ud-1"}},
		report.RolloutReport{Result: &eviction.RolloutResult{ID: "r1"}},
	} {
		var b bytes.Buffer
		if err := doc.WriteTable(&b, report.TableOptions{}); err != nil {
			t.Errorf("%T without an error object: %v", doc, err)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{-time.Second, "0s"},
		{0, "0s"},
		{450400 * time.Microsecond, "450ms"},
		{1500 * time.Millisecond, "2s"},
		{92 * time.Second, "1m32s"},
		{3*time.Hour + 499*time.Millisecond, "3h0m0s"},
	} {
		if got := report.FormatDuration(tc.d); got != tc.want {
			t.Errorf("FormatDuration(%s) = %q, want %q", tc.d, got, tc.want)
		}
	}
}
