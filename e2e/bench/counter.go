package bench

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"k8s.io/client-go/rest"
)

// Request names one kind of API request: a verb as the API server's audit
// log names it (get, list, watch, create, patch, update, delete,
// deletecollection; "discovery" for /api, /apis and /version) and a
// resource as kubectl names it: "pods", "pods/eviction",
// "poddisruptionbudgets.policy".
type Request struct {
	Verb     string `json:"verb"`
	Resource string `json:"resource"`
	// DryRun marks a dry run (dryRun in the query, or, for an eviction, in
	// the body's deleteOptions): the API server checks and answers it but
	// changes nothing, so a dry-run eviction evicts no pod.
	DryRun bool `json:"dryRun,omitempty"`
}

func (r Request) String() string {
	s := r.Verb
	if r.Resource != "" {
		s += " " + r.Resource
	}
	if r.DryRun {
		s += " (dry run)"
	}
	return s
}

// Tally is what one kind of request cost.
type Tally struct {
	Request
	// Count is the number of HTTP requests sent.
	Count int `json:"count"`
	// TooMany counts answers 429 Too Many Requests (a PDB refusing an
	// eviction, or API priority and fairness).
	TooMany int `json:"tooMany,omitempty"`
	// Errors counts other answers of 400 and above, and transport errors.
	Errors int `json:"errors,omitempty"`
	// ResponseBytes is the size of the bodies read (for a watch, what was
	// streamed until the tally was taken).
	ResponseBytes int64 `json:"responseBytes"`
}

// Requests is a tally of API requests, sorted by count (largest first).
type Requests []Tally

// Total is the number of requests of every kind.
func (rs Requests) Total() int {
	n := 0
	for _, t := range rs {
		n += t.Count
	}
	return n
}

// TooMany is the number of 429 answers.
func (rs Requests) TooMany() int {
	n := 0
	for _, t := range rs {
		n += t.TooMany
	}
	return n
}

// Bytes is the size of every response body read.
func (rs Requests) Bytes() int64 {
	var n int64
	for _, t := range rs {
		n += t.ResponseBytes
	}
	return n
}

// WatchBytes is the size of the watch response bodies read: what the
// watches streamed.
func (rs Requests) WatchBytes() int64 {
	var n int64
	for _, t := range rs {
		if t.Verb == "watch" {
			n += t.ResponseBytes
		}
	}
	return n
}

// Of returns the number of requests with this verb (and, unless empty,
// resource), dry runs included.
func (rs Requests) Of(verb, resource string) int {
	n := 0
	for _, t := range rs {
		if t.Verb == verb && (resource == "" || t.Resource == resource) {
			n += t.Count
		}
	}
	return n
}

// Succeeded returns the number of requests with this verb and resource,
// dry runs apart, that the API server accepted (neither 429 nor another
// error).
func (rs Requests) Succeeded(verb, resource string) int {
	n := 0
	for _, t := range rs {
		if t.Verb == verb && t.Resource == resource && !t.DryRun {
			n += t.Count - t.TooMany - t.Errors
		}
	}
	return n
}

// RequestCounter counts every HTTP request a client sends, by verb and
// resource, with its 429 answers and response bytes. Install it with
// [RequestCounter.Wrap] on a rest.Config before the client is made; it is
// safe for concurrent use. The zero value is ready to use.
type RequestCounter struct {
	mu     sync.Mutex
	counts map[Request]*counted
}

type counted struct {
	count, tooMany, errors int
	bytes                  atomic.Int64
}

// Wrap installs the counter on cfg (rest.Config.Wrap), under every wrapper
// already there, so it sees each request that leaves the client, retries
// included.
func (c *RequestCounter) Wrap(cfg *rest.Config) {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return &countingTransport{next: rt, c: c}
	})
}

// Snapshot returns the tally so far.
func (c *RequestCounter) Snapshot() Requests {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(Requests, 0, len(c.counts))
	for r, n := range c.counts {
		out = append(out, Tally{Request: r, Count: n.count, TooMany: n.tooMany, Errors: n.errors, ResponseBytes: n.bytes.Load()})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Request.String() < out[j].Request.String()
	})
	return out
}

func (c *RequestCounter) entry(r Request) *counted {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.counts == nil {
		c.counts = map[Request]*counted{}
	}
	e := c.counts[r]
	if e == nil {
		e = &counted{}
		c.counts[r] = e
	}
	return e
}

type countingTransport struct {
	next http.RoundTripper
	c    *RequestCounter
}

func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := ClassifyRequest(req.Method, req.URL.Path, req.URL.Query().Get("watch"))
	r.DryRun = req.URL.Query().Get("dryRun") != "" || (r.Verb == "create" && strings.HasSuffix(r.Resource, "/eviction") && evictionDryRun(req))
	e := t.c.entry(r)
	resp, err := t.next.RoundTrip(req)
	t.c.mu.Lock()
	e.count++
	switch {
	case err != nil:
		e.errors++
	case resp.StatusCode == http.StatusTooManyRequests:
		e.tooMany++
	case resp.StatusCode >= 400:
		e.errors++
	}
	t.c.mu.Unlock()
	if err == nil && resp.Body != nil {
		resp.Body = &countingBody{ReadCloser: resp.Body, n: &e.bytes}
	}
	return resp, err
}

// evictionDryRun reports whether an eviction request's body asks for a dry
// run (deleteOptions.dryRun), leaving the body readable for the next
// transport.
func evictionDryRun(req *http.Request) bool {
	if req.Body == nil || req.Body == http.NoBody {
		return false
	}
	body, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	req.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return false
	}
	var ev struct {
		DeleteOptions *struct {
			DryRun []string `json:"dryRun"`
		} `json:"deleteOptions"`
	}
	return json.Unmarshal(body, &ev) == nil && ev.DeleteOptions != nil && len(ev.DeleteOptions.DryRun) > 0
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// ClassifyRequest names the verb and resource of an API request from its
// method, URL path and watch query parameter.
func ClassifyRequest(method, path, watchParam string) Request {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	var group string
	switch {
	case len(segs) >= 2 && segs[0] == "api":
		segs = segs[2:] // api/v1
	case len(segs) >= 3 && segs[0] == "apis":
		group = segs[1]
		segs = segs[3:] // apis/group/version
	default:
		return Request{Verb: "discovery"}
	}
	watch := watchParam == "true" || watchParam == "1"
	if len(segs) > 0 && segs[0] == "watch" { // the deprecated /watch/ paths
		watch = true
		segs = segs[1:]
	}
	// namespaces/NS/RESOURCE...; but namespaces/NS/status and /finalize
	// are subresources of the namespace itself.
	if len(segs) >= 3 && segs[0] == "namespaces" && !(len(segs) == 3 && (segs[2] == "status" || segs[2] == "finalize")) {
		segs = segs[2:]
	}
	if len(segs) == 0 || segs[0] == "" {
		return Request{Verb: "discovery"}
	}
	resource := segs[0]
	if group != "" {
		resource += "." + group
	}
	named := len(segs) >= 2
	if len(segs) >= 3 {
		resource += "/" + segs[2]
	}
	var verb string
	switch method {
	case http.MethodGet:
		switch {
		case watch:
			verb = "watch"
		case named:
			verb = "get"
		default:
			verb = "list"
		}
	case http.MethodPost:
		verb = "create"
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		verb = "patch"
	case http.MethodDelete:
		verb = "delete"
		if !named {
			verb = "deletecollection"
		}
	default:
		verb = strings.ToLower(method)
	}
	return Request{Verb: verb, Resource: resource}
}
