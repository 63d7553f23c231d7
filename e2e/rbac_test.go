package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/kubectl/pkg/drain"
	"sigs.k8s.io/yaml"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/e2e/fixture"
	"github.com/udrain/udrain/e2e/testbed"
	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/readiness/gate"
	"github.com/udrain/udrain/report"
)

// The roles the repository ships, read from their files so that the test
// checks what users apply.
const (
	drainerRoleFile = "../deploy/rbac/drainer.yaml"
	drainerRoleName = "udrain-drainer"
	gateRoleFile    = "../readiness/gate/rbac.yaml"
	gateRoleName    = "udrain-readiness-gate"
	gateLeaseRole   = "udrain-readiness-gate-lease"
	drainerLockRole = "udrain-rollout-lock"
)

// TestLeastPrivilege runs udrain as a ServiceAccount bound to exactly the
// ClusterRole and the rollout-lock Role of deploy/rbac/drainer.yaml (the
// Role in its namespace, udrain-system), with a client that holds only the
// ServiceAccount's token, and the readiness-gate controller under the roles
// of readiness/gate/rbac.yaml (with leader election, so that every rule of
// them is used; TestGateLeaseRole shows the Lease Role is needed and
// enough). A full rollout, wait-healthy and uncordon must succeed. Then
// each rule of the drainer role is removed in turn, and udrain must fail
// with Forbidden where the rule is needed, or succeed where the role file
// says the rule is optional: the role holds nothing udrain does not use.
// Without the lock Role, or one of its verbs, a rollout fails before it
// changes anything, and the Role reaches no Lease outside udrain-system.
func TestLeastPrivilege(t *testing.T) {
	t.Parallel()
	tt := bed.ForTest(t)
	ctx := t.Context()
	drainerRole := clusterRoleFromFile(t, drainerRoleFile, drainerRoleName)
	gateClient := gateClientAs(t, tt, "readiness-gate", true)
	s := deployWithGate(t, tt, scenarioConfig{UDs: 2, PerUD: 1, Groups: 2, Size: 2, GPUsPerPod: 4,
		ReadyDelay: time.Second, TerminateDelay: 500 * time.Millisecond}, gateClient,
		gate.Options{Namespace: tt.Name, LeaderElection: &gate.LeaderElection{Namespace: tt.Name}})
	// The controller took its Lease under the roles: every rule of them is used.
	if lease, err := tt.Client.CoordinationV1().Leases(tt.Name).Get(ctx, gate.DefaultLeaseName, metav1.GetOptions{}); err != nil || lease.Spec.HolderIdentity == nil {
		t.Fatalf("the readiness-gate controller holds no Lease %s/%s: %v", tt.Name, gate.DefaultLeaseName, err)
	}
	// A DaemonSet on the pool, so that drains look its pods' owner up as
	// kubectl drain does (the daemonsets rule).
	createPoolDaemonSet(t, tt)
	helper := eviction.KubectlDefaults()
	helper.IgnoreAllDaemonSets = true

	lockRole := roleFromFile(t, drainerRoleFile, drainerLockRole)
	if lockRole.Namespace != eviction.DefaultLockNamespace {
		t.Fatalf("%s: Role %s is in namespace %q, want the rollouts' Lease namespace %s", drainerRoleFile, drainerLockRole, lockRole.Namespace, eviction.DefaultLockNamespace)
	}
	drainer := clientAs(t, tt, "udrain", drainerRole.Rules, true)
	grantRoleIn(t, tt, drainer, lockRole.Namespace, tt.Name+"-lock", "udrain", lockRole.Rules)
	events := &eventLog{}
	d, err := eviction.New(drainer, eviction.Options{Helper: helper, OnEvent: events.add})
	if err != nil {
		t.Fatal(err)
	}
	tt.OnFailure("udrain-events.txt", events.write)
	res, err := d.Rollout(ctx, eviction.RolloutOptions{ID: "e2e-rbac", Domains: s.domains(), RecoveryTimeout: 2 * time.Minute})
	if err != nil {
		t.Fatalf("rollout as the udrain ServiceAccount bound to %s: %v", drainerRoleFile, err)
	}
	if sum := report.SummarizeRollout(res); sum.DomainsDone != s.nodes.UDs || sum.Phase1Evicted != s.lws.Groups {
		t.Errorf("summary %+v, want %d domains done and %d leaders evicted", sum, s.nodes.UDs, s.lws.Groups)
	}
	// Health counts Pending groups of workloads placed anywhere in the
	// layout; tests running in parallel have theirs, so the wait is
	// scoped to this test's namespace.
	scoped, err := eviction.New(drainer, eviction.Options{Helper: helper, Namespace: tt.Name})
	if err != nil {
		t.Fatal(err)
	}
	if report, err := scoped.WaitHealthy(ctx, s.domains()...); err != nil || !report.Healthy {
		t.Errorf("wait-healthy as the ServiceAccount: %v (report %+v)", err, report)
	}
	if _, err := d.Uncordon(ctx, s.nodes.UD(0)); err != nil {
		t.Errorf("uncordon as the ServiceAccount: %v", err)
	}
	checkUpgradedAndUncordoned(t, s, "e2e-rbac")
	s.waitHealthy(t, time.Minute)
	if t.Failed() {
		t.FailNow()
	}
	t.Run("rollout lock", func(t *testing.T) { checkLockRole(t, tt, s, helper, drainerRole, lockRole, drainer, "e2e-rbac") })

	admin, err := eviction.New(tt.Client, eviction.Options{Helper: helper})
	if err != nil {
		t.Fatal(err)
	}
	dom := s.nodes.UD(0)
	for i, rule := range drainerRole.Rules {
		check, ok := ruleChecks[ruleKey(rule)]
		if !ok {
			t.Errorf("rule %s of %s has no check here: add one that fails without it, or say why it is optional", ruleString(rule), drainerRoleFile)
			continue
		}
		t.Run(check.name, func(t *testing.T) {
			rules := slices.Delete(slices.Clone(drainerRole.Rules), i, i+1)
			c := clientAs(t, tt, fmt.Sprintf("udrain-%d", i), rules, true)
			d, err := eviction.New(c, eviction.Options{Helper: helper})
			if err != nil {
				t.Fatal(err)
			}
			// udrain should fail as soon as the API refuses a request;
			// the timeout only bounds a wait that never ends.
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			err = check.run(ctx, d, dom)
			// A drain that got as far as cordoning leaves the domain
			// cordoned: undo it for the next check.
			if _, uerr := admin.Uncordon(context.WithoutCancel(ctx), dom); uerr != nil {
				t.Fatalf("uncordon %s as admin: %v", dom, uerr)
			}
			switch {
			case check.optional && err != nil:
				t.Errorf("without %s: %v; %s says the rule is optional", ruleString(rule), err, drainerRoleFile)
			case !check.optional && !isForbidden(err):
				t.Errorf("without %s: err = %v, want udrain to fail with Forbidden", ruleString(rule), err)
			case check.unseen && !errors.As(err, new(*eviction.PermissionError)):
				t.Errorf("without %s: err = %v (%T), want an *eviction.PermissionError", ruleString(rule), err, err)
			case err != nil:
				t.Logf("without %s: %v", ruleString(rule), err)
			}
		})
	}
	// The rule on nodes grants list, watch and patch: without patch alone a
	// drain must stop at the cordon, before any eviction.
	t.Run("nodes patch", func(t *testing.T) {
		rules := slices.Clone(drainerRole.Rules)
		found := false
		for i, r := range rules {
			if ruleKey(r) == "/nodes" && slices.Contains(r.Verbs, "patch") {
				r.Verbs = slices.DeleteFunc(slices.Clone(r.Verbs), func(v string) bool { return v == "patch" })
				rules[i], found = r, true
			}
		}
		if !found {
			t.Fatalf("%s grants no patch on nodes, which cordoning needs", drainerRoleFile)
		}
		c := clientAs(t, tt, "udrain-nopatch", rules, true)
		d, err := eviction.New(c, eviction.Options{Helper: helper, OnEvent: events.add})
		if err != nil {
			t.Fatal(err)
		}
		start := len(events.all())
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		if _, _, err := d.Drain(ctx, dom, eviction.DrainOptions{ID: "e2e-rbac-nopatch"}); !isForbidden(err) {
			t.Errorf("drain without patch on nodes: err = %v, want Forbidden", err)
		}
		for _, e := range events.all()[start:] {
			if e.Type == eviction.EventEvicting {
				t.Errorf("drain without patch on nodes evicted %v", e.Pod)
			}
		}
	})
}

