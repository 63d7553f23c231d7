package readiness

import (
	"bytes"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// readyzPath is the path the handler serves; the name before the first
// slash is the word of its last line ("readyz check passed").
const (
	readyzPath = "/readyz"
	readyzName = "readyz"
)

// Handler returns an HTTP handler that serves the group's health in the
// format of the kube-apiserver's /readyz (k8s.io/apiserver/pkg/server/healthz),
// byte for byte (with [Options.ExposeMemberErrors]; without, a failing
// member's own path shows the class of the failure, not the error):
//
//   - GET /readyz: 200 and "ok" if every member is healthy, else 500 and one
//     line per member ("[+]<member> ok" or "[-]<member> failed: reason
//     withheld") followed by "readyz check failed".
//   - ?verbose: the member lines also on success, then "readyz check passed".
//   - ?exclude=<member> (repeatable): the member does not count and shows as
//     "[+]<member> excluded: ok"; names that match no member get a "warn:"
//     line.
//   - GET /readyz/<member>: 200 and "ok", or 500 and "internal server error:
//     <reason>". Only this path shows why a member failed: by default the
//     class of the failure ([Reason], e.g. "connection refused" or "HTTP
//     status 503"), with [Options.ExposeMemberErrors] the whole error (URLs
//     redacted).
//
// Every other path gets 404. Methods other than GET and HEAD get 405 without
// any check, and a request that carries a body is answered without reading
// it, on a connection that is then closed: a probe sends none. The handler answers from [Checker.Check], so a
// burst of requests causes one fan-out. To serve it under another prefix,
// strip the prefix: mux.Handle("/group/", http.StripPrefix("/group", h)).
//
// Wire it to a readinessProbe only, never to a livenessProbe: a livenessProbe
// over group health would restart a healthy leader whenever a worker fails.
func (c *Checker) Handler() http.Handler {
	return http.HandlerFunc(c.serveHTTP)
}

func (c *Checker) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength != 0 || r.Method != http.MethodGet && r.Method != http.MethodHead {
		// Do not wait for a body nobody needs: a slow one would hold the
		// connection (and a graceful shutdown) for as long as it trickles.
		w.Header().Set("Connection", "close")
		_ = http.NewResponseController(w).SetReadDeadline(time.Now())
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if r.URL.Path == readyzPath {
		writeGroup(w, r, c.Check(r.Context()))
		return
	}
	name, ok := strings.CutPrefix(r.URL.Path, readyzPath+"/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	if _, known := c.byName[name]; !known {
		http.NotFound(w, r)
		return
	}
	m, _ := c.Check(r.Context()).Member(name)
	writeMember(w, m, c.opts.ExposeMemberErrors)
}

// writeGroup writes the answer for the whole group: the rules and bytes of
// healthz.handleRootHealth in k8s.io/apiserver v0.37.
func writeGroup(w http.ResponseWriter, r *http.Request, report Report) {
	query := r.URL.Query()
	excluded := make(map[string]bool)
	for _, name := range query["exclude"] {
		excluded[name] = true
	}
	var out bytes.Buffer
	failed := false
	for _, m := range report.Members {
		switch {
		case excluded[m.Name]:
			delete(excluded, m.Name)
			fmt.Fprintf(&out, "[+]%s excluded: ok\n", m.Name)
		case m.Err != nil:
			// The reason stays out of this answer: only /readyz/<member> shows it.
			failed = true
			fmt.Fprintf(&out, "[-]%s failed: reason withheld\n", m.Name)
		default:
			fmt.Fprintf(&out, "[+]%s ok\n", m.Name)
		}
	}
	if len(excluded) > 0 {
		unknown := make([]string, 0, len(excluded))
		for name := range excluded {
			unknown = append(unknown, name)
		}
		slices.Sort(unknown)
		fmt.Fprintf(&out, "warn: some health checks cannot be excluded: no matches for %s\n", formatQuoted(unknown))
	}
	if failed {
		http.Error(w, fmt.Sprintf("%s%s check failed", out.String(), readyzName), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if _, verbose := query["verbose"]; !verbose {
		fmt.Fprint(w, "ok")
		return
	}
	out.WriteTo(w)
	fmt.Fprintf(w, "%s check passed\n", readyzName)
}

// writeMember writes the answer for one member: the bytes of
// healthz.adaptCheckToHandler in k8s.io/apiserver v0.37.
func writeMember(w http.ResponseWriter, m MemberResult, expose bool) {
	if m.Err != nil {
		http.Error(w, "internal server error: "+describe(m.Err, expose), http.StatusInternalServerError)
		return
	}
	// The apiserver leaves this to net/http's sniffing, which picks the same.
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprint(w, "ok")
}

// formatQuoted quotes each name as Go does and joins them with commas.
func formatQuoted(names []string) string {
	quoted := make([]string, len(names))
	for i, name := range names {
		quoted[i] = fmt.Sprintf("%q", name)
	}
	return strings.Join(quoted, ",")
}
