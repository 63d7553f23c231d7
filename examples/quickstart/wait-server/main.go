// Command wait-server waits, on package bootstrap, until a server answers
// before the program that needs it starts: a worker that must register
// with its server, run as an init container or before its own start.
//
//	go run ./examples/quickstart/wait-server --timeout 5m https://gpustack.gpustack.svc/healthz
//
// It exits 0 once the server answers 2xx, 3 when it did not in time (the
// last failure and what to do are on stderr), 1 on a bad URL or flag.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	"github.com/udrain/udrain/bootstrap"
)

func main() {
	timeout := flag.Duration("timeout", 5*time.Minute, "how long to wait in all")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// bootstrap logs each new kind of failure through the context's logger.
	ctx = klog.NewContext(ctx, klog.Background())
	err := waitFor(ctx, flag.Arg(0), bootstrap.Options{Timeout: *timeout}, os.Stdout)
	var failed *bootstrap.WaitError
	switch {
	case errors.As(err, &failed):
		fmt.Fprintf(os.Stderr, "wait-server: %v\nwhat to do: %s\n", err, failed.Class.Hint())
		os.Exit(3)
	case err != nil:
		fmt.Fprintln(os.Stderr, "wait-server:", err)
		os.Exit(1)
	}
}

// waitFor returns once target answers, or why it did not.
func waitFor(ctx context.Context, target string, opts bootstrap.Options, out io.Writer) error {
	res, err := bootstrap.WaitForServer(ctx, target, opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%s answered %d after %d attempts in %s\n", res.Target, res.StatusCode, res.Attempts, res.Elapsed.Round(time.Millisecond))
	return nil
}
