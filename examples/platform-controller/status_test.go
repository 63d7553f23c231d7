package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/jsonpath"
	"k8s.io/klog/v2/ktesting"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/examples/internal/exampletest"
	"github.com/udrain/udrain/health"
)

func fakeDynamic() *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{nodeUpgrades: "NodeUpgradeList"})
}

// statusPatches returns the statuses the program wrote, in order.
func statusPatches(t *testing.T, dyn *dynamicfake.FakeDynamicClient) []nodeUpgradeStatus {
	t.Helper()
	var out []nodeUpgradeStatus
	for _, a := range dyn.Actions() {
		p, ok := a.(k8stesting.PatchAction)
		if !ok || p.GetSubresource() != "status" {
			continue
		}
		var body struct {
			Status nodeUpgradeStatus `json:"status"`
		}
		if err := json.Unmarshal(p.GetPatch(), &body); err != nil {
			t.Fatal(err)
		}
		out = append(out, body.Status)
	}
	return out
}

// getNodeUpgrade returns the NodeUpgrade name and its status.
func getNodeUpgrade(t *testing.T, dyn *dynamicfake.FakeDynamicClient, name string) (*unstructured.Unstructured, nodeUpgradeStatus) {
	t.Helper()
	obj, err := dyn.Resource(nodeUpgrades).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(obj.Object["status"])
	if err != nil {
		t.Fatal(err)
	}
	var st nodeUpgradeStatus
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	return obj, st
}

// shown is what kubectl get shows of a status, and the domains' states.
type shown struct {
	State, Progress, Current, ETA, ETAPerDomain, Summary string
	Domains                                              []string
}

func show(s nodeUpgradeStatus) shown {
	out := shown{State: s.State, Progress: s.Progress, Summary: s.Summary}
	if c := s.Current; c != nil {
		out.Current = fmt.Sprintf("%s %s", c.Domain, c.State)
		if c.Stage != nil {
			out.Current += "/" + string(*c.Stage)
		}
	}
	if s.ETA != nil {
		out.ETA = s.ETA.UTC().Format(time.RFC3339)
	}
	if s.ETAPerDomain != nil {
		out.ETAPerDomain = s.ETAPerDomain.Duration.String()
	}
	for _, d := range s.Domains {
		out.Domains = append(out.Domains, fmt.Sprintf("%s %s %s since=%t", d.Domain, d.State, d.Stage, d.Since != nil))
	}
	return out
}

