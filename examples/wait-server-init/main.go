package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	"github.com/udrain/udrain/bootstrap"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx = klog.NewContext(ctx, klog.Background())
	err := run(ctx, os.Args[1:], os.Stdout, bootstrap.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		// Distinguish "you called me wrong" from "the server never came".
		var we *bootstrap.WaitError
		if errors.As(err, &we) {
			os.Exit(3)
		}
		os.Exit(1)
	}
}

// worker is what the program needs to register.
type worker struct {
	serverURL string
	name      string
	token     string
	timeout   time.Duration
}

// run parses args, waits for the server, then registers. waitOpts carries
// the wait settings the program does not take from flags (tests shorten the
// backoff through it).
func run(ctx context.Context, args []string, stdout io.Writer, waitOpts bootstrap.Options) error {
	w, err := parseFlags(args)
	if err != nil {
		return err
	}
	healthz, err := url.JoinPath(w.serverURL, "healthz")
	if err != nil {
		return fmt.Errorf("--server-url %q: %w", w.serverURL, err)
	}

	// The registration fails if the server is not up: wait for it first,
	// as the init container of worker.yaml does for workers that cannot
	// change their code.
	waitOpts.Timeout = w.timeout
	res, err := bootstrap.WaitForServer(ctx, healthz, waitOpts)
	if err != nil {
		return fmt.Errorf("waiting for the server before registering: %w", err)
	}
	fmt.Fprintf(stdout, "server %s reachable after %d attempts in %s\n", res.Target, res.Attempts, res.Elapsed.Round(time.Millisecond))

	id, err := w.register(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "registered as worker %s\n", id)
	return nil
}

func parseFlags(args []string) (*worker, error) {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	w := &worker{}
	fs.StringVar(&w.serverURL, "server-url", os.Getenv("GPUSTACK_SERVER_URL"), "the server's URL, e.g. http://gpustack-server.gpustack.svc:80")
	fs.StringVar(&w.name, "name", os.Getenv("HOSTNAME"), "this worker's name")
	tokenFile := fs.String("token-file", "", "file holding the registration token")
	fs.DurationVar(&w.timeout, "timeout", 10*time.Minute, "how long to wait for the server")
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("%w (flags: --server-url URL --name NAME --token-file FILE --timeout D)", err)
	}
	switch {
	case w.serverURL == "":
		return nil, errors.New("no server: pass --server-url or set GPUSTACK_SERVER_URL")
	case w.name == "":
		return nil, errors.New("no worker name: pass --name or set HOSTNAME")
	}
	if *tokenFile != "" {
		b, err := os.ReadFile(*tokenFile)
		if err != nil {
			return nil, fmt.Errorf("--token-file: %w", err)
		}
		w.token = strings.TrimSpace(string(b))
	}
	return w, nil
}

// register posts the worker to the server and returns the ID it assigns.
func (w *worker) register(ctx context.Context) (string, error) {
	body, err := json.Marshal(map[string]string{"name": w.name})
	if err != nil {
		return "", err
	}
	endpoint, err := url.JoinPath(w.serverURL, "v1", "workers")
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	if w.token != "" {
		req.Header.Set("Authorization", "Bearer "+w.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("registering: %w (%s)", err, bootstrap.Classify(err).Hint())
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		return "", fmt.Errorf("registering: server answered %s", resp.Status)
	}
	var created struct {
		ID string `json:"id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&created); err != nil || created.ID == "" {
		return "", fmt.Errorf("registering: no worker id in the answer (%v)", err)
	}
	return created.ID, nil
}
