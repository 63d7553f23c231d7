package bench

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Load is what the machine's processes spent over a stretch of time: the
// testbed's control-plane components, the harness (its readiness-gate
// controller and pod recorders) and the drainer, so that a slow rollout
// can be told apart from a testbed that ran out of CPU.
type Load struct {
	Wall time.Duration `json:"wall"`
	CPUs int           `json:"cpus"`
	// CPU is the CPU time (user + system) each process spent, by name.
	CPU map[string]time.Duration `json:"cpu"`
	// PeakRSS is each component's peak resident set over its life
	// (VmHWM), in bytes, read at the end.
	PeakRSS map[string]int64 `json:"peakRSS,omitempty"`
	// MachineBusy is the fraction of all CPUs busy over Wall (from
	// /proc/stat): everything on the machine, other jobs included.
	MachineBusy float64 `json:"machineBusy"`
	Err         string  `json:"err,omitempty"`
}

// Cores is the CPU time of every process named, over the wall time: how
// many cores they kept busy on average.
func (l *Load) Cores() float64 {
	if l == nil || l.Wall <= 0 {
		return 0
	}
	return l.cpuTotal().Seconds() / l.Wall.Seconds()
}

// cpuTotal is the CPU time of every process named.
func (l *Load) cpuTotal() time.Duration {
	var sum time.Duration
	for _, d := range l.CPU {
		sum += d
	}
	return sum
}

// Floor is the least wall time the CPU time of every process named allows
// on the machine's CPUs: their CPU time over the CPU count. No schedule of
// the same work ends sooner on this machine; a rollout near its floor is
// bound by the machine, not by how it orders its work. 0 when unknown.
func (l *Load) Floor() time.Duration {
	if l == nil || l.CPUs <= 0 {
		return 0
	}
	return l.cpuTotal() / time.Duration(l.CPUs)
}

// Names lists the processes by CPU time, most first.
func (l *Load) Names() []string {
	out := make([]string, 0, len(l.CPU))
	for n := range l.CPU {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool {
		if l.CPU[out[i]] != l.CPU[out[j]] {
			return l.CPU[out[i]] > l.CPU[out[j]]
		}
		return out[i] < out[j]
	})
	return out
}

type loadMeter struct {
	start   time.Time
	pids    map[string]int
	cpu     map[string]time.Duration
	busy    [2]uint64 // busy, total jiffies
	err     error
	selfCPU time.Duration
}

// harnessName is the harness's own process in a [Load].
const harnessName = "harness (gate controller, recorders)"

// startLoad starts metering the testbed's components (when Env knows
// them) and this process.
func (e *Env) startLoad(ctx context.Context) *loadMeter {
	m := &loadMeter{start: time.Now(), cpu: map[string]time.Duration{}}
	if e.ComponentPIDs != nil {
		m.pids, m.err = e.ComponentPIDs(ctx)
	}
	for name, pid := range m.pids {
		if d, err := processCPU(pid); err == nil {
			m.cpu[name] = d
		}
	}
	m.selfCPU, _ = processCPU(os.Getpid())
	m.busy[0], m.busy[1], _ = machineJiffies()
	return m
}

func (m *loadMeter) stop() *Load { return m.stopWith(nil) }

// stopWith ends the metering; extra adds processes measured otherwise
// (the drainer child's getrusage).
func (m *loadMeter) stopWith(extra map[string]time.Duration) *Load {
	l := &Load{Wall: time.Since(m.start), CPUs: runtime.NumCPU(), CPU: map[string]time.Duration{}, PeakRSS: map[string]int64{}}
	if m.err != nil {
		l.Err = m.err.Error()
	}
	for name, pid := range m.pids {
		d, err := processCPU(pid)
		if err != nil {
			l.Err = fmt.Sprintf("%s (pid %d): %v", name, pid, err)
			continue
		}
		l.CPU[name] = d - m.cpu[name]
		if rss, err := processPeakRSS(pid); err == nil {
			l.PeakRSS[name] = rss
		}
	}
	if d, err := processCPU(os.Getpid()); err == nil {
		l.CPU[harnessName] = d - m.selfCPU
	}
	for n, d := range extra {
		l.CPU[n] = d
	}
	if busy, total, err := machineJiffies(); err == nil && total > m.busy[1] {
		l.MachineBusy = float64(busy-m.busy[0]) / float64(total-m.busy[1])
	}
	return l
}

// clockTick is USER_HZ, the unit of /proc's CPU times: 100 on every Linux
// architecture Go supports.
const clockTick = 100

// processCPU is a process's user + system CPU time from /proc/PID/stat.
func processCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseProcStat(string(data))
}

// parseProcStat reads utime + stime (fields 14 and 15) of a
// /proc/PID/stat line; the command (field 2) may hold spaces and
// parentheses, so fields are counted after its last ')'.
func parseProcStat(s string) (time.Duration, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("not a /proc/PID/stat line: %q", s)
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state): utime is field 14, f[11].
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/PID/stat line: %q", s)
	}
	var sum uint64
	for _, x := range f[11:13] {
		v, err := strconv.ParseUint(x, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/PID/stat: %w", err)
		}
		sum += v
	}
	return time.Duration(sum) * time.Second / clockTick, nil
}

// processPeakRSS is a process's VmHWM from /proc/PID/status, in bytes.
func processPeakRSS(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}

// machineJiffies returns the busy and total CPU time of the machine (the
// "cpu" line of /proc/stat), in jiffies.
func machineJiffies() (busy, total uint64, err error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	line, _, _ := strings.Cut(string(data), "\n")
	return parseCPULine(line)
}

// parseCPULine reads the aggregate "cpu" line of /proc/stat: user nice
// system idle iowait irq softirq steal ...; idle and iowait are not busy.
func parseCPULine(line string) (busy, total uint64, err error) {
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0, fmt.Errorf("not the cpu line of /proc/stat: %q", line)
	}
	for i, x := range f[1:] {
		if i >= 8 { // guest and guest_nice are already in user and nice
			break
		}
		v, err := strconv.ParseUint(x, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/stat: %w", err)
		}
		total += v
		if i != 3 && i != 4 {
			busy += v
		}
	}
	return busy, total, nil
}
