package gate

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/udrain/udrain"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
)

// TestHistoryGoneBackStopsRun: the pod cache has seen resourceVersion 100
// (its list); the history check's list answers with the server's current
// version. Older (an etcd restore) stops Run with a *HistoryChangedError
// naming both, also under leader election; newer, not decimal, or a failed
// list keep it running.
func TestHistoryGoneBackStopsRun(t *testing.T) {
	for _, tc := range []struct {
		name     string
		server   string
		fail     bool
		elected  bool
		wantStop bool
	}{
		{name: "server older", server: "50", wantStop: true},
		{name: "server older, leader elected", server: "50", elected: true, wantStop: true},
		{name: "server newer", server: "150"},
		{name: "server the same", server: "100"},
		{name: "not decimal", server: "abc"},
		{name: "list fails", server: "50", fail: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A leader without the gate: nothing is written, so no watch
			// event of the fake (whose objects carry no resourceVersion)
			// moves the cache's version off 100.
			fc := newFakeCluster(t, lwsGroup("vllm", 0, 2, map[int][]podOption{0: {noGate}})...)
			checks := make(chan struct{}, 100)
			fc.client.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				l := a.(k8stesting.ListActionImpl)
				if l.ListOptions.Limit != 1 {
					// The cache's list: the fake's pods at version 100.
					objs, err := fc.client.Tracker().List(corev1.SchemeGroupVersion.WithResource("pods"), corev1.SchemeGroupVersion.WithKind("Pod"), l.GetNamespace())
					if err != nil {
						return true, nil, err
					}
					list := objs.(*corev1.PodList)
					list.ResourceVersion = "100"
					return true, list, nil
				}
				select {
				case checks <- struct{}{}:
				default:
				}
				if tc.fail {
					return true, nil, errors.New("the server is not answering")
				}
				return true, &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: tc.server}}, nil
			})
			opts := Options{HistoryCheck: 5 * time.Millisecond}
			if tc.elected {
				opts.LeaderElection = &LeaderElection{Namespace: "kube-system", Identity: "a", LeaseDuration: time.Second, RenewDeadline: 500 * time.Millisecond, RetryPeriod: 100 * time.Millisecond}
			}
			c, err := New(fc.client, opts)
			if err != nil {
				t.Fatal(err)
			}
			_, ctx := ktesting.NewTestContext(t)
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- c.Run(ctx) }()
			if !tc.wantStop {
				for range 3 {
					select {
					case <-checks:
					case err := <-done:
						t.Fatalf("Run returned %v before its context ended", err)
					case <-time.After(waitTimeout):
						t.Fatal("no history check")
					}
				}
				cancel()
			}
			select {
			case err := <-done:
				var changed *udrain.HistoryChangedError
				switch {
				case tc.wantStop && (!errors.As(err, &changed) || changed.Seen != "100" || changed.Server != tc.server):
					t.Errorf("Run = %v, want a *udrain.HistoryChangedError with Seen 100 and Server %s", err, tc.server)
				case !tc.wantStop && err != nil:
					t.Errorf("Run = %v, want nil once its context ended", err)
				}
			case <-time.After(waitTimeout):
				t.Fatal("Run did not return")
			}
		})
	}
}
