package eviction

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/udrain/udrain/topology"
)

// The Eviction API evictor marks a dry run where admission webhooks see
// it (the request's dryRun parameter) and where the registry reads it (the
// Eviction's DeleteOptions); a real eviction carries neither.
func TestEvictionAPIDryRunReachesAdmission(t *testing.T) {
	type request struct {
		Path, DryRunParam string
		DryRunBody        []string
	}
	var got []request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev policyv1.Eviction
		if err := json.NewDecoder(r.Body).Decode(&ev); err != nil {
			t.Errorf("%s: %v", r.URL, err)
		}
		req := request{Path: r.URL.Path, DryRunParam: r.URL.Query().Get("dryRun")}
		if ev.DeleteOptions != nil {
			req.DryRunBody = ev.DeleteOptions.DryRun
		}
		got = append(got, req)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Success"}`))
	}))
	defer srv.Close()
	client, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	pod := PlannedPod{PodRef: topology.PodRef{Namespace: "inference", Name: "llm-0", UID: "u"}}
	evict := EvictionAPI(client)
	if err := evict(context.Background(), pod, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatal(err)
	}
	if err := evict(context.Background(), pod, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	path := "/api/v1/namespaces/inference/pods/llm-0/eviction"
	want := []request{{path, "All", []string{"All"}}, {path, "", nil}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}