// checkLockRole proves the Role udrain-rollout-lock of
// deploy/rbac/drainer.yaml needed, verb by verb, and confined to its
// namespace. A rollout whose identity lacks the Role, or one of its verbs,
// fails with a *eviction.PermissionError before anything changed; the
// identity that holds it (drainer, whose rollout released its Lease of
// rollout doneID) reaches no Lease outside the Role's namespace, and none
// inside it with verbs the Role does not grant.
func checkLockRole(t *testing.T, tt *testbed.Test, s *scenario, helper *drain.Helper, drainerRole *rbacv1.ClusterRole, lockRole *rbacv1.Role, drainer kubernetes.Interface, doneID string) {
	ctx := t.Context()
	ns := lockRole.Namespace
	without := func(verb string) []rbacv1.PolicyRule {
		var rules []rbacv1.PolicyRule
		for _, r := range lockRole.Rules {
			r.Verbs = slices.DeleteFunc(slices.Clone(r.Verbs), func(v string) bool { return v == verb })
			if len(r.Verbs) > 0 {
				rules = append(rules, r)
			}
		}
		return rules
	}
	for _, tc := range []struct {
		name, account string
		// rules of the Role bound (none: no Role at all); id of the
		// rollout: a Lease released by a finished rollout exists for
		// doneID, none for the others.
		rules []rbacv1.PolicyRule
		id    string
	}{
		{"without the Role", "udrain-norole", nil, "e2e-rbac-norole"},
		{"without get", "udrain-noget", without("get"), "e2e-rbac-noget"},
		{"without create", "udrain-nocreate", without("create"), "e2e-rbac-nocreate"},
		{"without update", "udrain-noupdate", without("update"), doneID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			account := tc.account
			c := clientAs(t, tt, account, drainerRole.Rules, true)
			if tc.rules != nil {
				grantRoleIn(t, tt, c, ns, tt.Name+"-"+account, account, tc.rules)
			}
			state := func() string {
				l, err := tt.Client.CoordinationV1().Leases(ns).Get(ctx, "udrain-rollout-"+tc.id, metav1.GetOptions{})
				switch {
				case apierrors.IsNotFound(err):
					return "none"
				case err != nil:
					t.Fatal(err)
				case l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "":
					return fmt.Sprintf("resourceVersion %s, held by %s", l.ResourceVersion, *l.Spec.HolderIdentity)
				}
				return fmt.Sprintf("resourceVersion %s, free", l.ResourceVersion)
			}
			before := state()
			d, err := eviction.New(c, eviction.Options{Helper: helper})
			if err != nil {
				t.Fatal(err)
			}
			rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			_, err = d.Rollout(rctx, eviction.RolloutOptions{ID: tc.id, Domains: s.domains()})
			if !isForbidden(err) || !errors.As(err, new(*eviction.PermissionError)) {
				t.Fatalf("rollout %s: err = %v (%T), want an *eviction.PermissionError for Forbidden", tc.id, err, err)
			}
			if !strings.Contains(err.Error(), "Role "+drainerLockRole) {
				t.Errorf("rollout %s: %v; the error does not say to bind the Role %s", tc.id, err, drainerLockRole)
			}
			t.Logf("rollout %s: %v", tc.id, err)
			checkNothingCordoned(t, s)
			if after := state(); after != before {
				t.Errorf("Lease %s/udrain-rollout-%s changed: %s before the rollout, %s after", ns, tc.id, before, after)
			}
		})
	}

	// What the Role reaches, request by request, as the identity holding it.
	lease := func(ns, name string) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	done, err := drainer.CoordinationV1().Leases(ns).Get(ctx, "udrain-rollout-"+doneID, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the Lease of rollout %s, read as the udrain ServiceAccount: %v", doneID, err)
	}
	if done.Spec.HolderIdentity != nil && *done.Spec.HolderIdentity != "" {
		t.Errorf("the finished rollout %s did not release its Lease: held by %q", doneID, *done.Spec.HolderIdentity)
	}
	for _, tc := range []struct {
		name    string
		request func(ctx context.Context, c kubernetes.Interface) error
		allowed bool
	}{
		{"get a rollout's Lease", getLease(ns, done.Name), true},
		{"update a rollout's Lease", updateLease(done), true},
		{"create in " + ns, createLease(lease(ns, done.Name)), true},
		{"delete in " + ns, func(ctx context.Context, c kubernetes.Interface) error {
			return c.CoordinationV1().Leases(ns).Delete(ctx, done.Name, metav1.DeleteOptions{})
		}, false},
		{"list in " + ns, func(ctx context.Context, c kubernetes.Interface) error {
			_, err := c.CoordinationV1().Leases(ns).List(ctx, metav1.ListOptions{})
			return err
		}, false},
		{"get in the test's namespace", getLease(tt.Name, done.Name), false},
		{"create in the test's namespace", createLease(lease(tt.Name, done.Name)), false},
		{"get the scheduler's leader Lease", getLease("kube-system", "kube-scheduler"), false},
		{"update the scheduler's leader Lease", updateLease(lease("kube-system", "kube-scheduler")), false},
		{"update a node's heartbeat", updateLease(lease("kube-node-lease", s.nodes.Name(0, 0))), false},
		{"create in kube-node-lease", createLease(lease("kube-node-lease", "any-node")), false},
	} {
		checkAuthorized(t, tc.name, tc.request(ctx, drainer), tc.allowed)
	}
}

