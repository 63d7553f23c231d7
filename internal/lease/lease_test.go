package lease

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/udrain/udrain/internal/testkit"
)

// t0 is the fake clock's time when a test takes its Lease.
var t0 = time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)

const ns, name = "udrain-system", "udrain-rollout-r"

var leases = coordinationv1.SchemeGroupVersion.WithResource("leases")

// testConfig is the Lease of rollout r, held by "me" for 30 s.
func testConfig() Config {
	return Config{Namespace: ns, Name: name, Identity: "me", Duration: 30 * time.Second,
		Annotations: map[string]string{"udrain.dev/rollout-id": "r"}}
}

// testContext is a context that ends with the test, whose logger (V(2))
// writes to logs.
func testContext(t *testing.T, logs *testkit.SyncBuffer) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return klog.NewContext(ctx, funcr.New(func(prefix, args string) { _, _ = logs.Write([]byte(args + "\n")) }, funcr.Options{Verbosity: 2}))
}

// heldBy is a Lease of the test's name held by holder, renewed at renewed
// (nil: never, made at t0-10s) for 30 s.
func heldBy(holder string, renewed *time.Time) *coordinationv1.Lease {
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(t0.Add(-10 * time.Second))},
		Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr.To[int32](30)}}
	if holder != "" {
		l.Spec.HolderIdentity = &holder
	}
	if renewed != nil {
		at := metav1.NewMicroTime(*renewed)
		l.Spec.RenewTime, l.Spec.AcquireTime = &at, &at
	}
	return l
}

func ago(d time.Duration) *time.Time { at := t0.Add(-d); return &at }

// ours is the Lease spec of "me", taken at at for 30 s.
func ours(at time.Time) coordinationv1.LeaseSpec {
	mt := metav1.NewMicroTime(at)
	return coordinationv1.LeaseSpec{HolderIdentity: ptr.To("me"), LeaseDurationSeconds: ptr.To[int32](30), AcquireTime: &mt, RenewTime: &mt}
}

func conflict() error {
	return apierrors.NewConflict(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, name, errors.New("the object has been modified"))
}

// once returns a reactor that answers the first n matching calls with err
// (after calling before, if not nil) and lets the others through.
func once(n int, err error, before func()) k8stesting.ReactionFunc {
	return func(k8stesting.Action) (bool, runtime.Object, error) {
		if n == 0 {
			return false, nil, nil
		}
		n--
		if before != nil {
			before()
		}
		return true, nil, err
	}
}

// Name keeps a valid name as it is and makes any other key a valid name
// of its own: the hashes are written out, so that a change of the scheme
// (which would lose the Leases of running rollouts) fails the test.
func TestName(t *testing.T) {
	for _, tc := range []struct{ key, want string }{
		{"kubelet-1.37", "udrain-rollout-kubelet-1.37"},
		{"Kernel_6.12", "udrain-rollout-kernel-6.12-fa43f16d"},
		{"kernel_6.12", "udrain-rollout-kernel-6.12-762291bd"}, // not the Lease of Kernel_6.12
		{"-x-", "udrain-rollout--x-c6cf95e5"},                  // a name does not end with a dash
		{"_x_", "udrain-rollout--x-f1f6bd62"},
		{strings.Repeat("a", 260), "udrain-rollout-" + strings.Repeat("a", 40) + "-861aee7b"},
	} {
		got := Name("udrain-rollout-", tc.key)
		if got != tc.want {
			t.Errorf("Name(%q) = %q, want %q", tc.key, got, tc.want)
		}
		if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
			t.Errorf("Name(%q) = %q, not a valid name: %v", tc.key, got, errs)
		}
	}
}

func TestConfigChecked(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Config)
	}{
		{"no namespace", func(c *Config) { c.Namespace = "" }},
		{"no name", func(c *Config) { c.Name = "" }},
		{"no identity", func(c *Config) { c.Identity = "" }},
		{"no duration", func(c *Config) { c.Duration = 0 }},
		{"under a second", func(c *Config) { c.Duration = 999 * time.Millisecond }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			tc.edit(&cfg)
			client := fake.NewClientset()
			if _, err := New(client, clocktesting.NewFakeClock(t0), cfg).Acquire(context.Background()); err == nil {
				t.Error("Acquire took a Lease with that Config")
			}
			if n := len(client.Actions()); n != 0 {
				t.Errorf("Acquire made %d request(s), want none", n)
			}
		})
	}
}

