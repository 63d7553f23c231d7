// Command udrain drains Kubernetes upgrade domains without breaking
// gang-scheduled groups; installed as kubectl-udrain it is the kubectl
// plugin "kubectl udrain". The commands live in package app; see
// docs/CLI.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	// Mozilla's roots, used only where the system has none (udrain's
	// image is distroless static without CA certificates): https targets
	// of wait-server, serve-readiness members and the upgrade webhook are
	// then verified against these. A system store, where there is one,
	// still wins. Only the binary imports it: the library leaves the
	// choice to the program that embeds it.
	_ "golang.org/x/crypto/x509roots/fallback"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/udrain/udrain/cmd/udrain/app"
)

func main() {
	os.Exit(run())
}

func run() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// After the first signal, a second one kills at once.
	go func() {
		<-ctx.Done()
		stop()
	}()
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	return app.Run(ctx, os.Args[1:], streams, app.Config{})
}
