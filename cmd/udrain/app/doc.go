// Package app is the udrain command line: the cobra command tree behind the
// udrain binary and the kubectl plugin (kubectl-udrain, run as
// "kubectl udrain").
//
// It is a package of its own, not package main, so that programs and tests
// can run the commands in-process: NewRootCommand builds the tree with the
// real kubeconfig and clock, NewCommand with an injected Config (a client
// factory returning a fake clientset, a fake clock, a terminal probe), and
// Run executes a command line and returns its exit code:
//
//	streams := genericiooptions.IOStreams{In: os.Stdin, Out: &out, ErrOut: &errOut}
//	code := app.Run(ctx, []string{"plan", "ud-1", "-o", "json"}, streams, app.Config{})
//
// The exit codes (ExitOK, ExitError, ExitUsage, ExitBlocked, ExitContract,
// ExitInterrupted) and the JSON kinds of "-o json" (DomainList, AuditReport,
// Plan, DrainResult, RolloutResult, UncordonResult, HealthReport,
// GPUSummary, WaitServerResult, Version, all apiVersion
// udrain.dev/v1alpha3) are stable and documented in docs/CLI.md; their Go
// types and tables are package report's.
//
// What it is not for: the drain, audit and classification logic lives in
// the library packages (eviction, topology, gpu, bootstrap, readiness);
// this package parses flags, lists objects, and prints. Unlike the library
// packages it prints, to the streams it is given, and it never calls
// os.Exit: Run returns the code and cmd/udrain's main exits with it.
package app
