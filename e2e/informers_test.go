package e2e

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/udrain/udrain/clusterinformers"
	"github.com/udrain/udrain/e2e/testbed"
	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/readiness/gate"
)

// TestSharedInformersSpareListAndWatch proves the cache seam of issue 12
// with the kube-apiserver's audit log, which udrain does not write: a
// controller's own SharedInformerFactory, shared with a Drainer through
// Options.Informers, runs 10 plans, 3 drains (each followed by an uncordon
// and a wait until the domain is healthy again) and a health report, and
// its ServiceAccount sends no list and no watch beyond the factory's
// initial ones, while its evictions and node patches are all there. The
// same calls by a Drainer without Options.Informers, as another
// ServiceAccount, list and watch the cluster for every call: the audit log
// tells the two apart.
func TestSharedInformersSpareListAndWatch(t *testing.T) {
	t.Parallel()
	tt := bed.ForTest(t)
	ctx := t.Context()
	if _, err := bed.AuditLog(ctx, "nobody"); err != nil {
		if errors.Is(err, testbed.ErrNotSupported) {
			t.Skip("this cluster has no audit log to count requests with:", err)
		}
		t.Fatal(err)
	}
	// 3 domains of one node, a group of 2 pods filling each.
	s := deployWithGate(t, tt, scenarioConfig{UDs: 3, PerUD: 1, Groups: 3, Size: 2, GPUsPerPod: 4,
		ReadyDelay: time.Second, TerminateDelay: 500 * time.Millisecond}, tt.Client, gate.Options{Namespace: tt.Name})
	// The drainer's role, and list+watch on DaemonSets for the factory's
	// DaemonSet informer (clusterinformers.FromFactory registers one; the role
	// file only grants get, which udrain's own view uses).
	rules := append(clusterRoleFromFile(t, drainerRoleFile, drainerRoleName).Rules,
		rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"daemonsets"}, Verbs: []string{"list", "watch"}})

	shared := runEmbedded(t, s, "controller-shared", rules, true)
	own := runEmbedded(t, s, "controller-own", rules, false)
	t.Logf("shared informers, the factory's start: %s", shared.start)
	t.Logf("shared informers, the %d+ calls:        %s", calls, shared.calls)
	t.Logf("own informers, the %d+ calls:           %s", calls, own.calls)

	// The factory listed (or stream-listed) and watched every kind it
	// holds: the log sees this ServiceAccount.
	for _, res := range []string{"nodes", "pods", "poddisruptionbudgets.policy", "daemonsets.apps"} {
		if shared.start.of("watch", res) == 0 {
			t.Errorf("the audit log has no watch of %s by the factory's ServiceAccount: %s", res, shared.start)
		}
	}
	// With the factory shared: not one list or watch during the calls.
	for _, verb := range []string{"list", "watch"} {
		if n := shared.calls.of(verb, ""); n != 0 {
			t.Errorf("%d %s request(s) by the Drainer over the controller's informers, want 0: %s", n, verb, shared.calls)
		}
	}
	// Without it: every call that reads the cluster lists its pods,
	// with a list or a streaming watch.
	for _, res := range []string{"nodes", "pods", "poddisruptionbudgets.policy"} {
		if n := own.calls.listed(res); n < viewCalls {
			t.Errorf("%d list(s) of %s by the Drainer with its own informers, want one per call at least (%d): %s", n, res, viewCalls, own.calls)
		}
	}
	// Both did the work: 2 pods evicted per drain, nodes cordoned and
	// uncordoned.
	for name, m := range map[string]measured{"shared": shared, "own": own} {
		if n := m.calls.evicted; n != 3*2 {
			t.Errorf("%s informers: %d evictions accepted, want 6 (3 drains of 2 pods): %s", name, n, m.calls)
		}
		if n := m.calls.of("patch", "nodes"); n < 3*2 {
			t.Errorf("%s informers: %d node patches, want a cordon and an uncordon per drain at least: %s", name, n, m.calls)
		}
	}
}

// calls is how many calls runEmbedded makes of the Drainer at least (a
// WaitHealthy may be asked again, see waitDomainHealthy); viewCalls those
// of them that read the cluster through informers (Uncordon without
// Options.Informers lists the nodes once instead).
const (
	calls     = 10 + 3*3 + 1
	viewCalls = 10 + 3*2 + 1
)

