package testbed

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/types"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// AuditRequest is one API request as the kube-apiserver's audit log
// recorded it. The testbed's audit policy (hack/kwok/audit-policy.yaml)
// logs the requests of ServiceAccounts only.
type AuditRequest struct {
	// AuditID identifies the request: a watch has a line when it starts
	// and another when it ends, both with its ID.
	AuditID types.UID
	// User is the authenticated user ("system:serviceaccount:NS:NAME").
	User string
	// Verb is the audit log's verb: get, list, watch, create, update,
	// patch, delete, deletecollection.
	Verb string
	// Resource is the resource as kubectl names it, with its subresource:
	// "pods", "pods/eviction", "poddisruptionbudgets.policy"; empty for
	// requests that name none (discovery).
	Resource  string
	Namespace string
	Name      string
	// RequestURI is the path and query that were requested.
	RequestURI string
	// Code is the response's status code; 0 for a watch still open when
	// the log was read.
	Code int32
	// DryRun marks a dry run: dryRun=All in the query, or, for an
	// eviction (logged with its body), in its deleteOptions.
	DryRun bool
	// Received is when the apiserver received the request.
	Received time.Time
}

// StreamingList reports whether the request is a watch that begins with
// the current state of the collection (sendInitialEvents=true): how a
// client-go informer lists when the WatchListClient feature is on, the
// default since client-go 1.35. It replaces a list.
func (r AuditRequest) StreamingList() bool {
	u, err := url.ParseRequestURI(r.RequestURI)
	return err == nil && r.Verb == "watch" && u.Query().Get("sendInitialEvents") == "true"
}

// AuditLog returns the requests of user (every user when empty) that the
// kube-apiserver's audit log holds so far, one per request, in the order
// they were first logged. Only kwok clusters made by hack/cluster.sh have
// one; other clusters return [ErrNotSupported].
func (b *Testbed) AuditLog(ctx context.Context, user string) ([]AuditRequest, error) {
	if b.kwok == nil {
		return nil, fmt.Errorf("audit log: %w", ErrNotSupported)
	}
	dir, err := b.kwok.dir(ctx)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "logs", "audit.log")
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("cluster %s has no audit log %s: it was made before hack/kwok/audit-policy.yaml existed; delete it (UDRAIN_CLUSTER=%s hack/cluster.sh down) and run again", b.opts.ClusterName, path, b.opts.ClusterName)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadAuditLog(f, user)
}

// ReadAuditLog reads an audit log (JSON lines of audit.k8s.io/v1 Events)
// and returns the requests of user (every user when empty), one per audit
// ID, in the order they were first logged, with the latest status code
// seen. A last line cut short (the apiserver is writing it) is ignored.
func ReadAuditLog(r io.Reader, user string) ([]AuditRequest, error) {
	var out []AuditRequest
	index := map[types.UID]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	line := 0
	var pending error
	for sc.Scan() {
		line++
		if pending != nil {
			return nil, pending // a bad line that was not the last
		}
		var e auditv1.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			pending = fmt.Errorf("audit log line %d: %w", line, err)
			continue
		}
		if user != "" && e.User.Username != user {
			continue
		}
		var code int32
		if e.ResponseStatus != nil && e.Stage == auditv1.StageResponseComplete {
			code = e.ResponseStatus.Code
		}
		if i, ok := index[e.AuditID]; ok {
			if code != 0 {
				out[i].Code = code
			}
			continue
		}
		req := AuditRequest{AuditID: e.AuditID, User: e.User.Username, Verb: e.Verb, RequestURI: e.RequestURI,
			Code: code, DryRun: dryRun(&e), Received: e.RequestReceivedTimestamp.Time}
		if o := e.ObjectRef; o != nil {
			req.Resource, req.Namespace, req.Name = o.Resource, o.Namespace, o.Name
			if o.APIGroup != "" && req.Resource != "" {
				req.Resource += "." + o.APIGroup
			}
			if o.Subresource != "" {
				req.Resource += "/" + o.Subresource
			}
		}
		index[e.AuditID] = len(out)
		out = append(out, req)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// dryRun reports whether e is a dry run: dryRun in the query, or in the
// deleteOptions of an eviction logged with its body.
func dryRun(e *auditv1.Event) bool {
	if u, err := url.ParseRequestURI(e.RequestURI); err == nil && u.Query().Get("dryRun") != "" {
		return true
	}
	if e.RequestObject == nil {
		return false
	}
	var eviction struct {
		DeleteOptions struct {
			DryRun []string `json:"dryRun"`
		} `json:"deleteOptions"`
	}
	return json.Unmarshal(e.RequestObject.Raw, &eviction) == nil && len(eviction.DeleteOptions.DryRun) > 0
}