// checkNothingCordoned asserts that no node of the scenario's pool is
// cordoned or carries udrain's cordon mark.
func checkNothingCordoned(t *testing.T, s *scenario) {
	t.Helper()
	nodes, err := s.tt.Client.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{LabelSelector: s.nodes.Selector().String()})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		if _, marked := n.Annotations[udrain.CordonedByAnnotation]; n.Spec.Unschedulable || marked {
			t.Errorf("node %s cordoned (unschedulable %t, annotations %v)", n.Name, n.Spec.Unschedulable, n.Annotations)
		}
	}
}

// ruleCheck is what proves one rule of the drainer role needed (udrain
// fails with Forbidden without it) or optional.
type ruleCheck struct {
	name string
	run  func(ctx context.Context, d *eviction.Drainer, domain string) error
	// optional: udrain works without the rule. unseen: without it udrain
	// cannot list what it plans from, and says so with a PermissionError.
	optional, unseen bool
}

// planDomain lists nodes, pods and PDBs (watch caches), PodGroups and the
// DaemonSets of the domain's pods: the cheapest operation that reads all.
func planDomain(ctx context.Context, d *eviction.Drainer, domain string) error {
	p, err := d.Plan(ctx, domain)
	if err != nil {
		return err
	}
	return p.Err()
}