type acquireCase struct {
	name string
	objs []runtime.Object
	edit func(*Config)
	// react adds reactors to the client.
	react func(c *fake.Clientset)
	// wantHeld is the *HeldError Acquire returns; wantErr, whether the
	// error it returns is the one expected.
	wantHeld *HeldError
	wantErr  func(error) bool
	// wantSpec is the Lease's after Acquire (nil: there is none);
	// wantWrites, the creations and updates of Leases it made.
	wantSpec   *coordinationv1.LeaseSpec
	wantWrites int
	// wantNamespace: Acquire created the namespace.
	wantNamespace bool
	wantLog       string
}

// missingNamespace makes creating a Lease in a namespace that does not
// exist fail, as the API server does.
func missingNamespace(c *fake.Clientset) {
	c.PrependReactor("create", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if _, err := c.Tracker().Get(corev1.SchemeGroupVersion.WithResource("namespaces"), "", a.GetNamespace()); err != nil {
			return true, nil, apierrors.NewNotFound(corev1.Resource("namespaces"), a.GetNamespace())
		}
		return false, nil, nil
	})
}

func acquireCases() []acquireCase {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, name, errors.New("RBAC: access denied"))
	unreachable := errors.New("the server does not answer")
	held := func(renewed time.Time) *HeldError {
		return &HeldError{Namespace: ns, Name: name, Holder: "other", RenewedAt: renewed, Duration: 30 * time.Second}
	}
	return []acquireCase{
		{name: "none: created", wantSpec: ptr.To(ours(t0)), wantWrites: 1},
		{name: "its own", objs: []runtime.Object{heldBy("me", ago(5*time.Second))}, wantSpec: ptr.To(ours(t0)), wantWrites: 1},
		{name: "released", objs: []runtime.Object{heldBy("", ago(5*time.Second))}, wantSpec: ptr.To(ours(t0)), wantWrites: 1},
		{name: "held", objs: []runtime.Object{heldBy("other", ago(10*time.Second))}, wantHeld: held(t0.Add(-10 * time.Second)),
			wantSpec: &heldBy("other", ago(10*time.Second)).Spec},
		{name: "held, never renewed: since it was made", objs: []runtime.Object{heldBy("other", nil)}, wantHeld: held(t0.Add(-10 * time.Second)),
			wantSpec: &heldBy("other", nil).Spec},
		{name: "expired: taken over", objs: []runtime.Object{heldBy("other", ago(31*time.Second))}, wantSpec: ptr.To(ours(t0)), wantWrites: 1,
			wantLog: `"msg"="Taking over an expired rollout Lease" "lease"="udrain-system/udrain-rollout-r" "previousHolder"="other"`},
		{name: "expired just now", objs: []runtime.Object{heldBy("other", ago(30*time.Second))}, wantSpec: ptr.To(ours(t0)), wantWrites: 1},
		{name: "a take-over that raced is looked at again", objs: []runtime.Object{heldBy("other", ago(31*time.Second))},
			react:    func(c *fake.Clientset) { c.PrependReactor("update", "leases", once(1, conflict(), nil)) },
			wantSpec: ptr.To(ours(t0)), wantWrites: 2},
		{name: "a creation that raced finds the winner", wantHeld: held(t0), wantSpec: &heldBy("other", &t0).Spec, wantWrites: 1,
			react: func(c *fake.Clientset) {
				c.PrependReactor("create", "leases", once(1, apierrors.NewAlreadyExists(coordinationv1.Resource("leases"), name), func() {
					_ = c.Tracker().Add(heldBy("other", &t0))
				}))
			}},
		{name: "the fourth race is an error", objs: []runtime.Object{heldBy("me", ago(5*time.Second))},
			react:   func(c *fake.Clientset) { c.PrependReactor("update", "leases", once(4, conflict(), nil)) },
			wantErr: apierrors.IsConflict, wantSpec: &heldBy("me", ago(5*time.Second)).Spec, wantWrites: 4},
		{name: "no namespace", react: missingNamespace, wantErr: namespaceMissing, wantWrites: 1},
		{name: "no namespace: created", edit: func(c *Config) { c.CreateNamespace = true }, react: missingNamespace,
			wantSpec: ptr.To(ours(t0)), wantWrites: 2, wantNamespace: true,
			wantLog: `"msg"="Created the namespace of the rollout Leases" "namespace"="udrain-system"`},
		{name: "no namespace: not allowed to create it", edit: func(c *Config) { c.CreateNamespace = true },
			react: func(c *fake.Clientset) {
				missingNamespace(c)
				c.PrependReactor("create", "namespaces", once(1, apierrors.NewForbidden(corev1.Resource("namespaces"), ns, errors.New("RBAC")), nil))
			},
			wantErr: apierrors.IsForbidden, wantWrites: 1},
		{name: "forbidden", react: func(c *fake.Clientset) { c.PrependReactor("get", "leases", once(1, forbidden, nil)) },
			wantErr: func(err error) bool { return errors.Is(err, forbidden) }},
		{name: "read through Config.Read", edit: func(c *Config) {
			c.Read = func(context.Context, func(context.Context) error) error { return unreachable }
		}, wantErr: func(err error) bool { return errors.Is(err, unreachable) }},
	}
}

