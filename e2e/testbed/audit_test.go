package testbed

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestReadAuditLog(t *testing.T) {
	const sa = "system:serviceaccount:ns:ctrl"
	// Lines as kube-apiserver v1.37 writes them at level Metadata, cut
	// to the fields read (a watch's start and end, a streaming list, an
	// eviction refused with 429, a dry-run eviction logged with its body,
	// another user's request, a line being written).
	log := strings.Join([]string{
		`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a1","stage":"ResponseComplete","requestURI":"/api/v1/nodes?limit=500","verb":"list","user":{"username":"` + sa + `"},"objectRef":{"resource":"nodes","apiVersion":"v1"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-07-01T10:00:00.000001Z"}`,
		`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a2","stage":"ResponseStarted","requestURI":"/api/v1/pods?allowWatchBookmarks=true\u0026resourceVersionMatch=NotOlderThan\u0026sendInitialEvents=true\u0026watch=true","verb":"watch","user":{"username":"` + sa + `"},"objectRef":{"resource":"pods","apiVersion":"v1"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-07-01T10:00:00.500000Z"}`,
		`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"b1","stage":"ResponseComplete","requestURI":"/api/v1/nodes","verb":"list","user":{"username":"system:serviceaccount:ns:other"},"objectRef":{"resource":"nodes","apiVersion":"v1"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-07-01T10:00:01.000000Z"}`,
		`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a3","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/ns/pods/llm-0/eviction","verb":"create","user":{"username":"` + sa + `"},"objectRef":{"resource":"pods","namespace":"ns","name":"llm-0","apiVersion":"v1","subresource":"eviction"},"responseStatus":{"code":429},"requestReceivedTimestamp":"2026-07-01T10:00:02.000000Z"}`,
		`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a4","stage":"ResponseComplete","requestURI":"/apis/policy/v1/poddisruptionbudgets?watch=true","verb":"watch","user":{"username":"` + sa + `"},"objectRef":{"resource":"poddisruptionbudgets","apiGroup":"policy","apiVersion":"v1"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-07-01T10:00:03.000000Z"}`,
		`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a5","stage":"ResponseComplete","requestURI":"/api/v1/nodes/n1?dryRun=All","verb":"patch","user":{"username":"` + sa + `"},"objectRef":{"resource":"nodes","name":"n1","apiVersion":"v1"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-07-01T10:00:04.000000Z"}`,
		`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Request","auditID":"a6","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/ns/pods/llm-1/eviction","verb":"create","user":{"username":"` + sa + `"},"objectRef":{"resource":"pods","namespace":"ns","name":"llm-1","apiVersion":"v1","subresource":"eviction"},"responseStatus":{"code":201},"requestObject":{"kind":"Eviction","apiVersion":"policy/v1","metadata":{"name":"llm-1","namespace":"ns"},"deleteOptions":{"preconditions":{"uid":"u1"},"dryRun":["All"]}},"requestReceivedTimestamp":"2026-07-01T10:00:05.000000Z"}`,
		`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a2","stage":"ResponseComplete","requestURI":"/api/v1/pods?allowWatchBookmarks=true\u0026resourceVersionMatch=NotOlderThan\u0026sendInitialEvents=true\u0026watch=true","verb":"watch","user":{"username":"` + sa + `"},"objectRef":{"resource":"pods","apiVersion":"v1"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-07-01T10:00:00.500000Z"}`,
		`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Meta`,
	}, "\n")
	got, err := ReadAuditLog(strings.NewReader(log), sa)
	if err != nil {
		t.Fatal(err)
	}
	at := func(s string) time.Time {
		tm, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	want := []AuditRequest{
		{AuditID: "a1", User: sa, Verb: "list", Resource: "nodes", RequestURI: "/api/v1/nodes?limit=500", Code: 200, Received: at("2026-07-01T10:00:00.000001Z")},
		{AuditID: "a2", User: sa, Verb: "watch", Resource: "pods", RequestURI: "/api/v1/pods?allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&watch=true",
			Code: 200, Received: at("2026-07-01T10:00:00.5Z")},
		{AuditID: "a3", User: sa, Verb: "create", Resource: "pods/eviction", Namespace: "ns", Name: "llm-0", RequestURI: "/api/v1/namespaces/ns/pods/llm-0/eviction",
			Code: 429, Received: at("2026-07-01T10:00:02Z")},
		{AuditID: "a4", User: sa, Verb: "watch", Resource: "poddisruptionbudgets.policy", RequestURI: "/apis/policy/v1/poddisruptionbudgets?watch=true",
			Code: 200, Received: at("2026-07-01T10:00:03Z")},
		{AuditID: "a5", User: sa, Verb: "patch", Resource: "nodes", Name: "n1", RequestURI: "/api/v1/nodes/n1?dryRun=All", Code: 200, DryRun: true,
			Received: at("2026-07-01T10:00:04Z")},
		{AuditID: "a6", User: sa, Verb: "create", Resource: "pods/eviction", Namespace: "ns", Name: "llm-1", RequestURI: "/api/v1/namespaces/ns/pods/llm-1/eviction",
			Code: 201, DryRun: true, Received: at("2026-07-01T10:00:05Z")},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	var streaming []string
	for _, r := range got {
		if r.StreamingList() {
			streaming = append(streaming, string(r.AuditID))
		}
	}
	if diff := cmp.Diff([]string{"a2"}, streaming); diff != "" {
		t.Errorf("StreamingList (-want +got):\n%s", diff)
	}

	all, err := ReadAuditLog(strings.NewReader(log), "")
	if err != nil || len(all) != 7 {
		t.Errorf("every user: %d requests, %v; want 7", len(all), err)
	}
	if _, err := ReadAuditLog(strings.NewReader("{bad\n"+log), sa); err == nil {
		t.Error("a bad line before the last: no error")
	}
}
