package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"sort"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/udrain/udrain/e2e/testbed"
)

// AuditTolerance is how far the harness's own request count may be from
// the API server's audit log (the reference) before the figure is flagged:
// 5% of the audit log's count (issue 15).
const AuditTolerance = 0.05

// AuditCheck compares a drainer's requests as the harness counted them
// with the API server's audit log of the drainer's ServiceAccount.
type AuditCheck struct {
	// User is the ServiceAccount the drainer authenticated as.
	User string `json:"user"`
	// Audit is the audit log's requests of User, by kind.
	Audit Requests `json:"audit"`
	// AuditTotal and CounterTotal are the requests each saw.
	AuditTotal   int `json:"auditTotal"`
	CounterTotal int `json:"counterTotal"`
	// Deviation is |CounterTotal − AuditTotal| / AuditTotal.
	Deviation float64 `json:"deviation"`
	// Agrees says Deviation is within AuditTolerance.
	Agrees bool `json:"agrees"`
	// Differences lists the kinds of request whose counts differ, as
	// "kind: counter N, audit M".
	Differences []string `json:"differences,omitempty"`
	// AuditEvictedPods is the audit log's count of accepted evictions,
	// dry runs apart.
	AuditEvictedPods int `json:"auditEvictedPods"`
	// Err says why the audit log could not be read, if it could not.
	Err string `json:"err,omitempty"`
}

// auditMethod is the HTTP method of an audit log verb.
var auditMethod = map[string]string{
	"get": http.MethodGet, "list": http.MethodGet, "watch": http.MethodGet,
	"create": http.MethodPost, "update": http.MethodPut, "patch": http.MethodPatch,
	"delete": http.MethodDelete, "deletecollection": http.MethodDelete,
}

// ClassifyAudit names an audit log request the way [ClassifyRequest] names
// the request the client sent, so that the two counts compare kind by
// kind.
func ClassifyAudit(r testbed.AuditRequest) Request {
	u, err := url.ParseRequestURI(r.RequestURI)
	if err != nil {
		return Request{Verb: r.Verb, Resource: r.Resource, DryRun: r.DryRun}
	}
	method, ok := auditMethod[r.Verb]
	if !ok {
		method = r.Verb
	}
	q := u.Query()
	watch := q.Get("watch")
	if r.Verb == "watch" {
		watch = "true"
	}
	out := ClassifyRequest(method, u.Path, watch)
	out.DryRun = r.DryRun
	return out
}

// TallyAudit counts audit log requests by kind, with their 429s and other
// errors (a watch still open has no code yet and counts as neither).
func TallyAudit(reqs []testbed.AuditRequest) Requests {
	counts := map[Request]*Tally{}
	for _, r := range reqs {
		k := ClassifyAudit(r)
		t := counts[k]
		if t == nil {
			t = &Tally{Request: k}
			counts[k] = t
		}
		t.Count++
		switch {
		case r.Code == http.StatusTooManyRequests:
			t.TooMany++
		case r.Code >= 400:
			t.Errors++
		}
	}
	out := make(Requests, 0, len(counts))
	for _, t := range counts {
		out = append(out, *t)
	}
	sortRequests(out)
	return out
}

func sortRequests(out Requests) {
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Request.String() < out[j].Request.String()
	})
}

// CompareAudit checks the harness's count against the audit log's.
func CompareAudit(user string, counter, audit Requests) AuditCheck {
	c := AuditCheck{User: user, Audit: audit, AuditTotal: audit.Total(), CounterTotal: counter.Total(),
		AuditEvictedPods: audit.Succeeded("create", "pods/eviction")}
	switch {
	case c.AuditTotal > 0:
		c.Deviation = math.Abs(float64(c.CounterTotal-c.AuditTotal)) / float64(c.AuditTotal)
	case c.CounterTotal > 0:
		c.Deviation = math.Inf(1)
	}
	c.Agrees = c.Deviation <= AuditTolerance
	kinds := map[Request][2]int{}
	for _, t := range counter {
		v := kinds[t.Request]
		v[0] += t.Count
		kinds[t.Request] = v
	}
	for _, t := range audit {
		v := kinds[t.Request]
		v[1] += t.Count
		kinds[t.Request] = v
	}
	for k, v := range kinds {
		if v[0] != v[1] {
			c.Differences = append(c.Differences, fmt.Sprintf("%s: counter %d, audit %d", k, v[0], v[1]))
		}
	}
	sort.Strings(c.Differences)
	return c
}