func drainDomain(ctx context.Context, d *eviction.Drainer, domain string) error {
	_, _, err := d.Drain(ctx, domain, eviction.DrainOptions{ID: "e2e-rbac-check"})
	return err
}

// ruleChecks maps each rule of deploy/rbac/drainer.yaml (by API group and
// resources) to its check. A check removes a whole rule; the verbs inside a
// rule are not proven one by one (but patch on nodes, below): watch keeps
// udrain's caches current (without it lists succeed and waits never end),
// and get on pods is only used when an eviction's UID precondition fails on
// a replaced pod, which udrain's watch usually notices first, so a test
// cannot provoke it reliably.
var ruleChecks = map[string]ruleCheck{
	"/nodes":                      {name: "nodes", run: planDomain, unseen: true},
	"/pods":                       {name: "pods", run: planDomain, unseen: true},
	"/pods/eviction":              {name: "pods eviction", run: drainDomain},
	"policy/poddisruptionbudgets": {name: "poddisruptionbudgets", run: planDomain, unseen: true},
	"apps/daemonsets":             {name: "daemonsets", run: planDomain},
	// Optional, as the role file says: a recovery reads a starting
	// member's events only after StuckAfter, and waits on without them.
	"/events": {name: "events", run: planDomain, optional: true},
	// Optional, as the role file says: udrain falls back to grouping by
	// labels when it may not list PodGroups (or the API is not served).
	"scheduling.k8s.io/podgroups": {name: "podgroups", run: planDomain, optional: true},
	// Optional, as the role file says: a rollout that may not read a
	// LeaderWorkerSet says so and does not wait for its update.
	"leaderworkerset.x-k8s.io/leaderworkersets": {name: "leaderworkersets", run: planDomain, optional: true},
}

