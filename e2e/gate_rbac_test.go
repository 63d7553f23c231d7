package e2e

import (
	"context"
	"slices"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/udrain/udrain/e2e/testbed"
	"github.com/udrain/udrain/readiness/gate"
)

// gateClientAs makes a ServiceAccount with the readiness-gate controller's
// ClusterRole of readiness/gate/rbac.yaml bound in the test's namespace and,
// with leaseRole, its Lease Role there too (the Lease namespace of the
// tests is theirs); it returns a client holding only the account's token.
func gateClientAs(t *testing.T, tt *testbed.Test, name string, leaseRole bool) kubernetes.Interface {
	t.Helper()
	c := clientAs(t, tt, name, clusterRoleFromFile(t, gateRoleFile, gateRoleName).Rules, false)
	if leaseRole {
		grantRole(t, tt, c, name, roleFromFile(t, gateRoleFile, gateLeaseRole).Rules)
	}
	return c
}

// grantRole binds a Role with rules, in the test's namespace, to the
// ServiceAccount name made by clientAs, and waits until the authorizer
// grants its first rule to c.
func grantRole(t *testing.T, tt *testbed.Test, c kubernetes.Interface, name string, rules []rbacv1.PolicyRule) {
	t.Helper()
	grantRoleIn(t, tt, c, tt.Name, name, name, rules)
}

// grantRoleIn binds a Role called role with rules, in namespace, to the
// ServiceAccount name (of the test's namespace) made by clientAs, and waits
// until the authorizer grants its first rule to c. Outside the test's
// namespace, the Role and its binding are deleted when the test ends.
func grantRoleIn(t *testing.T, tt *testbed.Test, c kubernetes.Interface, namespace, role, name string, rules []rbacv1.PolicyRule) {
	t.Helper()
	ctx := t.Context()
	r := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: role, Namespace: namespace}, Rules: rules}
	if _, err := tt.Client.RbacV1().Roles(namespace).Create(ctx, r, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	b := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role + "-role", Namespace: namespace},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: tt.Name}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role}}
	if _, err := tt.Client.RbacV1().RoleBindings(namespace).Create(ctx, b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if namespace != tt.Name {
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			for _, err := range []error{
				tt.Client.RbacV1().RoleBindings(namespace).Delete(ctx, b.Name, metav1.DeleteOptions{}),
				tt.Client.RbacV1().Roles(namespace).Delete(ctx, r.Name, metav1.DeleteOptions{}),
			} {
				if err != nil && !apierrors.IsNotFound(err) {
					t.Logf("cleanup: %v", err)
				}
			}
		})
	}
	waitAuthorized(t, c, namespace, rules[0])
}