// measured is what the audit log shows of one ServiceAccount: from the
// start to the calls (the factory's initial requests, if any), and during
// the calls.
type measured struct {
	start, calls requestCount
}

// runEmbedded runs, as a ServiceAccount called name with rules, a
// Drainer's 10 plans, 3 drains each followed by an uncordon and a wait
// until the domain is healthy, and a health report; over a
// SharedInformerFactory the test starts first when shared, over the
// Drainer's own informers otherwise.
func runEmbedded(t *testing.T, s *scenario, name string, rules []rbacv1.PolicyRule, shared bool) measured {
	t.Helper()
	ctx := t.Context()
	user := "system:serviceaccount:" + s.tt.Name + ":" + name
	client := clientAs(t, s.tt, name, rules, true)
	events := &eventLog{}
	// Scoped to the test's namespace: Health counts Pending groups of
	// workloads placed anywhere in the layout, and tests running in
	// parallel have theirs.
	opts := eviction.Options{Helper: eviction.KubectlDefaults(), OnEvent: events.add, Namespace: s.tt.Name}
	if shared {
		opts.Informers = startedInformers(t, client)
	}
	d, err := eviction.New(client, opts)
	if err != nil {
		t.Fatal(err)
	}
	s.tt.OnFailure("udrain-events-"+name+".txt", events.write)
	before := auditSettled(t, user)

	domains := s.domains()
	for i := range 10 {
		dom := domains[i%len(domains)]
		plan, err := d.Plan(ctx, dom)
		if err != nil {
			t.Fatalf("plan %d of %s: %v", i, dom, err)
		}
		if len(plan.Phase1) != 1 || len(plan.Phase2) != s.lws.Size-1 || plan.Err() != nil {
			t.Fatalf("plan of %s: %d pod(s) in phase 1, %d in phase 2 (%v); want the group's leader, then its %d worker(s)",
				dom, len(plan.Phase1), len(plan.Phase2), plan.Err(), s.lws.Size-1)
		}
	}
	for _, dom := range domains {
		_, res, err := d.Drain(ctx, dom, eviction.DrainOptions{ID: "e2e-" + name})
		if err != nil {
			t.Fatalf("drain of %s: %v", dom, err)
		}
		if !res.Completed || res.Pods.Phase1Evicted != 1 || res.Pods.Phase2Evicted != s.lws.Size-1 {
			t.Errorf("drain of %s: completed %t, %d evicted in phase 1, %d in phase 2", dom, res.Completed, res.Pods.Phase1Evicted, res.Pods.Phase2Evicted)
		}
		if _, err := d.Uncordon(ctx, dom); err != nil {
			t.Fatalf("uncordon %s: %v", dom, err)
		}
		waitDomainHealthy(t, d, dom)
	}
	report, err := d.Health(ctx, domains...)
	if err != nil {
		t.Fatal(err)
	}
	if !report.Healthy || len(report.Domains) != len(domains) {
		t.Errorf("health of %v: healthy %t over %d domain(s), want healthy over %d", domains, report.Healthy, len(report.Domains), len(domains))
	}
	after := auditSettled(t, user)
	return measured{start: countRequests(before), calls: countRequests(after[len(before):])}
}

// waitDomainHealthy waits with Drainer.WaitHealthy until domain is
// healthy with its one group. WaitHealthy alone is not enough right after
// a drain: while the evicted group has no pod at all (its StatefulSets
// have not made the replacements yet), Health sees no group in the domain
// and reports it healthy at once, so the test asks again until the group
// is there (seen on a loaded machine: 3 drains of 3).
func waitDomainHealthy(t *testing.T, d *eviction.Drainer, domain string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	for calls := 1; ; calls++ {
		report, err := d.WaitHealthy(ctx, domain)
		if err != nil {
			t.Fatalf("waiting until %s is healthy: %v", domain, err)
		}
		if report.Healthy && len(report.Domains) == 1 && len(report.Domains[0].Groups) == 1 {
			if calls > 1 {
				t.Logf("WaitHealthy(%s) reported the domain healthy without its group %d time(s) first", domain, calls-1)
			}
			return
		}
		if sleepCtx(ctx, 200*time.Millisecond) != nil {
			t.Fatalf("%s has no healthy group after its drain: %+v", domain, report)
		}
	}
}