func ruleKey(r rbacv1.PolicyRule) string {
	return strings.Join(r.APIGroups, ",") + "/" + strings.Join(r.Resources, ",")
}

func ruleString(r rbacv1.PolicyRule) string {
	return fmt.Sprintf("{apiGroups %q, resources %q, verbs %q}", r.APIGroups, r.Resources, r.Verbs)
}

// isForbidden reports whether err is, or reports, an authorization refusal:
// an API status error, or a pod kubectl's filters refused because its
// DaemonSet could not be read.
func isForbidden(err error) bool {
	if err == nil {
		return false
	}
	return apierrors.IsForbidden(err) || errors.Is(err, &eviction.ClusterError{Reason: eviction.ReasonRefusedPods}) && strings.Contains(err.Error(), "forbidden")
}

// clusterRoleFromFile returns the ClusterRole called name from a YAML file
// of several documents.
func clusterRoleFromFile(t *testing.T, file, name string) *rbacv1.ClusterRole {
	t.Helper()
	var role rbacv1.ClusterRole
	objectFromFile(t, file, "ClusterRole", name, &role)
	return &role
}

// roleFromFile returns the Role called name from a YAML file of several
// documents.
func roleFromFile(t *testing.T, file, name string) *rbacv1.Role {
	t.Helper()
	var role rbacv1.Role
	objectFromFile(t, file, "Role", name, &role)
	return &role
}

// objectFromFile decodes the object of kind and name of a YAML file of
// several documents into obj, strictly (an unknown field fails).
func objectFromFile(t *testing.T, file, kind, name string, obj any) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range bytes.Split(data, []byte("\n---")) {
		var meta struct {
			metav1.TypeMeta `json:",inline"`
			Metadata        struct{ Name string } `json:"metadata"`
		}
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if meta.Kind != kind || meta.Metadata.Name != name {
			continue
		}
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		return
	}
	t.Fatalf("%s has no %s %s", file, kind, name)
}

// clientAs makes a ServiceAccount in the test's namespace, a ClusterRole
// with rules, and a binding (cluster-wide, or a RoleBinding in the
// namespace), all deleted when the test ends, and returns a client that
// authenticates with the ServiceAccount's token only, once the authorizer
// grants it the first rule.
func clientAs(t *testing.T, tt *testbed.Test, name string, rules []rbacv1.PolicyRule, clusterWide bool) kubernetes.Interface {
	t.Helper()
	ctx := t.Context()
	admin := tt.Client
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: tt.Name}}
	if _, err := admin.CoreV1().ServiceAccounts(tt.Name).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: tt.Name + "-" + name}, Rules: rules}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cleanup := func(del func(context.Context) error) {
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := del(ctx); err != nil && !apierrors.IsNotFound(err) {
				t.Logf("cleanup: %v", err)
			}
		})
	}
	cleanup(func(ctx context.Context) error {
		return admin.RbacV1().ClusterRoles().Delete(ctx, role.Name, metav1.DeleteOptions{})
	})
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: tt.Name}}
	ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name}
	if clusterWide {
		b := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name}, Subjects: subjects, RoleRef: ref}
		if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, b, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		cleanup(func(ctx context.Context) error {
			return admin.RbacV1().ClusterRoleBindings().Delete(ctx, b.Name, metav1.DeleteOptions{})
		})
	} else {
		b := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: tt.Name}, Subjects: subjects, RoleRef: ref}
		if _, err := admin.RbacV1().RoleBindings(tt.Name).Create(ctx, b, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	c := tokenClient(t, tt, tt.Name, name)
	if len(rules) > 0 {
		waitAuthorized(t, c, tt.Name, rules[0])
	}
	return c
}