// MarshalJSON keeps an infinite deviation (the audit log saw nothing)
// representable.
func (c AuditCheck) MarshalJSON() ([]byte, error) {
	type plain AuditCheck
	p := plain(c)
	if math.IsInf(p.Deviation, 0) || math.IsNaN(p.Deviation) {
		p.Deviation = -1
	}
	return json.Marshal(p)
}

// Identities are ServiceAccounts the drainers authenticate as, so that the
// API server's audit log (which logs ServiceAccounts only,
// hack/kwok/audit-policy.yaml) counts each drainer's requests apart from
// the harness's own. Every ServiceAccount of Namespace is cluster-admin
// through one ClusterRoleBinding to the namespace's group, made and
// authorized once, so a new identity is usable at once.
type Identities struct {
	Admin     kubernetes.Interface
	Config    *rest.Config
	Namespace string
}

// Setup makes the namespace and the binding, and waits until the
// authorizer grants the namespace's ServiceAccounts everything.
func (ids *Identities) Setup(ctx context.Context) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ids.Namespace, Labels: map[string]string{"udrain.dev/bench": "true"}}}
	if _, err := ids.Admin.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", ids.Namespace, err)
	}
	group := "system:serviceaccounts:" + ids.Namespace
	b := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: ids.Namespace + "-cluster-admin"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: group}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"}}
	if _, err := ids.Admin.RbacV1().ClusterRoleBindings().Create(ctx, b, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create ClusterRoleBinding %s: %w", b.Name, err)
	}
	// Asked as the admin, for a ServiceAccount that does not exist yet:
	// the audit log sees nothing of it.
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               "system:serviceaccount:" + ids.Namespace + ":probe",
		Groups:             []string{"system:serviceaccounts", group, "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "create", Resource: "pods", Subresource: "eviction"},
	}}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		r, err := ids.Admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		return err == nil && r.Status.Allowed, nil
	})
}

// New makes ServiceAccount name and returns a config that authenticates
// as it (with a token only, as a pod would) and its user name.
func (ids *Identities) New(ctx context.Context, name string) (*rest.Config, string, error) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ids.Namespace}}
	if _, err := ids.Admin.CoreV1().ServiceAccounts(ids.Namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, "", fmt.Errorf("create ServiceAccount %s/%s: %w", ids.Namespace, name, err)
	}
	tr, err := ids.Admin.CoreV1().ServiceAccounts(ids.Namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(4 * 3600))},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, "", fmt.Errorf("TokenRequest for %s/%s: %w", ids.Namespace, name, err)
	}
	cfg := rest.AnonymousClientConfig(ids.Config)
	cfg.BearerToken = tr.Status.Token
	return cfg, "system:serviceaccount:" + ids.Namespace + ":" + name, nil
}

// brief says how the count compares with the audit log, for a log line.
func (c *AuditCheck) brief() string {
	switch {
	case c == nil:
		return "no audit log"
	case c.Err != "":
		return "unreadable: " + c.Err
	case c.Agrees:
		return fmt.Sprintf("%d, agrees", c.AuditTotal)
	default:
		return fmt.Sprintf("%d, DISAGREES by %.1f%%", c.AuditTotal, 100*c.Deviation)
	}
}

// EvictionsIn counts the evictions the API server accepted (dry runs
// apart) of pods in namespace, in audit log requests.
func EvictionsIn(reqs []testbed.AuditRequest, namespace string) int {
	n := 0
	for _, r := range reqs {
		if acceptedEviction(r, namespace) {
			n++
		}
	}
	return n
}

// acceptedEviction says r is an eviction of a pod in namespace that the
// API server accepted, not a dry run.
func acceptedEviction(r testbed.AuditRequest, namespace string) bool {
	return r.Verb == "create" && r.Resource == "pods/eviction" && r.Namespace == namespace && !r.DryRun && r.Code >= 200 && r.Code < 300
}

// EvictionTimes are the evictions the API server accepted (dry runs
// apart) of pods in namespace, in audit log requests: when it received
// each, by pod name.
func EvictionTimes(reqs []testbed.AuditRequest, namespace string) map[string][]time.Time {
	out := map[string][]time.Time{}
	for _, r := range reqs {
		if acceptedEviction(r, namespace) {
			out[r.Name] = append(out[r.Name], r.Received)
		}
	}
	return out
}
