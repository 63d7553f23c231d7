package bootstrap_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/udrain/udrain/bootstrap"
)

// initialisingServer answers 503 to its first n requests, then "ok".
func initialisingServer(n int32) *httptest.Server {
	var requests atomic.Int32
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if requests.Add(1) <= n {
			http.Error(w, "initialising", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	}))
}

// A worker waits for its server before registering. In a cluster the
// target would be the server's Service, e.g.
// http://gpustack-server.gpustack.svc:80/healthz.
func ExampleWaitForServer() {
	srv := initialisingServer(2)
	defer srv.Close()

	// Progress is logged through the caller's logger.
	ctx := klog.NewContext(context.Background(), klog.Background())
	res, err := bootstrap.WaitForServer(ctx, srv.URL+"/healthz", bootstrap.Options{
		Timeout: time.Minute,
		// Short delays to keep the example quick; leave Backoff zero for
		// DefaultBackoff.
		Backoff: wait.Backoff{Duration: 10 * time.Millisecond},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("reachable after %d attempts, status %d\n", res.Attempts, res.StatusCode)
	// Output: reachable after 3 attempts, status 200
}

// The error says why the server was not reachable; errors.As gives the
// class, the attempt count and the elapsed time.
func ExampleWaitForServer_error() {
	// A port nothing listens on.
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close()

	_, err := bootstrap.WaitForServer(context.Background(), "tcp://"+addr, bootstrap.Options{
		MaxAttempts: 3,
		Backoff:     wait.Backoff{Duration: 10 * time.Millisecond},
	})
	var we *bootstrap.WaitError
	if errors.As(err, &we) {
		fmt.Println("class:", we.Class)
		fmt.Println("attempts:", we.Attempts)
		fmt.Println("gave up on attempts:", errors.Is(err, bootstrap.ErrAttemptsExhausted))
		fmt.Println("hint:", we.Class.Hint())
	}
	// Output:
	// class: ConnectionRefused
	// attempts: 3
	// gave up on attempts: true
	// hint: nothing accepts connections on that port yet: the server may still be starting, or the port or the Service's targetPort is wrong
}

// OnAttempt lets a program show progress its own way, here one line per
// attempt.
func ExampleOptions_onAttempt() {
	srv := initialisingServer(2)
	defer srv.Close()

	_, err := bootstrap.WaitForServer(context.Background(), srv.URL, bootstrap.Options{
		Backoff: wait.Backoff{Duration: 10 * time.Millisecond},
		OnAttempt: func(a bootstrap.Attempt) {
			if a.Err != nil {
				fmt.Printf("attempt %d: %s %d\n", a.Number, a.Class, a.StatusCode)
				return
			}
			fmt.Printf("attempt %d: ready %d\n", a.Number, a.StatusCode)
		},
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output:
	// attempt 1: HTTPStatus 503
	// attempt 2: HTTPStatus 503
	// attempt 3: ready 200
}

// A server that answers 200 before it is really ready can be held to a body
// check.
func ExampleBodyContains() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, `{"status":"loading model"}`)
	}))
	defer srv.Close()

	_, err := bootstrap.WaitForServer(context.Background(), srv.URL, bootstrap.Options{
		CheckBody:   bootstrap.BodyContains(`"status":"ok"`),
		MaxAttempts: 1,
	})
	var we *bootstrap.WaitError
	if errors.As(err, &we) {
		fmt.Println(we.Class, we.StatusCode)
	}
	// Output: UnexpectedBody 200
}

// Classify works on any error from net or net/http, for programs that make
// their own calls.
func ExampleClassify() {
	_, err := http.Get("http://127.0.0.1:0/") // port 0: nothing can listen there
	fmt.Println(bootstrap.Classify(err))

	err = &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "gpustack-server.gpustack.svc", IsNotFound: true}}
	fmt.Println(bootstrap.Classify(err))
	// Output:
	// ConnectionRefused
	// DNSNotFound
}
