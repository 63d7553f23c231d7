package bench

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/udrain/udrain/e2e/testbed"
)

func TestClassifyAudit(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  testbed.AuditRequest
		want Request
	}{
		{"eviction", testbed.AuditRequest{Verb: "create", RequestURI: "/api/v1/namespaces/a/pods/p/eviction"}, Request{Verb: "create", Resource: "pods/eviction"}},
		{"dry-run eviction", testbed.AuditRequest{Verb: "create", RequestURI: "/api/v1/namespaces/a/pods/p/eviction", DryRun: true}, Request{Verb: "create", Resource: "pods/eviction", DryRun: true}},
		{"streaming list", testbed.AuditRequest{Verb: "watch", RequestURI: "/api/v1/pods?allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&watch=true"}, Request{Verb: "watch", Resource: "pods"}},
		{"watch of a group", testbed.AuditRequest{Verb: "watch", RequestURI: "/apis/policy/v1/poddisruptionbudgets?watch=1"}, Request{Verb: "watch", Resource: "poddisruptionbudgets.policy"}},
		{"list", testbed.AuditRequest{Verb: "list", RequestURI: "/apis/scheduling.k8s.io/v1beta1/podgroups?limit=500"}, Request{Verb: "list", Resource: "podgroups.scheduling.k8s.io"}},
		{"dry-run cordon", testbed.AuditRequest{Verb: "patch", RequestURI: "/api/v1/nodes/n1?dryRun=All", DryRun: true}, Request{Verb: "patch", Resource: "nodes", DryRun: true}},
		{"get", testbed.AuditRequest{Verb: "get", RequestURI: "/api/v1/namespaces/a/pods/p"}, Request{Verb: "get", Resource: "pods"}},
		{"discovery", testbed.AuditRequest{Verb: "get", RequestURI: "/api/v1"}, Request{Verb: "discovery"}},
		{"delete", testbed.AuditRequest{Verb: "delete", RequestURI: "/api/v1/namespaces/a/pods/p"}, Request{Verb: "delete", Resource: "pods"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ClassifyAudit(tc.req)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestTallyAudit(t *testing.T) {
	ev := "/api/v1/namespaces/a/pods/p/eviction"
	got := TallyAudit([]testbed.AuditRequest{
		{Verb: "create", RequestURI: ev, Code: 201},
		{Verb: "create", RequestURI: ev, Code: 429},
		{Verb: "create", RequestURI: ev, Code: 429},
		{Verb: "create", RequestURI: ev, Code: 201, DryRun: true},
		{Verb: "watch", RequestURI: "/api/v1/pods?watch=true"}, // still open: no code
		{Verb: "get", RequestURI: "/api/v1/nodes/n", Code: 404},
	})
	want := Requests{
		{Request: Request{Verb: "create", Resource: "pods/eviction"}, Count: 3, TooMany: 2},
		{Request: Request{Verb: "create", Resource: "pods/eviction", DryRun: true}, Count: 1},
		{Request: Request{Verb: "get", Resource: "nodes"}, Count: 1, Errors: 1},
		{Request: Request{Verb: "watch", Resource: "pods"}, Count: 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if n := got.Succeeded("create", "pods/eviction"); n != 1 {
		t.Errorf("accepted evictions %d, want 1 (the dry run is no eviction)", n)
	}
}

func TestCompareAudit(t *testing.T) {
	tally := func(evictions, watches int) Requests {
		return Requests{{Request: Request{Verb: "create", Resource: "pods/eviction"}, Count: evictions}, {Request: Request{Verb: "watch", Resource: "pods"}, Count: watches}}
	}
	for _, tc := range []struct {
		name          string
		counter, aud  Requests
		wantDeviation float64
		wantAgrees    bool
		wantDiffs     []string
	}{
		{name: "the same", counter: tally(20, 3), aud: tally(20, 3), wantAgrees: true},
		{name: "one request of 23 apart: 4.3%", counter: tally(20, 3), aud: tally(20, 3+1)[:2], wantDeviation: 1.0 / 24, wantAgrees: true,
			wantDiffs: []string{"watch pods: counter 3, audit 4"}},
		{name: "two of 20 apart: 10%", counter: tally(16, 2), aud: tally(18, 2), wantDeviation: 0.1,
			wantDiffs: []string{"create pods/eviction: counter 16, audit 18"}},
		{name: "exactly 5%", counter: tally(19, 0), aud: tally(20, 0), wantDeviation: 0.05, wantAgrees: true,
			wantDiffs: []string{"create pods/eviction: counter 19, audit 20"}},
		{name: "the audit log saw nothing", counter: tally(1, 0), aud: nil, wantDeviation: math.Inf(1),
			wantDiffs: []string{"create pods/eviction: counter 1, audit 0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := CompareAudit("u", tc.counter, tc.aud)
			if math.Abs(c.Deviation-tc.wantDeviation) > 1e-9 && !(math.IsInf(c.Deviation, 1) && math.IsInf(tc.wantDeviation, 1)) {
				t.Errorf("deviation %v, want %v", c.Deviation, tc.wantDeviation)
			}
			if c.Agrees != tc.wantAgrees {
				t.Errorf("agrees %v, want %v", c.Agrees, tc.wantAgrees)
			}
			if diff := cmp.Diff(tc.wantDiffs, c.Differences); diff != "" {
				t.Errorf("differences (-want +got):\n%s", diff)
			}
			if _, err := c.MarshalJSON(); err != nil {
				t.Errorf("MarshalJSON: %v", err)
			}
		})
	}
}

func TestEvictionsIn(t *testing.T) {
	ev := func(ns string, code int32, dry bool) testbed.AuditRequest {
		return testbed.AuditRequest{Verb: "create", Resource: "pods/eviction", Namespace: ns, Code: code, DryRun: dry}
	}
	reqs := []testbed.AuditRequest{ev("groups", 201, false), ev("groups", 429, false), ev("groups", 201, true), ev("apps", 201, false), ev("groups", 201, false),
		{Verb: "patch", Resource: "nodes", Code: 200}}
	if got := EvictionsIn(reqs, "groups"); got != 2 {
		t.Errorf("EvictionsIn = %d, want 2 (not the 429, the dry run or another namespace's)", got)
	}
}
