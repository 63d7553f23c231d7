package e2e

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/udrain/udrain/e2e/fixture"
	"github.com/udrain/udrain/readiness"
	"github.com/udrain/udrain/readiness/gate"
)

// lwsConfig is a real LeaderWorkerSet on a pool of GPU domains.
type lwsConfig struct {
	// UDs and PerUD shape the pool (8-GPU nodes); Groups, Size and
	// GPUsPerPod the LeaderWorkerSet.
	UDs, PerUD, Groups, Size, GPUsPerPod int
	// Set is the rest of the LeaderWorkerSet (placement, policies, budget);
	// deployLWS fills in its namespace, name, pool, sizes and delays.
	Set fixture.LeaderWorkerSet
	// gateRequests, if set, counts the readiness-gate controller's
	// condition patches and their answers.
	gateRequests *requestCounter
}

// defaultLWS is 3 groups of 4 pods of 4 GPUs over 4 domains of two 8-GPU
// nodes: a group fills a domain, and one domain is spare, as real clusters
// keep it; exclusive topology on the domain key.
func defaultLWS() lwsConfig {
	return lwsConfig{UDs: 4, PerUD: 2, Groups: 3, Size: 4, GPUsPerPod: 4, Set: fixture.LeaderWorkerSet{Placement: fixture.PlaceExclusive}}
}

// deployLWS starts the testbed's LeaderWorkerSet manager and, on the
// test's own pool, the readiness-gate controller and a real
// LeaderWorkerSet "llm" as cfg says, recording its pods; it returns once
// every group is whole and Ready and the PDB over the leaders counts them.
func deployLWS(t *testing.T, cfg lwsConfig) *scenario {
	t.Helper()
	ctx := t.Context()
	start := time.Now()
	if _, err := bed.LWS(ctx); err != nil {
		t.Fatal(err)
	}
	tt := bed.ForTest(t)
	gpu := fixture.H100()
	s := &scenario{tt: tt}
	s.nodes = fixture.Nodes{Pool: tt.Name, UDs: cfg.UDs, PerUD: cfg.PerUD, GPU: &gpu}
	if _, err := s.nodes.Create(ctx, tt.Client); err != nil {
		t.Fatal(err)
	}
	if err := fixture.WaitSchedulable(ctx, tt.Client, s.nodes.Selector(), cfg.UDs*cfg.PerUD); err != nil {
		t.Fatal(err)
	}
	w := cfg.Set
	w.Namespace, w.Name, w.Pool = tt.Name, "llm", tt.Name
	w.Replicas, w.Size, w.GPUsPerPod = cfg.Groups, cfg.Size, cfg.GPUsPerPod
	if w.ReadyDelay == 0 {
		w.ReadyDelay = 2 * time.Second
	}
	if w.TerminateDelay == 0 {
		w.TerminateDelay = time.Second
	}
	if w.GracePeriodSeconds == 0 {
		w.GracePeriodSeconds = 5
	}
	s.real = &w
	gateClient := tt.Client
	if cfg.gateRequests != nil {
		gateClient = cfg.gateRequests.client(t, tt.Config)
	}
	s.gate = startGateController(t, gateClient, gate.Options{Namespace: tt.Name})
	s.record(t, w.Selector())
	dyn, err := dynamic.NewForConfig(tt.Config)
	if err != nil {
		t.Fatal(err)
	}
	s.dyn = dyn
	if err := w.Create(ctx, tt.Client, dyn); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if _, err := w.WaitGroupsReady(wctx, tt.Client, w.Replicas); err != nil {
		t.Fatal(err)
	}
	nl, err := tt.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: s.nodes.Selector().String()})
	if err != nil {
		t.Fatal(err)
	}
	s.nodeList = nl.Items
	t.Logf("%s: %d groups whole and Ready %s after the create", w, w.Replicas, time.Since(start).Round(100*time.Millisecond))
	return s
}

// TestLWSOperatorRunsGroups checks the testbed's LeaderWorkerSet manager
// against what the project relies on: its pod webhook labels the pods (name,
// group index, worker index, group key, revision) and annotates their size;
// it injects the LWS_* environment from which udrain's readiness package
// names exactly the group's pods; each leader owns its group's worker
// StatefulSet; with exclusive topology each leader carries LWS's affinity
// terms, its workers a node selector on its domain, and each group is alone
// in one domain, the spare domain empty; the readiness gate made each
// leader Ready; LWS's status says Available.
func TestLWSOperatorRunsGroups(t *testing.T) {
	t.Parallel()
	t.Run("exclusive", func(t *testing.T) {
		t.Parallel()
		checkLWSGroups(t, defaultLWS())
	})
	// Without exclusive topology: the leaders spread, each group's
	// workers follow their leader by pod affinity (matchLabelKeys on the
	// group key LWS's webhook writes).
	t.Run("spread", func(t *testing.T) {
		t.Parallel()
		cfg := defaultLWS()
		cfg.Set.Placement = fixture.PlaceSpread
		checkLWSGroups(t, cfg)
	})
}

