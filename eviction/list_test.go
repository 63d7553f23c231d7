package eviction

import (
	"context"
	"errors"
	"net/url"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/udrain/udrain/clusterinformers"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// listed is what a read-only Drainer's Nodes and DaemonSets came to.
type listed struct {
	Nodes      []string
	DaemonSets []string
	// NodesErr and DaemonSetsErr describe the errors (errorShape).
	NodesErr, DaemonSetsErr string
	// Requests are the Limit and Continue of each list request the
	// read-only Drainer made of its own, in order.
	Requests []string
}

// errorShape names the type an error of a read-only Drainer's list is, with the
// server problem of a *RetryError (ReasonUnreachable): what a caller tells apart.
func errorShape(err error) string {
	var (
		ue *RetryError
		pe *PermissionError
		ns *RetryError
	)
	switch {
	case err == nil:
		return ""
	case asReason(err, &ue, ReasonUnreachable):
		return "Unreachable " + string(ue.Problem) + " " + ue.Server
	case errors.As(err, &pe):
		return "Permission"
	case asReason(err, &ns, ReasonNotSynced):
		return "NotSynced"
	}
	return "other: " + err.Error()
}

// refused is the error of a request to a server where nothing listens.
func refused(verb string) error {
	return &url.Error{Op: verb, URL: "https://10.0.0.1:6443/api/v1/nodes",
		Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}
}

// pagedNodes answers each list of nodes with at most two nodes a page
// and a Continue token for the next, as an API server does with Limit.
func pagedNodes(names ...string) k8stesting.ReactionFunc {
	return func(a k8stesting.Action) (bool, runtime.Object, error) {
		opts := a.(k8stesting.ListActionImpl).ListOptions
		from, _ := strconv.Atoi(opts.Continue)
		to := min(from+2, len(names))
		list := &corev1.NodeList{}
		for _, n := range names[from:to] {
			list.Items = append(list.Items, corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}})
		}
		if to < len(names) {
			list.Continue = strconv.Itoa(to)
		}
		return true, list, nil
	}
}

