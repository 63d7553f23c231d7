// Command readiness is a multi-host group's readiness endpoint, run in
// the group's leader pod on package readiness: it is ready only while
// every member of the group answers its health check, so that the
// leader's readinessProbe (and a PodDisruptionBudget over leaders) stands
// for the whole group.
//
//	readinessProbe:
//	  httpGet: {path: /readyz, port: 8081}
//
// The members come from the variables LeaderWorkerSet sets in the leader
// pod (each serving /health on --port), or from --member NAME=URL.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/udrain/udrain/readiness"
)

func main() {
	listen := flag.String("listen", ":8081", "address to serve /readyz on")
	port := flag.Int("port", 8000, "the port each LeaderWorkerSet member serves /health on")
	var specs []string
	flag.Func("member", "a member as NAME=URL (repeat) instead of LeaderWorkerSet's", func(s string) error {
		specs = append(specs, s)
		return nil
	})
	flag.Parse()
	members := readiness.MembersOptions{Specs: specs}
	if len(specs) == 0 {
		members.LWS = &readiness.LWSOptions{Port: *port} // read from the pod's environment
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", *listen)
	if err == nil {
		err = serve(ctx, ln, members)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "readiness:", err)
		os.Exit(1)
	}
}

// serve answers /readyz on ln from the members' checks until ctx ends.
func serve(ctx context.Context, ln net.Listener, members readiness.MembersOptions) error {
	list, err := members.Members()
	if err != nil {
		ln.Close()
		return err
	}
	checker, err := readiness.NewChecker(list, readiness.Options{})
	if err != nil {
		ln.Close()
		return err
	}
	srv, err := checker.NewServer(readiness.ServeOptions{})
	if err != nil {
		ln.Close()
		return err
	}
	return srv.Serve(ctx, ln)
}