func TestAcquire(t *testing.T) {
	for _, tc := range acquireCases() {
		t.Run(tc.name, func(t *testing.T) {
			var logs testkit.SyncBuffer
			ctx := testContext(t, &logs)
			client := fake.NewClientset(tc.objs...)
			if tc.react != nil {
				tc.react(client)
			}
			cfg := testConfig()
			if tc.edit != nil {
				tc.edit(&cfg)
			}
			h, err := New(client, clocktesting.NewFakeClock(t0), cfg).Acquire(ctx)
			switch {
			case tc.wantHeld != nil:
				if diff := cmp.Diff(tc.wantHeld, err); diff != "" {
					t.Errorf("Acquire: %v; want a *HeldError (-want +got):\n%s", err, diff)
				}
			case tc.wantErr != nil:
				if err == nil || !tc.wantErr(err) {
					t.Errorf("Acquire: %v, want another error", err)
				}
			case err != nil || h == nil:
				t.Fatalf("Acquire: %v", err)
			case h.lease.Spec.RenewTime == nil || !h.lease.Spec.RenewTime.Equal(&metav1.MicroTime{Time: t0}):
				t.Errorf("Acquire holds %v, want the Lease it wrote", h.lease.Spec)
			}
			checkLease(t, client, tc.wantSpec)
			writes := 0
			for _, a := range client.Actions() {
				if a.GetResource() == leases && (a.GetVerb() == "create" || a.GetVerb() == "update") {
					writes++
				}
			}
			if writes != tc.wantWrites {
				t.Errorf("%d write(s) of Leases, want %d", writes, tc.wantWrites)
			}
			n, nsErr := client.Tracker().Get(corev1.SchemeGroupVersion.WithResource("namespaces"), "", ns)
			if made := nsErr == nil; made != tc.wantNamespace {
				t.Errorf("namespace made: %v, want %v", made, tc.wantNamespace)
			} else if made && !cmp.Equal(n.(*corev1.Namespace).Labels, map[string]string{"app.kubernetes.io/managed-by": "udrain", "pod-security.kubernetes.io/enforce": "restricted"}) {
				t.Errorf("namespace labelled %v, want udrain's and restricted", n.(*corev1.Namespace).Labels)
			}
			if !strings.Contains(logs.String(), tc.wantLog) {
				t.Errorf("logs:\n%s\nwant a line with %s", logs.String(), tc.wantLog)
			}
		})
	}
}

// checkLease checks the Lease's spec (want nil: there is none), and that
// a Lease that Acquire made is labelled as udrain's and annotated as
// configured.
func checkLease(t *testing.T, client *fake.Clientset, want *coordinationv1.LeaseSpec) {
	t.Helper()
	o, err := client.Tracker().Get(leases, ns, name)
	if want == nil {
		if err == nil {
			t.Errorf("there is a Lease: %v", o)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	l := o.(*coordinationv1.Lease)
	if diff := cmp.Diff(*want, l.Spec); diff != "" {
		t.Errorf("Lease (-want +got):\n%s", diff)
	}
	if l.CreationTimestamp.IsZero() && (l.Labels["app.kubernetes.io/managed-by"] != "udrain" || l.Annotations["udrain.dev/rollout-id"] != "r") {
		t.Errorf("the Lease Acquire made has labels %v and annotations %v, want udrain's and the Config's", l.Labels, l.Annotations)
	}
}