// tokenClient returns a client that authenticates with a token of the
// ServiceAccount namespace/name only (the cluster's address and CA, none
// of the admin's credentials), as a pod running as it would.
func tokenClient(t *testing.T, tt *testbed.Test, namespace, name string) kubernetes.Interface {
	t.Helper()
	return tokenClientWith(t, tt, namespace, name, nil)
}

// tokenClientWith is tokenClient with the client's transport wrapped by
// wrap (if not nil).
func tokenClientWith(t *testing.T, tt *testbed.Test, namespace, name string, wrap func(http.RoundTripper) http.RoundTripper) kubernetes.Interface {
	t.Helper()
	ctx := t.Context()
	tr, err := tt.Client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(3600))},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest for %s/%s: %v", namespace, name, err)
	}
	cfg := rest.AnonymousClientConfig(tt.Config)
	cfg.BearerToken = tr.Status.Token
	cfg.QPS, cfg.Burst = 100, 200
	if wrap != nil {
		cfg.Wrap(wrap)
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	review, err := c.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := "system:serviceaccount:" + namespace + ":" + name; review.Status.UserInfo.Username != want {
		t.Fatalf("the token authenticates as %q, want %q", review.Status.UserInfo.Username, want)
	}
	return c
}

// waitAuthorized waits until the authorizer, whose RBAC view follows the
// API a moment late, grants rule's first verb (on its first resource name,
// if it names any) to the client.
func waitAuthorized(t *testing.T, c kubernetes.Interface, namespace string, rule rbacv1.PolicyRule) {
	t.Helper()
	resource, sub, _ := strings.Cut(rule.Resources[0], "/")
	attrs := &authorizationv1.ResourceAttributes{Namespace: namespace, Verb: rule.Verbs[0], Group: rule.APIGroups[0], Resource: resource, Subresource: sub}
	if len(rule.ResourceNames) > 0 {
		attrs.Name = rule.ResourceNames[0]
	}
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		r, err := c.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx,
			&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: attrs}}, metav1.CreateOptions{})
		return err == nil && r.Status.Allowed, nil
	})
	if err != nil {
		t.Fatalf("the authorizer does not grant %s: %v", ruleString(rule), err)
	}
}

// createPoolDaemonSet runs a DaemonSet on the pool's nodes and waits until
// its pods are scheduled.
func createPoolDaemonSet(t *testing.T, tt *testbed.Test) {
	t.Helper()
	labels := map[string]string{"app": "node-agent"}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "node-agent", Namespace: tt.Name},
		Spec: appsv1.DaemonSetSpec{
			Selector: metav1.SetAsLabelSelector(labels),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector:                 map[string]string{fixture.PoolLabel: tt.Name},
					Containers:                   []corev1.Container{{Name: "agent", Image: fixture.DefaultImage}},
					AutomountServiceAccountToken: new(false),
				},
			},
		},
	}
	if _, err := tt.Client.AppsV1().DaemonSets(tt.Name).Create(t.Context(), ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	nodes, err := tt.Client.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{LabelSelector: fixture.PoolLabel + "=" + tt.Name})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fixture.WaitForPods(t.Context(), tt.Client, tt.Name, k8slabels.SelectorFromSet(labels), fixture.PodsScheduled(len(nodes.Items))); err != nil {
		t.Fatal(err)
	}
}
