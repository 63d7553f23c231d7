package bench

import (
	"testing"
	"time"
)

func TestParseProcStat(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		want       time.Duration
		wantErr    bool
	}{
		{"plain", "1234 (kube-apiserver) S 1 1234 1234 0 -1 4194560 100 0 0 0 1500 250 0 0 20 0 12 0 100 0 0", 17500 * time.Millisecond, false},
		{"a command with spaces and parentheses", "77 (a (b) c) R 1 77 77 0 -1 0 0 0 0 0 7 3 0 0 20 0 1 0 1 0 0", 100 * time.Millisecond, false},
		{"short", "1 (x) S 1 2", 0, true},
		{"garbage", "nothing here", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseProcStat(tc.line)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("parseProcStat = %v, %v; want %v (error %v)", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestParseCPULine(t *testing.T) {
	// user nice system idle iowait irq softirq steal guest guest_nice
	busy, total, err := parseCPULine("cpu  100 5 50 800 40 3 2 0 60 0")
	if err != nil || busy != 160 || total != 1000 {
		t.Errorf("parseCPULine = %d, %d, %v; want 160 busy of 1000 (guest already in user)", busy, total, err)
	}
	if _, _, err := parseCPULine("cpu0 1 2 3 4"); err == nil {
		t.Error("a per-CPU line was taken for the aggregate")
	}
}

func TestLoadCores(t *testing.T) {
	l := &Load{Wall: 10 * time.Second, CPU: map[string]time.Duration{"kube-apiserver": 12 * time.Second, "etcd": 3 * time.Second, "kwok-controller": 5 * time.Second}}
	if got := l.Cores(); got != 2 {
		t.Errorf("Cores() = %v, want 2", got)
	}
	if got := l.Names(); got[0] != "kube-apiserver" || got[2] != "etcd" {
		t.Errorf("Names() = %v, want by CPU time, most first", got)
	}
}

func TestLoadFloor(t *testing.T) {
	cpu := map[string]time.Duration{"kube-apiserver": 12 * time.Second, "etcd": 3 * time.Second, "kwok-controller": 5 * time.Second}
	for _, tc := range []struct {
		name string
		l    *Load
		want time.Duration
	}{
		{"two CPUs", &Load{Wall: 30 * time.Second, CPUs: 2, CPU: cpu}, 10 * time.Second},
		{"four CPUs", &Load{Wall: 30 * time.Second, CPUs: 4, CPU: cpu}, 5 * time.Second},
		{"CPU count unknown", &Load{Wall: 30 * time.Second, CPU: cpu}, 0},
		{"nothing metered", nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.l.Floor(); got != tc.want {
				t.Errorf("Floor() = %s, want %s", got, tc.want)
			}
		})
	}
}