// A read-only Drainer lists the cluster's nodes and DaemonSets, in pages of its
// own or through the caller's informers, ordered by name, and reports a
// server that refuses, fails or throttles as a *RetryError (ReasonUnreachable) and a
// refusal for lack of permission as a *PermissionError, as its other
// calls do.
func TestReaderNodesAndDaemonSets(t *testing.T) {
	objects := func() []runtime.Object {
		return []runtime.Object{
			testNode("node-b", "ud-1"), testNode("node-a", "ud-1"), testNode("node-c", "ud-2"),
			&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "proxy"}},
			&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "gpu-operator", Name: "nvidia-device-plugin"}},
		}
	}
	all := listed{
		Nodes:      []string{"node-a", "node-b", "node-c"},
		DaemonSets: []string{"gpu-operator/nvidia-device-plugin", "kube-system/proxy"},
	}
	fail := func(err error) k8stesting.ReactionFunc {
		return func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, err }
	}
	nodes := schema.GroupResource{Resource: "nodes"}
	for _, tc := range []struct {
		name string
		// informers: through a factory's informers (DaemonSets unless
		// withoutDaemonSets), started before the read-only Drainer's calls.
		informers, withoutDaemonSets bool
		nodes, daemonSets            k8stesting.ReactionFunc // nil: the fake's objects
		want                         listed
	}{
		{name: "lists of its own", want: listed{Nodes: all.Nodes, DaemonSets: all.DaemonSets,
			Requests: []string{"nodes limit=500", "daemonsets limit=500"}}},
		{name: "pages", nodes: pagedNodes("node-a", "node-b", "node-c", "node-d", "node-e"), want: listed{
			Nodes: []string{"node-a", "node-b", "node-c", "node-d", "node-e"}, DaemonSets: all.DaemonSets,
			Requests: []string{"nodes limit=500", "nodes limit=500 continue=2", "nodes limit=500 continue=4", "daemonsets limit=500"}}},
		{name: "through the caller's informers", informers: true, want: all},
		{name: "informers without DaemonSets", informers: true, withoutDaemonSets: true,
			want: listed{Nodes: all.Nodes, DaemonSets: all.DaemonSets, Requests: []string{"daemonsets limit=500"}}},
		{name: "forbidden", nodes: fail(apierrors.NewForbidden(nodes, "", errors.New("no"))),
			daemonSets: fail(apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "daemonsets"}, "", errors.New("no"))),
			want:       listed{NodesErr: "Permission", DaemonSetsErr: "Permission", Requests: []string{"nodes limit=500", "daemonsets limit=500"}}},
		{name: "unauthorized", nodes: fail(apierrors.NewUnauthorized("who?")),
			want: listed{NodesErr: "Permission", DaemonSets: all.DaemonSets, Requests: []string{"nodes limit=500", "daemonsets limit=500"}}},
		{name: "refused", nodes: fail(refused("Get")), daemonSets: fail(refused("Get")),
			want: listed{NodesErr: "Unreachable Refused https://10.0.0.1:6443", DaemonSetsErr: "Unreachable Refused https://10.0.0.1:6443",
				Requests: []string{"nodes limit=500", "daemonsets limit=500"}}},
		{name: "server errors", nodes: fail(apierrors.NewInternalError(errors.New("etcd"))),
			want: listed{NodesErr: "Unreachable ServerError ", DaemonSets: all.DaemonSets, Requests: []string{"nodes limit=500", "daemonsets limit=500"}}},
		{name: "throttled", nodes: fail(apierrors.NewTooManyRequests("slow down", 1)),
			want: listed{NodesErr: "Unreachable Throttled ", DaemonSets: all.DaemonSets, Requests: []string{"nodes limit=500", "daemonsets limit=500"}}},
		{name: "another error", nodes: fail(apierrors.NewBadRequest("odd")),
			want: listed{NodesErr: "other: listing nodes: odd", DaemonSets: all.DaemonSets, Requests: []string{"nodes limit=500", "daemonsets limit=500"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			client := fake.NewClientset(objects()...)
			opts := Options{ConnectTimeout: 5 * time.Second}
			if tc.informers {
				var o []clusterinformers.Option
				if tc.withoutDaemonSets {
					o = append(o, clusterinformers.WithoutDaemonSets())
				}
				f := informers.NewSharedInformerFactory(client, 0)
				opts.Informers = clusterinformers.FromFactory(f, o...)
				fctx, cancel := context.WithCancel(ctx)
				f.Start(fctx.Done())
				f.WaitForCacheSync(fctx.Done())
				t.Cleanup(func() {
					cancel()
					f.Shutdown()
				})
			}
			// Only the read-only Drainer's own lists count, not the informers'.
			var got listed
			record := func(next k8stesting.ReactionFunc) k8stesting.ReactionFunc {
				return func(a k8stesting.Action) (bool, runtime.Object, error) {
					o := a.(k8stesting.ListActionImpl).ListOptions
					if o.Limit == 0 {
						return false, nil, nil // an informer's list
					}
					r := a.GetResource().Resource + " limit=" + strconv.FormatInt(o.Limit, 10)
					if o.Continue != "" {
						r += " continue=" + o.Continue
					}
					got.Requests = append(got.Requests, r)
					if next == nil {
						return false, nil, nil
					}
					return next(a)
				}
			}
			client.PrependReactor("list", "nodes", record(tc.nodes))
			client.PrependReactor("list", "daemonsets", record(tc.daemonSets))
			r, err := NewReader(client, opts)
			if err != nil {
				t.Fatal(err)
			}
			ns, err := r.Nodes(ctx)
			got.NodesErr = errorShape(err)
			for _, n := range ns {
				got.Nodes = append(got.Nodes, n.Name)
			}
			ds, err := r.DaemonSets(ctx)
			got.DaemonSetsErr = errorShape(err)
			for _, d := range ds {
				got.DaemonSets = append(got.DaemonSets, d.Namespace+"/"+d.Name)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