func TestStatusOf(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	done := func(name string, at time.Time) eviction.RolloutDomain {
		return eviction.RolloutDomain{Domain: name, State: eviction.StateDone, Since: &at}
	}
	pending := func(name string) eviction.RolloutDomain {
		return eviction.RolloutDomain{Domain: name, State: eviction.StatePending}
	}
	for _, tc := range []struct {
		name string
		in   eviction.RolloutStatus
		want shown
	}{{
		name: "never run",
		in:   eviction.RolloutStatus{Domains: []eviction.RolloutDomain{pending("a"), pending("b")}},
		want: shown{State: "Pending", Progress: "0/2", Current: "a Pending", Summary: "a Pending, b Pending",
			Domains: []string{"a Pending  since=false", "b Pending  since=false"}},
	}, {
		name: "running, upgrading the third domain, with an ETA",
		in: eviction.RolloutStatus{Running: true, Done: 2, Domains: []eviction.RolloutDomain{
			done("a", t0), done("b", t0.Add(90*time.Second)),
			{Domain: "c", State: eviction.StateUpgrading, Stage: eviction.StageUpgrade}, pending("d")},
			ETA: new(t0.Add(270 * time.Second)), ETAPerDomain: udrain.Seconds(90*time.Second + 400*time.Millisecond), ETASamples: 1, ETADomainsLeft: 2},
		want: shown{State: "Running", Progress: "2/4", Current: "c Upgrading/Upgrade", ETA: "2026-12-02T12:04:30Z", ETAPerDomain: "1m30s",
			Summary: "a Done, b Done, c Upgrading/Upgrade, d Pending",
			Domains: []string{"a Done  since=true", "b Done  since=true", "c Upgrading Upgrade since=false", "d Pending  since=false"}},
	}, {
		name: "stopped in a domain's upgrade",
		in: eviction.RolloutStatus{Done: 1, Domains: []eviction.RolloutDomain{done("a", t0),
			{Domain: "b", State: eviction.StateStopped, Stage: eviction.StageUpgrade}, pending("c")}},
		want: shown{State: "Stopped", Progress: "1/3", Current: "b Stopped/Upgrade", Summary: "a Done, b Stopped/Upgrade, c Pending",
			Domains: []string{"a Done  since=true", "b Stopped Upgrade since=false", "c Pending  since=false"}},
	}, {
		name: "stopped between two domains",
		in:   eviction.RolloutStatus{Done: 1, Domains: []eviction.RolloutDomain{done("a", t0), pending("b")}},
		want: shown{State: "Stopped", Progress: "1/2", Current: "b Pending", Summary: "a Done, b Pending",
			Domains: []string{"a Done  since=true", "b Pending  since=false"}},
	}, {
		name: "the domain in progress comes first, not a pending one before it",
		in: eviction.RolloutStatus{Running: true, Domains: []eviction.RolloutDomain{pending("a"),
			{Domain: "b", State: eviction.StateDraining, Stage: eviction.StagePhase1, Pods: 3}}},
		want: shown{State: "Running", Progress: "0/2", Current: "b Draining/Phase1", Summary: "a Pending, b Draining/Phase1",
			Domains: []string{"a Pending  since=false", "b Draining Phase1 since=false"}},
	}, {
		name: "completed",
		in:   eviction.RolloutStatus{Done: 2, Completed: true, Domains: []eviction.RolloutDomain{done("a", t0), done("b", t0)}},
		want: shown{State: "Completed", Progress: "2/2", Summary: "a Done, b Done",
			Domains: []string{"a Done  since=true", "b Done  since=true"}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, show(statusOf(&tc.in))); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCRDDeclaresTheStatus: the API server drops every field of a status
// that crd.yaml does not declare, and refuses a value outside an enum;
// every field the program writes is declared, with every value it can
// take, and every column kubectl prints finds its value.
func TestCRDDeclaresTheStatus(t *testing.T) {
	objs := exampletest.ReadObjects(t, "crd.yaml")
	if len(objs) != 1 || objs[0].GetKind() != "CustomResourceDefinition" || objs[0].GetName() != nodeUpgrades.Resource+"."+nodeUpgrades.Group {
		t.Fatalf("crd.yaml holds %d object(s), want the CustomResourceDefinition %s.%s", len(objs), nodeUpgrades.Resource, nodeUpgrades.Group)
	}
	versions, _, _ := unstructured.NestedSlice(objs[0].Object, "spec", "versions")
	if len(versions) != 1 || versions[0].(map[string]any)["name"] != nodeUpgrades.Version {
		t.Fatalf("crd.yaml serves %v, want %s only", versions, nodeUpgrades.Version)
	}
	version := versions[0].(map[string]any)
	root, _, _ := unstructured.NestedMap(version, "schema", "openAPIV3Schema")

	// A domain in each state, and the rollout in each of its.
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	in := eviction.RolloutStatus{Running: true, Done: 1, Time: t0, ETA: new(t0.Add(time.Hour)), ETAPerDomain: udrain.Seconds(time.Minute)}
	for i, s := range []eviction.DomainState{eviction.StateDone, eviction.StateRecovering, eviction.StateDraining,
		eviction.StateUpgrading, eviction.StateStopped, eviction.StatePending} {
		p := eviction.RolloutDomain{Domain: fmt.Sprint("ud-", i), State: s, Stage: eviction.StageRecovery, Pods: 1,
			Down: make([]health.GroupStatus, 1), Since: &t0}
		in.Domains = append(in.Domains, p)
	}
	running := statusOf(&in)
	var states []nodeUpgradeStatus
	for _, st := range []eviction.RolloutStatus{{Completed: true}, {}, {Done: 1}, in} {
		states = append(states, statusOf(&st))
	}
	if got, want := stateNames(states), []string{upgradeCompleted, upgradePending, upgradeStopped, upgradeRunning}; !slices.Equal(got, want) {
		t.Fatalf("rollout states %q, want %q", got, want)
	}
	for _, st := range states {
		obj := map[string]any{}
		data, _ := json.Marshal(map[string]any{"status": st})
		if err := json.Unmarshal(data, &obj); err != nil {
			t.Fatal(err)
		}
		checkDeclared(t, "", obj, root)
	}

	// kubectl get: every column finds a value in a running rollout's
	// resource.
	data, _ := json.Marshal(map[string]any{"metadata": map[string]any{"creationTimestamp": t0}, "status": running})
	obj := map[string]any{}
	if err := json.Unmarshal(data, &obj); err != nil {
		t.Fatal(err)
	}
	columns, _, _ := unstructured.NestedSlice(version, "additionalPrinterColumns")
	var names []string
	for _, c := range columns {
		col := c.(map[string]any)
		names = append(names, col["name"].(string))
		jp := jsonpath.New(col["name"].(string))
		if err := jp.Parse("{" + col["jsonPath"].(string) + "}"); err != nil {
			t.Fatalf("column %s: %v", col["name"], err)
		}
		res, err := jp.FindResults(obj)
		if err != nil || len(res) != 1 || len(res[0]) != 1 || fmt.Sprint(res[0][0].Interface()) == "" {
			t.Errorf("column %s (%s) finds no value in a running rollout's resource: %v %v", col["name"], col["jsonPath"], res, err)
		}
	}
	if want := []string{"Done", "State", "Current", "Current State", "Stage", "ETA", "Domains", "Age"}; !slices.Equal(names, want) {
		t.Errorf("columns %q, want %q", names, want)
	}
}

func stateNames(ss []nodeUpgradeStatus) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.State)
	}
	return out
}

