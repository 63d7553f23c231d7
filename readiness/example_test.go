package readiness_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"

	"github.com/udrain/udrain/readiness"
)

// A LeaderWorkerSet leader's group readiness endpoint. In the leader pod,
// pass os.LookupEnv and serve with checker.NewServer (which bounds what clients
// can hold), or mount the handler on a mux of your own; the leader's
// readinessProbe then GETs :8081/readyz. Here the environment is spelled out
// so that the example runs anywhere.
func ExampleMembersFromLWSEnv() {
	lookup := env(map[string]string{"LWS_LEADER_ADDRESS": "llama-0.llama.prod", "LWS_GROUP_SIZE": "3", "LWS_WORKER_INDEX": "0"})

	members, err := readiness.MembersFromLWSEnv(lookup, readiness.LWSOptions{Port: 8000, Path: "/health"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	checker, err := readiness.NewChecker(members, readiness.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	mux := http.NewServeMux()
	mux.Handle("/readyz", checker.Handler())
	mux.Handle("/readyz/", checker.Handler())

	for _, m := range members {
		fmt.Println(m.Name)
	}
	// Output:
	// llama-0
	// llama-0-1
	// llama-0-2
}

// Run outside a LeaderWorkerSet, MembersFromLWSEnv says which variable is
// missing and what to do.
func ExampleMembersFromLWSEnv_notInLWS() {
	_, err := readiness.MembersFromLWSEnv(env(nil), readiness.LWSOptions{Port: 8000})
	var envErr *readiness.EnvError
	if errors.As(err, &envErr) {
		fmt.Println(envErr.Name, "-", envErr.Problem)
	}
	// Output:
	// LWS_LEADER_ADDRESS - not set; LeaderWorkerSet sets it in every pod of a group: run this in a LeaderWorkerSet pod, or list the members explicitly
}

// A custom member list: an HTTP member, and a check of your own that says
// one worker is gone. The group endpoint withholds reasons; the member's own
// path shows the class of the failure (the error itself, which can name
// addresses, only with Options.ExposeMemberErrors).
func ExampleNewChecker() {
	worker := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer worker.Close()

	checker, err := readiness.NewChecker([]readiness.Member{
		{Name: "worker-1", Check: readiness.HTTPCheck(worker.URL + "/health")},
		{Name: "worker-2", Check: func(ctx context.Context) error {
			return readiness.Gone(errors.New("pod worker-2 was evicted"))
		}},
	}, readiness.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := httptest.NewServer(checker.Handler())
	defer srv.Close()

	for _, path := range []string{"/readyz", "/readyz?exclude=worker-2", "/readyz/worker-2"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			fmt.Println(err)
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("GET %s: %d\n%s\n", path, resp.StatusCode, body)
	}
	// Output:
	// GET /readyz: 500
	// [+]worker-1 ok
	// [-]worker-2 failed: reason withheld
	// readyz check failed
	//
	// GET /readyz?exclude=worker-2: 200
	// ok
	// GET /readyz/worker-2: 500
	// internal server error: gone
}

// Serving the endpoint under another prefix, next to the leader's own
// liveness endpoint, which must stay independent of the group.
func ExampleChecker_Handler() {
	checker, err := readiness.NewChecker([]readiness.Member{
		{Name: "worker-1", Check: func(context.Context) error { return nil }},
	}, readiness.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	mux := http.NewServeMux()
	mux.Handle("/group/", http.StripPrefix("/group", checker.Handler()))
	mux.HandleFunc("/livez", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "ok") })

	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/group/readyz?verbose", nil))
	fmt.Print(rec.Body.String())
	// Output:
	// [+]worker-1 ok
	// readyz check passed
}

// ClassOf and MemberState are the rules behind the verdicts, usable on
// their own (the readiness-gate controller applies them to member pods).
func ExampleMemberState_Verdict() {
	var s readiness.MemberState
	fmt.Println(s.Verdict(3))
	for _, err := range []error{errors.New("503"), errors.New("503"), errors.New("503")} {
		s = s.Observe(err)
		fmt.Println(s.Verdict(3))
	}
	s = s.Observe(readiness.Gone(errors.New("pod evicted")))
	fmt.Println(readiness.ClassOf(s.LastErr), "-", s.Verdict(3))
	// Output:
	// not checked yet
	// <nil>
	// <nil>
	// 3 consecutive failures: 503
	// hard failure - pod evicted
}

// Serving the endpoint in a sidecar: the Server bounds what clients can hold and
// shuts down in time when the context ends (on SIGTERM, say).
func ExampleServer_Serve() {
	checker, err := readiness.NewChecker([]readiness.Member{
		{Name: "worker-1", Check: func(context.Context) error { return nil }},
	}, readiness.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan error, 1)
	srv, err := checker.NewServer(readiness.ServeOptions{MaxConnections: 16})
	if err != nil {
		fmt.Println(err)
		return
	}
	go func() { done <- srv.Serve(ctx, ln) }()

	resp, err := http.Post("http://"+ln.Addr().String()+"/readyz", "text/plain", strings.NewReader("x"))
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println("POST /readyz:", resp.Status)
	stop()
	fmt.Println("Serve returned", <-done)
	// Output:
	// POST /readyz: 405 Method Not Allowed
	// Serve returned <nil>
}
