package upgrade

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/topology"
)

// writes records every Write, per domain.
type writes struct {
	mu  sync.Mutex
	got map[string][]string
}

func (w *writes) output(domain string) io.Writer {
	return writerFunc(func(b []byte) (int, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.got == nil {
			w.got = map[string][]string{}
		}
		w.got[domain] = append(w.got[domain], string(b))
		return len(b), nil
	})
}

func (w *writes) of(domain string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.got[domain]...)
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

func TestCommandConfigErrors(t *testing.T) {
	noSh := func(string) (string, error) {
		return "", &wrapped{errors.New("executable file not found in $PATH")}
	}
	for name, tc := range map[string]struct {
		opts CommandOptions
		want *udrain.ConfigError
	}{
		"no command": {CommandOptions{Command: " "}, &udrain.ConfigError{Field: "upgrade.CommandOptions.Command",
			Problem: "empty: give the command line that upgrades a domain's nodes"}},
		"negative kill delay": {CommandOptions{Command: "true", KillDelay: -time.Second}, &udrain.ConfigError{Field: "upgrade.CommandOptions.KillDelay",
			Problem: "-1s: use 0 (the default) or a positive duration"}},
		"no sh": {CommandOptions{Command: "true", LookPath: noSh}, &udrain.ConfigError{Field: "upgrade.CommandOptions.Command",
			Problem: "runs through sh, and no sh was found in PATH (executable file not found in $PATH); nothing was run: use an image with sh, or an upgrade step that needs no shell",
			See:     []string{"upgrade.JobOptions.Template", "upgrade.NodeLabelOptions.Key", "upgrade.WebhookOptions.URL"}}},
	} {
		t.Run(name, func(t *testing.T) {
			step, err := Command(tc.opts)
			var ce *udrain.ConfigError
			if !errors.As(err, &ce) || step != nil {
				t.Fatalf("Command: %v, want a ConfigError and no step", err)
			}
			if diff := cmp.Diff(tc.want, ce); diff != "" {
				t.Errorf("ConfigError (-want +got):\n%s", diff)
			}
		})
	}
}

// wrapped stands for the *exec.Error of exec.LookPath.
type wrapped struct{ err error }

func (e *wrapped) Error() string { return `exec: "sh": ` + e.err.Error() }
func (e *wrapped) Unwrap() error { return e.err }

// TestCommandStep: the command gets the domain, its nodes, the rollout
// and the label in its environment, on top of Env's; its output reaches
// Output line by line, standard error too, a last partial line with a
// newline; a non-zero exit or a signal is a *CommandError.
func TestCommandStep(t *testing.T) {
	dom := topology.Domain{Name: "ud-1", Nodes: []string{"gpu-1", "gpu-2"}}
	for name, tc := range map[string]struct {
		command   string
		wantLines []string
		wantErr   *CommandError
	}{
		"environment": {
			command:   `echo "domain=$UDRAIN_DOMAIN nodes=$UDRAIN_NODES id=$UDRAIN_ROLLOUT_ID label=$UDRAIN_DOMAIN_LABEL base=$BASE home=${HOME:-unset}"`,
			wantLines: []string{"domain=ud-1 nodes=gpu-1,gpu-2 id=r-1 label=example.com/ud base=b home=unset\n"},
		},
		"lines and a partial one, standard error too": {
			command:   `printf 'one\r\ntwo\n'; printf 'partial' >&2`,
			wantLines: []string{"one\n", "two\n", "partial\n"},
		},
		"exit status": {
			command:   `echo failing; exit 3`,
			wantLines: []string{"failing\n"},
			wantErr:   &CommandError{Domain: "ud-1", ExitCode: 3},
		},
		"killed by a signal": {
			command: `kill -9 $$`,
			wantErr: &CommandError{Domain: "ud-1", ExitCode: -1},
		},
	} {
		t.Run(name, func(t *testing.T) {
			var out writes
			step, err := Command(CommandOptions{Command: tc.command, RolloutID: "r-1", DomainLabel: "example.com/ud",
				Env: func() []string { return []string{"BASE=b", "PATH=/usr/bin:/bin"} }, Output: out.output})
			if err != nil {
				t.Fatal(err)
			}
			err = step(t.Context(), dom)
			var got *CommandError
			if tc.wantErr == nil && err != nil || tc.wantErr != nil && !errors.As(err, &got) {
				t.Fatalf("step: %v, want %v", err, tc.wantErr)
			}
			if got != nil {
				if diff := cmp.Diff(tc.wantErr, got, cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Err" }, cmp.Ignore())); diff != "" || got.Err == nil {
					t.Errorf("CommandError (-want +got):\n%s (cause %v)", diff, got.Err)
				}
			}
			if diff := cmp.Diff(tc.wantLines, out.of("ud-1")); diff != "" {
				t.Errorf("writes to Output (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCommandCancel: a cancel stops the command and what it started (its
// process group gets SIGTERM), long before KillDelay; the step returns
// the context's error.
func TestCommandCancel(t *testing.T) {
	var out writes
	step, err := Command(CommandOptions{Command: "echo started; sleep 60; echo not reached", KillDelay: time.Minute, Output: out.output})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- step(ctx, topology.Domain{Name: "ud-1", Nodes: []string{"n"}}) }()
	for len(out.of("ud-1")) == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("step: %v, want context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the step did not return after the cancel: the command's children were not terminated")
	}
	if took := time.Since(start); took >= 20*time.Second {
		t.Errorf("the step took %s to stop", took)
	}
	if diff := cmp.Diff([]string{"started\n"}, out.of("ud-1")); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}

func TestLineWriter(t *testing.T) {
	for name, tc := range map[string]struct {
		writes []string
		want   []string
	}{
		"lines split and joined": {[]string{"one\r\ntw", "o\n\nthree"}, []string{"one\n", "two\n", "\n", "three\n"}},
		"nothing":                {nil, nil},
		"no newline at all":      {[]string{"a", "b"}, []string{"ab\n"}},
	} {
		t.Run(name, func(t *testing.T) {
			var got []string
			w := &lineWriter{w: writerFunc(func(b []byte) (int, error) { got = append(got, string(b)); return len(b), nil })}
			for _, s := range tc.writes {
				if n, err := io.WriteString(w, s); n != len(s) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", s, n, err)
				}
			}
			w.flush()
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("lines written (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCommandErrorText(t *testing.T) {
	for _, tc := range []struct {
		err  *CommandError
		want string
	}{
		{&CommandError{Domain: "ud-1", ExitCode: 1}, "the upgrade command for domain ud-1 exited with status 1"},
		{&CommandError{Domain: "ud-1", ExitCode: -1, Err: errors.New("signal: killed")}, "the upgrade command for domain ud-1 failed: signal: killed"},
	} {
		if got := tc.err.Error(); !strings.HasPrefix(got, tc.want) || got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
}