// checkDeclared fails for every field of v (at path) that schema does not
// declare, and every value outside an enum.
func checkDeclared(t *testing.T, path string, v any, schema map[string]any) {
	t.Helper()
	if enum, ok := schema["enum"].([]any); ok && !slices.Contains(enum, v) {
		t.Errorf("%s: %v is not one of the schema's values %v", path, v, enum)
	}
	switch v := v.(type) {
	case map[string]any:
		props, _ := schema["properties"].(map[string]any)
		for k, field := range v {
			s, ok := props[k].(map[string]any)
			if !ok {
				t.Errorf("%s.%s is not declared in crd.yaml: the API server would drop it", path, k)
				continue
			}
			checkDeclared(t, path+"."+k, field, s)
		}
	case []any:
		items, _ := schema["items"].(map[string]any)
		for i, item := range v {
			checkDeclared(t, fmt.Sprintf("%s[%d]", path, i), item, items)
		}
	}
}

// TestStatusResourceShowsTheRollout: with --status-resource the program
// creates the NodeUpgrade named after the rollout and writes its status:
// first as the cluster shows it before the rollout (Pending), then while it
// runs, and Completed at the end, every domain Done.
func TestStatusResourceShowsTheRollout(t *testing.T) {
	client := exampletest.FakeCluster(exampletest.ClusterOptions{Allowed: 1})
	dyn := fakeDynamic()
	srv := httptest.NewServer(&webhook{})
	defer srv.Close()
	log, err := runWithClients(t, &clients{kube: client, dynamic: dyn}, "--target-version", "1.37.2", "--webhook", srv.URL, "--status-resource")
	if err != nil {
		t.Fatal(err)
	}
	obj, st := getNodeUpgrade(t, dyn, "platform-1.37.2")
	if v, _, _ := unstructured.NestedString(obj.Object, "spec", "targetVersion"); v != "1.37.2" {
		t.Errorf("spec.targetVersion %q, want 1.37.2", v)
	}
	want := shown{State: "Completed", Progress: "2/2", Summary: "ud-1 Done, ud-2 Done", Domains: []string{"ud-1 Done  since=true", "ud-2 Done  since=true"}}
	if diff := cmp.Diff(want, show(st)); diff != "" {
		t.Errorf("the NodeUpgrade's status (-want +got):\n%s", diff)
	}
	patches := statusPatches(t, dyn)
	for _, p := range patches {
		t.Logf("status written: %s %s running=%t (%s)", p.State, p.Progress, p.Running, p.Summary)
	}
	if len(patches) < 3 {
		t.Fatalf("%d status write(s), want one before the rollout, some while it runs, one at its end", len(patches))
	}
	if got := show(patches[0]); got.State != "Pending" || got.Current != "ud-1 Pending" || patches[0].Running {
		t.Errorf("the first status written: %+v, want the rollout Pending at ud-1, not running", got)
	}
	if !slices.ContainsFunc(patches, func(s nodeUpgradeStatus) bool { return s.Running && s.State == "Running" }) {
		t.Errorf("no status written while the rollout ran: %+v", patches)
	}
	if !strings.Contains(log, `Rollout status before the run nodeUpgrade="platform-1.37.2" state="Pending" done="0/2" current="ud-1" currentState="Pending"`) {
		t.Errorf("the log does not say the status before the run:\n%s", log)
	}
}