func checkLWSGroups(t *testing.T, cfg lwsConfig) {
	s := deployLWS(t, cfg)
	exclusive := cfg.Set.Placement == fixture.PlaceExclusive
	ctx := t.Context()
	w := s.real
	pods, err := s.tt.Client.CoreV1().Pods(s.tt.Name).List(ctx, metav1.ListOptions{LabelSelector: w.Selector().String()})
	if err != nil {
		t.Fatal(err)
	}
	byGroup := map[int][]string{}
	leaders := map[int]*corev1.Pod{}
	workerSelector := map[int][]string{}
	for i := range pods.Items {
		p := &pods.Items[i]
		g, ok := w.GroupIndex(p)
		if !ok {
			t.Fatalf("pod %s has no group index: %v", p.Name, p.Labels)
		}
		byGroup[g] = append(byGroup[g], p.Name)
		if p.Annotations[fixture.LWSSizeAnnotation] != strconv.Itoa(w.Size) || p.Labels[fixture.LWSGroupKeyLabel] == "" || p.Labels[fixture.LWSRevisionLabel] == "" {
			t.Errorf("pod %s: labels %v, annotations %v: want LWS's group key, revision and size", p.Name, p.Labels, p.Annotations)
		}
		if w.IsLeader(p) {
			// LWS's webhook writes the exclusive-topology terms on the
			// leader only.
			if a := p.Spec.Affinity; exclusive && (a == nil || a.PodAffinity == nil || a.PodAntiAffinity == nil ||
				a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].TopologyKey != fixture.UpgradeDomainLabel) {
				t.Errorf("leader %s: affinity %+v, want LWS's exclusive-topology terms on %s", p.Name, a, fixture.UpgradeDomainLabel)
			}
			leaders[g] = p
			if p.Name != w.LeaderName(g) || !fixture.IsReady(p) {
				t.Errorf("leader %s of group %d (want %s), ready %v", p.Name, g, w.LeaderName(g), fixture.IsReady(p))
			}
			continue
		}
		// Its workers follow by a node selector on the leader's domain, which
		// LWS's pod controller writes into the worker StatefulSet once the
		// leader is scheduled.
		if exclusive {
			workerSelector[g] = append(workerSelector[g], p.Spec.NodeSelector[fixture.UpgradeDomainLabel])
		}
		idx, _ := strconv.Atoi(p.Labels[fixture.LWSWorkerIndexLabel])
		if p.Name != w.WorkerName(g, idx) || p.Annotations[fixture.LWSLeaderNameAnnotation] != w.LeaderName(g) {
			t.Errorf("worker %s: index %d, leader-name %q", p.Name, idx, p.Annotations[fixture.LWSLeaderNameAnnotation])
		}
		// The worker's StatefulSet is owned by its leader pod: evicting the
		// leader lets the garbage collector delete the workers.
		sts, err := s.tt.Client.AppsV1().StatefulSets(s.tt.Name).Get(ctx, w.LeaderName(g), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if ref := metav1.GetControllerOf(sts); ref == nil || ref.Kind != "Pod" || ref.Name != w.LeaderName(g) {
			t.Errorf("worker StatefulSet %s is controlled by %+v, want its leader pod", sts.Name, ref)
		}
	}
	for g, leader := range leaders {
		env := map[string]string{}
		for _, e := range leader.Spec.Containers[0].Env {
			env[e.Name] = e.Value
		}
		members, err := readiness.MembersFromLWSEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok }, readiness.LWSOptions{Port: 8000})
		if err != nil {
			t.Errorf("leader %s: the environment LWS injected (%v) gives no members: %v", leader.Name, env, err)
			continue
		}
		var names []string
		for _, m := range members {
			names = append(names, m.Name)
		}
		want := slices.Sorted(slices.Values(byGroup[g]))
		if diff := cmp.Diff(want, slices.Sorted(slices.Values(names))); diff != "" {
			t.Errorf("group %d: members from LWS's environment (-the group's pods +members):\n%s", g, diff)
		}
		if wantAddr := leader.Name + "." + leader.Spec.Subdomain + "." + leader.Namespace; env[readiness.EnvLeaderAddress] != wantAddr {
			t.Errorf("leader %s: %s=%q, want its host name %q", leader.Name, readiness.EnvLeaderAddress, env[readiness.EnvLeaderAddress], wantAddr)
		}
	}
	domains, err := w.Domains(ctx, s.tt.Client)
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]int{}
	for g, d := range domains {
		for _, sel := range workerSelector[g] {
			if sel != d {
				t.Errorf("a worker of group %d (in %s) has the node selector %s=%q, want its leader's domain", g, d, fixture.UpgradeDomainLabel, sel)
			}
		}
		if used[d]++; used[d] > 1 {
			t.Errorf("domain %s holds group %d and another: placement broken", d, g)
		}
	}
	if len(domains) != w.Replicas || len(used) != s.nodes.UDs-1 {
		t.Errorf("groups in domains %v: want %d groups in %d domains, one spare", domains, w.Replicas, s.nodes.UDs-1)
	}
	st, err := w.Status(ctx, s.dyn)
	if err != nil {
		t.Fatal(err)
	}
	if st.ReadyReplicas != w.Replicas || st.Updating() || st.Condition("Available") != metav1.ConditionTrue {
		t.Errorf("LeaderWorkerSet status %+v, want %d ready groups, Available, not updating", st, w.Replicas)
	}
}
