package upgrade

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/topology"
)

// EnvDomainLabel is the variable that gives the Command step's command the
// node label that names the domains (eviction.Options.DomainLabel).
const EnvDomainLabel = "UDRAIN_DOMAIN_LABEL"

// DefaultCommandKillDelay is CommandOptions.KillDelay's default.
const DefaultCommandKillDelay = 10 * time.Second

// CommandOptions configure [Command].
type CommandOptions struct {
	// Command is the shell command line run once per domain, through
	// "sh -c". Required.
	Command string
	// RolloutID and DomainLabel are given to the command in
	// UDRAIN_ROLLOUT_ID and UDRAIN_DOMAIN_LABEL.
	RolloutID   string
	DomainLabel string
	// Env returns the environment the command starts from, before the
	// UDRAIN_* variables; nil means the process's (os.Environ).
	Env func() []string
	// Output returns where the command of domain writes, its standard
	// output and error merged: one Write per line, newline included (a
	// last line without one gets one). nil discards the output.
	Output func(domain string) io.Writer
	// KillDelay is how long an interrupted command gets between SIGTERM to
	// its process group and SIGKILL; zero means DefaultCommandKillDelay.
	KillDelay time.Duration
	// LookPath finds sh when the step is built; nil means exec.LookPath.
	LookPath func(file string) (string, error)
}

// Validate checks the options that need nothing else: the command is set
// and the kill delay not negative. It returns the *udrain.ConfigError
// that Command would return for them, without looking for sh.
func (o CommandOptions) Validate() error {
	if strings.TrimSpace(o.Command) == "" {
		return &udrain.ConfigError{Field: "upgrade.CommandOptions.Command", Problem: "empty: give the command line that upgrades a domain's nodes"}
	}
	if o.KillDelay < 0 {
		return &udrain.ConfigError{Field: "upgrade.CommandOptions.KillDelay", Problem: fmt.Sprintf("%s: use 0 (the default) or a positive duration", o.KillDelay)}
	}
	return nil
}

// CommandError reports an upgrade command that failed.
type CommandError struct {
	Domain string
	// ExitCode is the command's exit status; -1 if it did not exit (a
	// signal, or it could not start).
	ExitCode int
	Err      error
}

func (e *CommandError) Error() string {
	if e.ExitCode >= 0 {
		return fmt.Sprintf("the upgrade command for domain %s exited with status %d", e.Domain, e.ExitCode)
	}
	return fmt.Sprintf("the upgrade command for domain %s failed: %v", e.Domain, e.Err)
}

// Unwrap returns the cause.
func (e *CommandError) Unwrap() error { return e.Err }

// Command returns an upgrade step that runs opts.Command through "sh -c"
// once per domain, with UDRAIN_DOMAIN (the domain), UDRAIN_NODES (its
// nodes, comma-separated), UDRAIN_ROLLOUT_ID and UDRAIN_DOMAIN_LABEL in
// its environment and no standard input; it succeeds when the command
// exits 0, and fails with a *CommandError otherwise.
//
// The command runs in a process group of its own (on Unix): when the
// context ends, the group gets SIGTERM, so that what the shell started
// stops too, and the shell is killed KillDelay later if it has not
// exited; the step then returns the context's error.
//
// It needs sh: Command returns a *udrain.ConfigError when none is found
// (udrain's image has none: use Job, NodeLabel or Webhook there), and for
// options Validate refuses.
func Command(opts CommandOptions) (eviction.UpgradeFunc, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	lookPath := opts.LookPath
	if lookPath == nil {
		lookPath = exec.LookPath
	}
	if _, err := lookPath("sh"); err != nil {
		if cause := errors.Unwrap(err); cause != nil {
			err = cause
		}
		return nil, &udrain.ConfigError{Field: "upgrade.CommandOptions.Command", Problem: fmt.Sprintf("runs through sh, and no sh was found in PATH (%v); nothing was run: use an image with sh, or an upgrade step that needs no shell", err),
			See: []string{"upgrade.JobOptions.Template", "upgrade.NodeLabelOptions.Key", "upgrade.WebhookOptions.URL"}}
	}
	if opts.KillDelay == 0 {
		opts.KillDelay = DefaultCommandKillDelay
	}
	return (&commandStep{opts: opts}).run, nil
}

type commandStep struct{ opts CommandOptions }

func (s *commandStep) run(ctx context.Context, dom topology.Domain) error {
	cmd := exec.CommandContext(ctx, "sh", "-c", s.opts.Command)
	env := os.Environ
	if s.opts.Env != nil {
		env = s.opts.Env
	}
	cmd.Env = append(env(),
		EnvDomain+"="+dom.Name,
		EnvNodes+"="+strings.Join(dom.Nodes, ","),
		EnvRolloutID+"="+s.opts.RolloutID,
		EnvDomainLabel+"="+s.opts.DomainLabel,
	)
	out := &lineWriter{w: io.Discard}
	if s.opts.Output != nil {
		out.w = s.opts.Output(dom.Name)
	}
	cmd.Stdout, cmd.Stderr = out, out
	inProcessGroup(cmd)
	cmd.Cancel = func() error { return terminate(cmd) }
	cmd.WaitDelay = s.opts.KillDelay
	klog.FromContext(ctx).Info("Upgrade command started", "domain", dom.Name, "upgradeStep", "command", "nodes", len(dom.Nodes))
	err := cmd.Run()
	out.flush()
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("the upgrade command for domain %s stopped: %w", dom.Name, ctx.Err())
	}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return &CommandError{Domain: dom.Name, ExitCode: exitErr.ExitCode(), Err: err}
	}
	return &CommandError{Domain: dom.Name, ExitCode: -1, Err: err}
}

// lineWriter writes to w whole lines, one Write each, whatever the
// writes it gets; flush writes what is left of a last line, with a
// newline. It is safe for concurrent use (standard output and error).
type lineWriter struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
}

// Write buffers b and writes every complete line, without its "\r".
func (w *lineWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, b...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(b), nil
		}
		_, _ = io.WriteString(w.w, strings.TrimRight(string(w.buf[:i]), "\r")+"\n")
		w.buf = w.buf[i+1:]
	}
}

func (w *lineWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		_, _ = io.WriteString(w.w, string(w.buf)+"\n")
		w.buf = nil
	}
}