// TestStatusResourceAcrossRestart: a run that stops leaves the resource
// saying where (Stopped, in ud-1); the next run writes that first, before
// its rollout starts, then completes.
func TestStatusResourceAcrossRestart(t *testing.T) {
	client := exampletest.FakeCluster(exampletest.ClusterOptions{Allowed: 1})
	dyn := fakeDynamic()
	hook := &webhook{fail: map[string]bool{"ud-1": true}}
	srv := httptest.NewServer(hook)
	defer srv.Close()
	c := &clients{kube: client, dynamic: dyn}
	args := []string{"--target-version", "1.37.2", "--webhook", srv.URL, "--status-resource"}
	if _, err := runWithClients(t, c, args...); err == nil {
		t.Fatal("the first run succeeded; want it stopped by the webhook's failure")
	}
	_, st := getNodeUpgrade(t, dyn, "platform-1.37.2")
	stopped := show(st)
	if stopped.State != "Stopped" || st.Running || !strings.HasPrefix(stopped.Current, "ud-1 Stopped/") || stopped.Progress != "0/2" ||
		len(st.Domains) != 2 || st.Domains[1].State != eviction.StatePending {
		t.Errorf("after the stopped run: %+v, want Stopped in ud-1, ud-2 Pending, not running", stopped)
	}
	first := len(statusPatches(t, dyn))

	hook.mu.Lock()
	hook.fail = nil
	hook.mu.Unlock()
	log, err := runWithClients(t, c, args...)
	if err != nil {
		t.Fatal(err)
	}
	patches := statusPatches(t, dyn)[first:]
	if len(patches) == 0 || show(patches[0]).State != "Stopped" || show(patches[0]).Current != stopped.Current {
		t.Errorf("the second run wrote first %+v, want where the first stopped: %+v", patches, stopped)
	}
	if _, st := getNodeUpgrade(t, dyn, "platform-1.37.2"); st.State != "Completed" || st.Done != 2 {
		t.Errorf("after the second run: %+v, want Completed, 2 done", show(st))
	}
	if !strings.Contains(log, `state="Stopped" done="0/2" current="ud-1" currentState="Stopped"`) {
		t.Errorf("the second run's log does not say where the first stopped:\n%s", log)
	}
}

