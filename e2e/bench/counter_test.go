package bench

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

func TestClassifyRequest(t *testing.T) {
	for _, tc := range []struct {
		method, path, watch string
		want                Request
	}{
		{"GET", "/api", "", Request{Verb: "discovery"}},
		{"GET", "/api/v1", "", Request{Verb: "discovery"}},
		{"GET", "/apis/policy/v1", "", Request{Verb: "discovery"}},
		{"GET", "/version", "", Request{Verb: "discovery"}},
		{"GET", "/api/v1/pods", "", Request{Verb: "list", Resource: "pods"}},
		{"GET", "/api/v1/pods", "true", Request{Verb: "watch", Resource: "pods"}},
		{"GET", "/api/v1/namespaces/a/pods", "", Request{Verb: "list", Resource: "pods"}},
		{"GET", "/api/v1/namespaces/a/pods/p", "", Request{Verb: "get", Resource: "pods"}},
		{"GET", "/api/v1/watch/namespaces/a/pods", "", Request{Verb: "watch", Resource: "pods"}},
		{"POST", "/api/v1/namespaces/a/pods/p/eviction", "", Request{Verb: "create", Resource: "pods/eviction"}},
		{"PATCH", "/api/v1/namespaces/a/pods/p/status", "", Request{Verb: "patch", Resource: "pods/status"}},
		{"PATCH", "/api/v1/nodes/n1", "", Request{Verb: "patch", Resource: "nodes"}},
		{"GET", "/api/v1/namespaces", "", Request{Verb: "list", Resource: "namespaces"}},
		{"GET", "/api/v1/namespaces/a", "", Request{Verb: "get", Resource: "namespaces"}},
		{"PUT", "/api/v1/namespaces/a/finalize", "", Request{Verb: "update", Resource: "namespaces/finalize"}},
		{"DELETE", "/api/v1/nodes", "", Request{Verb: "deletecollection", Resource: "nodes"}},
		{"DELETE", "/api/v1/nodes/n1", "", Request{Verb: "delete", Resource: "nodes"}},
		{"GET", "/apis/policy/v1/poddisruptionbudgets", "1", Request{Verb: "watch", Resource: "poddisruptionbudgets.policy"}},
		{"GET", "/apis/scheduling.k8s.io/v1beta1/podgroups", "", Request{Verb: "list", Resource: "podgroups.scheduling.k8s.io"}},
		{"PUT", "/apis/apps/v1/namespaces/a/statefulsets/s/scale", "", Request{Verb: "update", Resource: "statefulsets.apps/scale"}},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ClassifyRequest(tc.method, tc.path, tc.watch)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// A client-go client sees its requests counted by kind, with the 429s.
func TestRequestCounter(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(r.URL.Path, "/eviction") && strings.Contains(r.URL.Path, "blocked"):
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"TooManyRequests","code":429}`))
		case strings.HasSuffix(r.URL.Path, "/eviction"):
			// The body reaches the server whole after the counter read it.
			var ev policyv1.Eviction
			if err := json.NewDecoder(r.Body).Decode(&ev); err != nil || ev.Name == "" {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Success"}`))
		case r.Method == http.MethodPatch:
			_, _ = w.Write([]byte(`{"kind":"Node","apiVersion":"v1","metadata":{"name":"n1"}}`))
		case strings.HasSuffix(r.URL.Path, "/pods"):
			_, _ = w.Write([]byte(`{"kind":"PodList","apiVersion":"v1","items":[]}`))
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))
		}
	}))
	defer srv.Close()
	cfg := &rest.Config{Host: srv.URL}
	var c RequestCounter
	c.Wrap(cfg)
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	evict := func(name string) error {
		return client.PolicyV1().Evictions("a").Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name}})
	}
	if err := evict("ok"); err != nil {
		t.Fatal(err)
	}
	dry := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "ok"}, DeleteOptions: &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}}
	if err := client.PolicyV1().Evictions("a").Evict(ctx, dry); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Nodes().Patch(ctx, "n1", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := evict("blocked"); err == nil {
			t.Fatal("an eviction answered 429 succeeded")
		}
	}
	if _, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Nodes().Get(ctx, "gone", metav1.GetOptions{}); err == nil {
		t.Fatal("a 404 succeeded")
	}
	got := c.Snapshot()
	for i := range got {
		if got[i].ResponseBytes == 0 {
			t.Errorf("%s: no response bytes counted", got[i].Request)
		}
		got[i].ResponseBytes = 0
	}
	want := Requests{
		{Request: Request{Verb: "create", Resource: "pods/eviction"}, Count: 3, TooMany: 2},
		{Request: Request{Verb: "create", Resource: "pods/eviction", DryRun: true}, Count: 1},
		{Request: Request{Verb: "get", Resource: "nodes"}, Count: 1, Errors: 1},
		{Request: Request{Verb: "list", Resource: "pods"}, Count: 1},
		{Request: Request{Verb: "patch", Resource: "nodes", DryRun: true}, Count: 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tally (-want +got):\n%s", diff)
	}
	if got.Total() != 7 || got.TooMany() != 2 || got.Of("create", "pods/eviction") != 4 || got.Succeeded("create", "pods/eviction") != 1 || got.Of("list", "") != 1 {
		t.Errorf("Total %d, TooMany %d, evictions %d (%d succeeded, not dry runs), lists %d; want 7, 2, 4 (1), 1",
			got.Total(), got.TooMany(), got.Of("create", "pods/eviction"), got.Succeeded("create", "pods/eviction"), got.Of("list", ""))
	}
}
