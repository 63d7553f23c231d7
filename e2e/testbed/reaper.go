package testbed

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
)

// reaper is a child process that deletes the cluster when this process ends
// without saying it is done: a panicking test, `go test -timeout`, SIGKILL.
// It reads its stdin, a pipe whose only writer is this process; the kernel
// closes the pipe whenever this process ends, and the reaper runs its command
// unless it read "done" first. Before that it SIGKILLs the processes it was
// told about ("kill PID" lines, "forget PID" once a process has been stopped),
// such as an operator the testbed runs against the cluster. It sits in its
// own process group (a terminal's Ctrl-C does not reach it) and writes to a
// log file, never to this process's output, which it would otherwise hold
// open after the tests end.
type reaper struct {
	cmd *exec.Cmd
	log string

	mu sync.Mutex // serializes writes to w
	w  io.WriteCloser
}

// reaperScript kills the processes it was told about, then saves the
// control-plane logs (REAPER_SAVE_FROM, if set) into REAPER_SAVE_TO before it
// tears down: after a panic no test could dump them.
const reaperScript = `pids=
while read -r verb arg; do
  case $verb in
    done) exit 0 ;;
    kill) pids="$pids $arg" ;;
    forget) pids=$(echo " $pids " | sed "s/ $arg / /g") ;;
  esac
done
echo "test process ended without teardown: running $*"
for p in $pids; do kill -9 "$p" 2>/dev/null && echo "killed process $p"; done
if [ -n "$REAPER_SAVE_FROM" ] && [ -d "$REAPER_SAVE_FROM" ]; then
  mkdir -p "$REAPER_SAVE_TO" && cp -R "$REAPER_SAVE_FROM/." "$REAPER_SAVE_TO/" && echo "control-plane logs saved in $REAPER_SAVE_TO"
fi
exec "$@"`

func startReaper(command, env []string, logPath string) (*reaper, error) {
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, err
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.Command("sh", append([]string{"-c", reaperScript, "reaper"}, command...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	w, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start reaper: %w", err)
	}
	return &reaper{cmd: cmd, w: w, log: logPath}, nil
}

// killOnExit makes the reaper SIGKILL process pid if this process ends
// without disarming it.
func (r *reaper) killOnExit(pid int) error { return r.say(fmt.Sprintf("kill %d\n", pid)) }

// forget takes back killOnExit, once the process has been stopped (its pid
// may be reused).
func (r *reaper) forget(pid int) error { return r.say(fmt.Sprintf("forget %d\n", pid)) }

func (r *reaper) say(line string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := io.WriteString(r.w, line); err != nil {
		return fmt.Errorf("reaper: %w (log %s)", err, r.log)
	}
	return nil
}

// disarm tells the reaper the cluster is gone and waits for it to exit.
func (r *reaper) disarm() error {
	r.mu.Lock()
	_, werr := io.WriteString(r.w, "done\n")
	cerr := r.w.Close()
	r.mu.Unlock()
	if err := r.cmd.Wait(); err != nil {
		return fmt.Errorf("reaper: %w (log %s)", err, r.log)
	}
	if werr != nil {
		return werr
	}
	return cerr
}

// fire makes the reaper run its command now and waits for it, as if this
// process had ended.
func (r *reaper) fire() error {
	r.mu.Lock()
	_ = r.w.Close()
	r.mu.Unlock()
	if err := r.cmd.Wait(); err != nil {
		return fmt.Errorf("reaper: %w (log %s)", err, r.log)
	}
	return nil
}