// TestStatusResourceNeedsItsDefinition: without the resource defined, the
// program stops before the rollout changes anything and says what to
// apply; without --status-resource it does not touch the resource.
func TestStatusResourceNeedsItsDefinition(t *testing.T) {
	client := exampletest.FakeCluster(exampletest.ClusterOptions{Allowed: 1})
	dyn := fakeDynamic()
	dyn.PrependReactor("create", nodeUpgrades.Resource, func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(nodeUpgrades.GroupResource(), "")
	})
	c := &clients{kube: client, dynamic: dyn}
	_, err := runWithClients(t, c, "--target-version", "1.37.2", "--status-resource")
	if err == nil || !strings.Contains(err.Error(), "kubectl apply -f examples/platform-controller/crd.yaml") {
		t.Errorf("error %v, want one saying to apply crd.yaml", err)
	}
	if a1, _ := client.CoreV1().Nodes().Get(context.Background(), "node-a1", metav1.GetOptions{}); a1.Spec.Unschedulable {
		t.Error("node-a1 was cordoned: the rollout started without its status resource")
	}
	dyn.ClearActions()
	if _, err := runWithClients(t, c, "--target-version", "1.37.2"); err != nil {
		t.Fatal(err)
	}
	if a := dyn.Actions(); len(a) != 0 {
		t.Errorf("without --status-resource: %d request(s) for the resource, want none: %v", len(a), a)
	}
}

// TestStatusWriteReplacesTheStatus: each write leaves the resource with
// the status written, whole: no field of an earlier one stays (the ETA,
// the current domain's stage), whatever the merge patch merges.
func TestStatusWriteReplacesTheStatus(t *testing.T) {
	dyn := fakeDynamic()
	w := newStatusWriter(dyn, "platform-1.37.2", nil, ktesting.NewLogger(t, ktesting.NewConfig()))
	ctx := context.Background()
	if err := w.create(ctx, "1.37.2", []string{"ud-1", "ud-2"}); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { return new(t0.Add(d)) }
	for i, st := range []eviction.RolloutStatus{{
		Time: t0, Running: true, Done: 1, Domains: []eviction.RolloutDomain{
			{Domain: "ud-1", State: eviction.StateDone, Since: at(0)},
			{Domain: "ud-2", State: eviction.StateRecovering, Stage: eviction.StageRecovery, Since: at(time.Minute), Down: make([]health.GroupStatus, 1)},
			{Domain: "ud-3", State: eviction.StatePending, Pods: 4}},
		ETA: new(t0.Add(2 * time.Minute)), ETAPerDomain: udrain.Seconds(time.Minute),
	}, {
		Time: t0.Add(time.Minute), Running: true, Done: 2, Domains: []eviction.RolloutDomain{
			{Domain: "ud-1", State: eviction.StateDone, Since: at(0)},
			{Domain: "ud-2", State: eviction.StateDone, Since: at(time.Minute)},
			{Domain: "ud-3", State: eviction.StatePending, Pods: 4}},
	}, {
		Time: t0.Add(2 * time.Minute), Done: 3, Completed: true, Domains: []eviction.RolloutDomain{
			{Domain: "ud-1", State: eviction.StateDone, Since: at(0)},
			{Domain: "ud-2", State: eviction.StateDone, Since: at(time.Minute)},
			{Domain: "ud-3", State: eviction.StateDone, Since: at(2 * time.Minute)}},
	}} {
		if err := w.write(ctx, &st); err != nil {
			t.Fatal(err)
		}
		obj, err := dyn.Resource(nodeUpgrades).Get(ctx, "platform-1.37.2", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(jsonMap(t, statusOf(&st)), jsonMap(t, obj.Object["status"])); diff != "" {
			t.Errorf("write %d: the resource's status (-written +stored):\n%s", i, diff)
		}
	}
}

// jsonMap returns v as the API server stores it: decoded JSON, without
// the null fields (a merge patch deletes them).
func jsonMap(t *testing.T, v any) map[string]any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	var strip func(any) any
	strip = func(v any) any {
		switch v := v.(type) {
		case map[string]any:
			for k, f := range v {
				if f == nil {
					delete(v, k)
				} else {
					v[k] = strip(f)
				}
			}
		case []any:
			for i := range v {
				v[i] = strip(v[i])
			}
		}
		return v
	}
	return strip(m).(map[string]any)
}
