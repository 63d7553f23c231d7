package testbed

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// process is a program the testbed runs next to the cluster (an operator),
// from [Testbed.startProcess] until [Testbed.Stop]: it is stopped before the
// cluster is deleted, and SIGKILLed by the reaper if this process dies first.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{} // closed when the process has exited
	err  error         // why it exited; read after done
}

// startProcess starts argv with env added to this process's, its output
// appended to logPath. It fails once the testbed is stopped.
func (b *Testbed) startProcess(name string, argv, env []string, logPath string) (*process, error) {
	b.procMu.Lock()
	defer b.procMu.Unlock()
	if b.procsStopped {
		return nil, fmt.Errorf("start %s: the testbed is stopped", name)
	}
	r, err := b.processReaper()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, err
	}
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the child has its own descriptor
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	if err := r.killOnExit(cmd.Process.Pid); err != nil {
		_ = cmd.Process.Kill()
		<-p.done
		return nil, err
	}
	b.procs = append(b.procs, p)
	return p, nil
}

// processReaper returns the reaper that guards processes: the cluster's, or
// for a cluster the testbed does not own, one of their own that runs no
// command. Call with procMu held.
func (b *Testbed) processReaper() (*reaper, error) {
	b.mu.Lock()
	r := b.reaper
	b.mu.Unlock()
	if r != nil {
		return r, nil
	}
	if b.procReaper == nil {
		log := filepath.Join(os.TempDir(), fmt.Sprintf("udrain-e2e-reaper-processes-%d.log", os.Getpid()))
		pr, err := startReaper([]string{"true"}, nil, log)
		if err != nil {
			return nil, err
		}
		b.procReaper = pr
	}
	return b.procReaper, nil
}

// stopProcesses stops every process started (SIGTERM, then SIGKILL after
// grace) and refuses new ones.
func (b *Testbed) stopProcesses(grace time.Duration) error {
	b.procMu.Lock()
	defer b.procMu.Unlock()
	b.procsStopped = true
	var errs []error
	b.mu.Lock()
	r := b.reaper
	b.mu.Unlock()
	if b.procReaper != nil {
		r = b.procReaper
	}
	for _, p := range b.procs {
		if err := p.stop(grace); err != nil {
			// The reaper kills it if it can.
			errs = append(errs, err)
			continue
		}
		b.opts.Logf("stopped %s (its log: %s)", p.name, p.log)
		if r != nil {
			errs = append(errs, r.forget(p.cmd.Process.Pid))
		}
	}
	b.procs = nil
	if b.procReaper != nil {
		errs = append(errs, b.procReaper.disarm())
		b.procReaper = nil
	}
	return errors.Join(errs...)
}

// exited reports whether the process has exited, and with which error (nil
// for a clean exit).
func (p *process) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// stop sends SIGTERM, and SIGKILL if the process is still running after
// grace; a process that had already exited is not an error here (its exit
// is reported where it matters, to the tests that use it).
func (p *process) stop(grace time.Duration) error {
	if done, _ := p.exited(); done {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
	}
	_ = p.cmd.Process.Kill()
	select {
	case <-p.done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.name, p.cmd.Process.Pid)
	}
}

// logTail returns the last lines of the process's log, for error messages.
func (p *process) logTail(n int) string {
	data, err := os.ReadFile(p.log)
	if err != nil {
		return fmt.Sprintf("(reading %s: %v)", p.log, err)
	}
	return lastLines(string(bytes.TrimRight(data, "\n")), n)
}
