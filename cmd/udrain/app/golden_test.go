package app

import (
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/internal/testkit"
	"github.com/udrain/udrain/report"
	"github.com/udrain/udrain/topology"
)

// TestGolden runs each reporting command against the fake cluster and
// compares its output, table and JSON, with testdata/: a change of a
// report's shape or wording fails here.
func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opts     []clusterOption
		args     []string
		wantCode int
	}{
		{"domains.table", nil, []string{"domains"}, ExitOK},
		{"domains.json", nil, []string{"domains", "-o", "json"}, ExitOK},
		{"domains.yaml", nil, []string{"domains", "-o", "yaml"}, ExitOK},
		{"audit-clean.table", nil, []string{"audit"}, ExitOK},
		{"audit.table", []clusterOption{withViolations()}, []string{"audit"}, ExitContract},
		{"audit.json", []clusterOption{withViolations()}, []string{"audit", "-o", "json"}, ExitContract},
		{"plan.table", nil, []string{"plan", "ud-1", "--ignore-daemonsets"}, ExitOK},
		{"plan.json", nil, []string{"plan", "ud-1", "--ignore-daemonsets", "-o", "json"}, ExitOK},
		{"plan-refused.table", nil, []string{"plan", "ud-1"}, ExitError},
		{"plan-blocked.table", []clusterOption{withPDBAllowing(0)}, []string{"plan", "ud-2"}, ExitOK},
		{"plan-gpufit.table", []clusterOption{withGPULoss()}, []string{"plan", "ud-1", "--ignore-daemonsets"}, ExitOK},
		{"gpu.table", nil, []string{"gpu"}, ExitOK},
		{"gpu.json", nil, []string{"gpu", "-o", "json"}, ExitOK},
		{"drain.table", nil, []string{"drain", "ud-1", "--ignore-daemonsets"}, ExitOK},
		{"drain.json", nil, []string{"drain", "ud-1", "--ignore-daemonsets", "-o", "json"}, ExitOK},
		{"drain-dryrun.table", nil, []string{"drain", "ud-1", "--ignore-daemonsets", "--dry-run=client"}, ExitOK},
		{"drain-dryrun-server.table", []clusterOption{withPDBAllowing(0)}, []string{"drain", "ud-2", "--dry-run=server"}, ExitOK},
		{"rollout-dryrun.table", nil, []string{"rollout", "--ignore-daemonsets", "--dry-run=client", "--upgrade-command", "true"}, ExitOK},
		{"rollout-dryrun.json", nil, []string{"rollout", "--ignore-daemonsets", "--dry-run=client", "--upgrade-command", "true", "-o", "json"}, ExitOK},
		{"rollout-dryrun-again.table", []clusterOption{withSpareDomain()}, []string{"rollout", "--ignore-daemonsets", "--dry-run=client", "--upgrade-command", "true", "--order", "Given", "--domains", "ud-1,ud-2,ud-3"}, ExitOK},
		{"rollout-dryrun-spare.table", []clusterOption{withSpareDomain()}, []string{"rollout", "--ignore-daemonsets", "--dry-run=client", "--upgrade-command", "true", "--steering", "Strict"}, ExitOK},
		{"rollout-dryrun-parallel.table", []clusterOption{withSpareDomain()}, []string{"rollout", "--ignore-daemonsets", "--dry-run=client", "--upgrade-command", "true", "--parallel", "auto"}, ExitOK},
		{"uncordon.json", nil, []string{"uncordon", "ud-2", "-o", "json"}, ExitOK},
		{"wait-healthy.json", nil, []string{"wait-healthy", "ud-1", "-o", "json"}, ExitOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, tc.opts...)
			if tc.name == "uncordon.json" {
				cordon(t, c, "gpu-3")
			}
			r := runOn(t, c, tc.args...)
			if r.code != tc.wantCode {
				t.Fatalf("exit code %d, want %d; stderr:\n%s", r.code, tc.wantCode, r.stderr)
			}
			golden(t, tc.name, r.stdout)
		})
	}
}

