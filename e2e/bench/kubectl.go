package bench

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/drain"
)

// KubectlDrainer drains nodes one at a time the way a script over
// "kubectl drain --ignore-daemonsets" does, through the library kubectl
// drain is built on (k8s.io/kubectl/pkg/drain) with kubectl's defaults:
// for each node, GET it, cordon it (RunCordonOrUncordon), drain it
// (RunNodeDrain); in a rollout also run the upgrade step, GET it again
// and uncordon it, then the next node.
type KubectlDrainer struct {
	Client kubernetes.Interface
	// NodeTimeout is kubectl drain's --timeout per node; 0 means none
	// (kubectl's default), which can wait forever.
	NodeTimeout time.Duration
	// Rollout adds the upgrade step and the uncordon after each node's
	// drain; without it the nodes stay cordoned, as after kubectl drain.
	Rollout     bool
	UpgradeStep time.Duration
}

// NodeTimes is what one node took.
type NodeTimes struct {
	Node    string        `json:"node"`
	Start   time.Time     `json:"start"`
	Cordon  time.Duration `json:"cordon"`
	Drain   time.Duration `json:"drain"`
	Upgrade time.Duration `json:"upgrade,omitempty"`
	// Uncordon is the GET and uncordon after the upgrade step.
	Uncordon time.Duration `json:"uncordon,omitempty"`
	// Evicted counts the evictions of the node's drain that succeeded.
	Evicted int    `json:"evicted"`
	Err     string `json:"err,omitempty"`
}

// Run processes the nodes in order and stops at the first error (a drain
// that timed out is an error, as for kubectl drain).
func (k KubectlDrainer) Run(ctx context.Context, nodes []string) ([]NodeTimes, error) {
	var out []NodeTimes
	for _, name := range nodes {
		nt, err := k.node(ctx, name)
		out = append(out, nt)
		if err != nil {
			return out, fmt.Errorf("node %s: %w", name, err)
		}
	}
	return out, nil
}

func (k KubectlDrainer) node(ctx context.Context, name string) (NodeTimes, error) {
	nt := NodeTimes{Node: name, Start: time.Now()}
	var evicted atomic.Int32
	h := kubectlHelper(ctx, k.Client, k.NodeTimeout)
	h.OnPodDeletionOrEvictionFinished = func(_ *corev1.Pod, _ bool, err error) {
		if err == nil {
			evicted.Add(1)
		}
	}
	fail := func(err error) (NodeTimes, error) {
		nt.Evicted = int(evicted.Load())
		nt.Err = err.Error()
		return nt, err
	}
	t := time.Now()
	if err := k.cordon(ctx, h, name, true); err != nil {
		return fail(err)
	}
	nt.Cordon = time.Since(t)
	t = time.Now()
	err := drain.RunNodeDrain(h, name)
	nt.Drain = time.Since(t)
	if err != nil {
		return fail(err)
	}
	nt.Evicted = int(evicted.Load())
	if !k.Rollout {
		return nt, nil
	}
	t = time.Now()
	if err := sleep(ctx, k.UpgradeStep); err != nil {
		return fail(err)
	}
	nt.Upgrade = time.Since(t)
	t = time.Now()
	if err := k.cordon(ctx, h, name, false); err != nil {
		return fail(err)
	}
	nt.Uncordon = time.Since(t)
	return nt, nil
}

// kubectlHelper is the drain.Helper of "kubectl drain --ignore-daemonsets
// --timeout=timeout" with every other flag at kubectl's default.
func kubectlHelper(ctx context.Context, c kubernetes.Interface, timeout time.Duration) *drain.Helper {
	return &drain.Helper{
		Ctx:                  ctx,
		Client:               c,
		GracePeriodSeconds:   -1,
		IgnoreAllDaemonSets:  true,
		Timeout:              timeout,
		EvictErrorRetryDelay: 5 * time.Second,
		ChunkSize:            cmdutil.DefaultChunkSize,
		Out:                  io.Discard,
		ErrOut:               io.Discard,
	}
}

// Uncordon makes a node schedulable again, as kubectl uncordon does.
func (k KubectlDrainer) Uncordon(ctx context.Context, name string) error {
	return k.cordon(ctx, kubectlHelper(ctx, k.Client, 0), name, false)
}

// cordon GETs the node, as kubectl cordon and uncordon do, and sets it
// (un)schedulable.
func (k KubectlDrainer) cordon(ctx context.Context, h *drain.Helper, name string, on bool) error {
	node, err := k.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	return drain.RunCordonOrUncordon(h, node, on)
}