// auditSettled returns the requests of user in the audit log once two
// reads 300ms apart agree: the apiserver logs a request when it has
// answered it, which the client may see first.
func auditSettled(t *testing.T, user string) []testbed.AuditRequest {
	t.Helper()
	var last []testbed.AuditRequest
	err := wait.PollUntilContextTimeout(t.Context(), 300*time.Millisecond, 30*time.Second, false, func(ctx context.Context) (bool, error) {
		reqs, err := bed.AuditLog(ctx, user)
		if err != nil {
			return false, err
		}
		same := len(reqs) > 0 && len(reqs) == len(last) && reqs[len(reqs)-1].Code == last[len(last)-1].Code
		last = reqs
		return same, nil
	})
	if err != nil {
		t.Fatalf("the audit log of %s: %v", user, err)
	}
	return last
}

// requestKind is a verb on a resource, dry run or not.
type requestKind struct {
	verb, resource string
	dryRun         bool
}

func (k requestKind) String() string {
	s := k.verb + " " + k.resource
	if k.dryRun {
		s += " (dry run)"
	}
	return s
}

// requestCount counts requests by kind, and, apart, the watches that list
// and the evictions accepted.
type requestCount struct {
	byKind map[requestKind]int
	// streamingLists counts, by resource, the watches that begin with the
	// collection's state (client-go's informers list so since 1.35).
	streamingLists map[string]int
	// evicted counts the evictions the API accepted (201), dry runs
	// apart.
	evicted int
}

func countRequests(reqs []testbed.AuditRequest) requestCount {
	c := requestCount{byKind: map[requestKind]int{}, streamingLists: map[string]int{}}
	for _, r := range reqs {
		res := r.Resource
		if res == "" { // a path without a resource: /version, /api
			res, _, _ = strings.Cut(r.RequestURI, "?")
		}
		if r.Verb == "list" && listsOneByName(r.RequestURI) {
			// A rollout reads a node of a domain so before it marks the
			// domain upgraded (its check that history did not change): a
			// read of one object, not a list of the cluster.
			res += " (one by name)"
		}
		c.byKind[requestKind{r.Verb, res, r.DryRun}]++
		if r.StreamingList() {
			c.streamingLists[r.Resource]++
		}
		if r.Verb == "create" && r.Resource == "pods/eviction" && !r.DryRun && r.Code == 201 {
			c.evicted++
		}
	}
	return c
}

// of counts the requests of verb on resource (every resource when empty)
// that were not dry runs.
func (c requestCount) of(verb, resource string) int {
	n := 0
	for k, count := range c.byKind {
		if k.verb == verb && (resource == "" || k.resource == resource) && !k.dryRun {
			n += count
		}
	}
	return n
}

// listsOneByName says whether a request lists by metadata.name.
func listsOneByName(uri string) bool {
	u, err := url.ParseRequestURI(uri)
	return err == nil && strings.HasPrefix(u.Query().Get("fieldSelector"), "metadata.name=")
}

// listed counts the lists of resource, plain or streaming.
func (c requestCount) listed(resource string) int {
	return c.of("list", resource) + c.streamingLists[resource]
}

func (c requestCount) String() string {
	if len(c.byKind) == 0 {
		return "no request"
	}
	kinds := slices.SortedFunc(maps.Keys(c.byKind), func(a, b requestKind) int { return strings.Compare(a.String(), b.String()) })
	var parts []string
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%s: %d", k, c.byKind[k]))
	}
	var streaming []string
	for _, res := range slices.Sorted(maps.Keys(c.streamingLists)) {
		streaming = append(streaming, fmt.Sprintf("%s %d", res, c.streamingLists[res]))
	}
	out := strings.Join(parts, ", ")
	if len(streaming) > 0 {
		out += "; of the watches, streaming lists: " + strings.Join(streaming, ", ")
	}
	return out + fmt.Sprintf("; evictions accepted: %d", c.evicted)
}

// startedInformers starts a controller's SharedInformerFactory on client,
// with udrain's informers registered, until the test ends, and returns
// them once synced.
func startedInformers(t *testing.T, client kubernetes.Interface) *clusterinformers.Set {
	t.Helper()
	factory := informers.NewSharedInformerFactory(client, 0)
	in := clusterinformers.FromFactory(factory)
	stop := make(chan struct{})
	factory.Start(stop)
	t.Cleanup(func() { close(stop); factory.Shutdown() })
	for typ, ok := range factory.WaitForCacheSync(t.Context().Done()) {
		if !ok {
			t.Fatalf("the factory's %v informer did not sync", typ)
		}
	}
	return in
}