// TestGateLeaseRole: the readiness-gate controller's leader election works
// with exactly the Lease Role of readiness/gate/rbac.yaml (get and update
// of its one Lease, create in its namespace) and fails without it; the
// Role reaches no other Lease, in its namespace or elsewhere (the
// scheduler's leader Lease, the nodes' heartbeats).
func TestGateLeaseRole(t *testing.T) {
	t.Parallel()
	tt := bed.ForTest(t)
	ctx := t.Context()
	role := roleFromFile(t, gateRoleFile, gateLeaseRole)
	for _, r := range role.Rules {
		if len(r.ResourceNames) > 0 && !slices.Equal(r.ResourceNames, []string{gate.DefaultLeaseName}) {
			t.Fatalf("%s: the Role grants %v on %v, want the controller's Lease %s only", gateRoleFile, r.Verbs, r.ResourceNames, gate.DefaultLeaseName)
		}
	}
	full := gateClientAs(t, tt, "gate-lease", true)
	noRole := gateClientAs(t, tt, "gate-nolease", false)
	noCreate := gateClientAs(t, tt, "gate-nocreate", false)
	named := slices.DeleteFunc(slices.Clone(role.Rules), func(r rbacv1.PolicyRule) bool { return slices.Contains(r.Verbs, "create") })
	if len(named) == len(role.Rules) {
		t.Fatalf("%s: the Role grants no create on leases; the first replica could not make the Lease", gateRoleFile)
	}
	grantRole(t, tt, noCreate, "gate-nocreate", named)

	// Without the Role, the controller's election is refused: no replica
	// ever leads, no Lease is made. The election retries every 300ms here:
	// ten attempts.
	if id, ok := runElection(t, tt, noRole, 3*time.Second, nil); ok {
		t.Errorf("without the Lease Role, %s became leader", id)
	}
	if _, err := tt.Client.CoordinationV1().Leases(tt.Name).Get(ctx, gate.DefaultLeaseName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("without the Lease Role: Lease %s/%s: %v, want not found", tt.Name, gate.DefaultLeaseName, err)
	}
	// Without create, the first replica cannot make the Lease.
	if id, ok := runElection(t, tt, noCreate, 3*time.Second, nil); ok {
		t.Errorf("without create on leases, %s became leader", id)
	}
	// With the Role, a replica makes the Lease and leads.
	_, ok := runElection(t, tt, full, time.Minute, func(id string) {
		lease, err := tt.Client.CoordinationV1().Leases(tt.Name).Get(ctx, gate.DefaultLeaseName, metav1.GetOptions{})
		if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != id {
			t.Errorf("Lease %s/%s while %s leads: %+v (err %v), want held by it", tt.Name, gate.DefaultLeaseName, id, lease.Spec, err)
		}
	})
	if !ok {
		t.Fatalf("with the Lease Role of %s, no replica led within a minute", gateRoleFile)
	}
	lease, err := tt.Client.CoordinationV1().Leases(tt.Name).Get(ctx, gate.DefaultLeaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// What the Role allows, request by request: the elector's lock
	// (client-go's resourcelock.LeaseLock) gets, creates and updates.
	other := func(ns, name string) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	for _, tc := range []struct {
		name    string
		client  kubernetes.Interface
		request func(ctx context.Context, c kubernetes.Interface) error
		allowed bool
	}{
		{"get its Lease", full, getLease(tt.Name, gate.DefaultLeaseName), true},
		{"update its Lease", full, updateLease(lease), true},
		// Allowed: the authorizer passes it, the API says it exists.
		{"create in its namespace", full, createLease(other(tt.Name, gate.DefaultLeaseName)), true},
		{"get another Lease of its namespace", full, getLease(tt.Name, "other"), false},
		{"update another Lease of its namespace", full, updateLease(other(tt.Name, "other")), false},
		{"get the scheduler's leader Lease", full, getLease("kube-system", "kube-scheduler"), false},
		{"update the scheduler's leader Lease", full, updateLease(other("kube-system", "kube-scheduler")), false},
		{"update a node's heartbeat", full, updateLease(other("kube-node-lease", "any-node")), false},
		{"create in kube-node-lease", full, createLease(other("kube-node-lease", "any-node")), false},
		{"get its Lease without the Role", noRole, getLease(tt.Name, gate.DefaultLeaseName), false},
		{"create without the create rule", noCreate, createLease(other(tt.Name, gate.DefaultLeaseName)), false},
		{"get its Lease without the create rule", noCreate, getLease(tt.Name, gate.DefaultLeaseName), true},
	} {
		checkAuthorized(t, tc.name, tc.request(ctx, tc.client), tc.allowed)
	}
}

// checkAuthorized asserts that a request the authorizer should allow
// (allowed) was allowed (it may still fail as AlreadyExists or Conflict),
// or that one it should refuse was Forbidden.
func checkAuthorized(t *testing.T, what string, err error, allowed bool) {
	t.Helper()
	switch {
	case allowed && apierrors.IsForbidden(err):
		t.Errorf("%s: %v, want allowed", what, err)
	case allowed && err != nil && !apierrors.IsAlreadyExists(err) && !apierrors.IsConflict(err):
		t.Errorf("%s: %v", what, err)
	case !allowed && !apierrors.IsForbidden(err):
		t.Errorf("%s: %v, want Forbidden", what, err)
	}
}

func getLease(ns, name string) func(context.Context, kubernetes.Interface) error {
	return func(ctx context.Context, c kubernetes.Interface) error {
		_, err := c.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
		return err
	}
}

func updateLease(l *coordinationv1.Lease) func(context.Context, kubernetes.Interface) error {
	return func(ctx context.Context, c kubernetes.Interface) error {
		_, err := c.CoordinationV1().Leases(l.Namespace).Update(ctx, l, metav1.UpdateOptions{})
		return err
	}
}

func createLease(l *coordinationv1.Lease) func(context.Context, kubernetes.Interface) error {
	return func(ctx context.Context, c kubernetes.Interface) error {
		_, err := c.CoordinationV1().Leases(l.Namespace).Create(ctx, l, metav1.CreateOptions{})
		return err
	}
}

// runElection runs the readiness-gate controller with leader election in
// the test's namespace on c until one replica (this one) leads, or for at
// most d; it returns the leader's identity and whether there was one.
// leading, if set, is called while it leads. The controller is stopped
// (its Lease released) before runElection returns.
func runElection(t *testing.T, tt *testbed.Test, c kubernetes.Interface, d time.Duration, leading func(id string)) (string, bool) {
	t.Helper()
	leaders := make(chan string, 16)
	ctrl, err := gate.New(c, gate.Options{Namespace: tt.Name, LeaderElection: &gate.LeaderElection{
		Namespace: tt.Name, LeaseDuration: 4 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 300 * time.Millisecond,
		OnNewLeader: func(id string) { leaders <- id },
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(klog.NewContext(t.Context(), ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(0)))))
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("readiness-gate controller: %v", err)
		}
	}()
	select {
	case id := <-leaders:
		if leading != nil {
			leading(id)
		}
		return id, true
	case <-time.After(d):
		return "", false
	}
}