// TestGoldenVersion checks the Version kind; the Go version and platform
// are the test binary's.
func TestGoldenVersion(t *testing.T) {
	cfg, _ := testConfig(nil)
	r := run(t, t.Context(), cfg, "version", "-o", "json")
	if r.code != ExitOK {
		t.Fatalf("exit code %d: %s", r.code, r.stderr)
	}
	golden(t, "version.json", normalize(r.stdout,
		[2]string{regexp.QuoteMeta(runtime.Version()), "GOVERSION"},
		[2]string{regexp.QuoteMeta(runtime.GOOS + "/" + runtime.GOARCH), "PLATFORM"},
		[2]string{`"version": "[^"]*"`, `"version": "VERSION"`}))
}

// TestGoldenWaitServer checks the WaitServerResult kind, failed: nothing
// listens on the port.
func TestGoldenWaitServer(t *testing.T) {
	addr := testkit.ClosedAddr(t)
	cfg, _ := testConfig(nil)
	r := run(t, t.Context(), cfg, "wait-server", "tcp://"+addr, "--max-attempts", "1", "-o", "json")
	if r.code != ExitError {
		t.Fatalf("exit code %d, want %d: %s", r.code, ExitError, r.stderr)
	}
	got := strings.ReplaceAll(r.stdout, addr, "ADDR")
	golden(t, "wait-server.json", normalize(got, [2]string{`"elapsedSeconds": [0-9.e-]+`, `"elapsedSeconds": 0`},
		[2]string{`after 1 attempt in [^;]+;`, `after 1 attempt in ELAPSED;`}))
}

// TestGoldenRolloutDowntime checks the table of a rollout that disrupted
// groups: each group's downtime, the groups disrupted again and the
// longest downtime in the summary.
func TestGoldenRolloutDowntime(t *testing.T) {
	at := func(s int) time.Time { return testNow.Add(time.Duration(s) * time.Second) }
	healthy := func(s int) *time.Time { h := at(s); return &h }
	group := func(name string) topology.GroupID {
		return topology.GroupID{Kind: topology.KindLeaderWorkerSet, Namespace: testNS, Name: name}
	}
	res := &eviction.RolloutResult{ID: "r1", Completed: true, Started: testNow, Duration: udrain.Seconds(5 * time.Minute), Domains: []eviction.RolloutDomain{
		{Domain: "ud-1", State: eviction.StateDone, Drain: &eviction.Result{Pods: eviction.PodCounts{Phase1Total: 1, Phase1Evicted: 1, Phase2Total: 1, Phase2Evicted: 1},
			GroupsDisrupted: []topology.GroupID{group("llama-0")}},
			Groups:  []eviction.GroupDowntime{{Group: group("llama-0"), From: "ud-1", To: "ud-2", Evicted: at(0), Healthy: healthy(40), Downtime: udrain.Seconds(40 * time.Second)}},
			Upgrade: udrain.Seconds(time.Minute), Recovery: udrain.Seconds(40 * time.Second), Duration: udrain.Seconds(2 * time.Minute)},
		{Domain: "ud-2", State: eviction.StateDone, Drain: &eviction.Result{Pods: eviction.PodCounts{Phase1Total: 2, Phase1Evicted: 2, Phase2Total: 2, Phase2Evicted: 2},
			GroupsDisrupted: []topology.GroupID{group("llama-1"), group("llama-0")}},
			Groups: []eviction.GroupDowntime{
				{Group: group("llama-1"), From: "ud-2", To: "ud-1", Evicted: at(120), Healthy: healthy(150), Downtime: udrain.Seconds(30 * time.Second)},
				{Group: group("llama-0"), From: "ud-2", To: "ud-2", Evicted: at(121), Healthy: healthy(300), Downtime: udrain.Seconds(179 * time.Second)},
			},
			Upgrade: udrain.Seconds(time.Minute), Recovery: udrain.Seconds(2 * time.Minute), Duration: udrain.Seconds(3 * time.Minute)},
	}}
	var b strings.Builder
	if err := (report.RolloutReport{Result: res, Summary: report.SummarizeRollout(res)}).WriteTable(&b, report.TableOptions{}); err != nil {
		t.Fatal(err)
	}
	golden(t, "rollout-downtime.table", b.String())
}
