package app

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/udrain/udrain/eviction/evictiontest"
	"github.com/udrain/udrain/internal/testkit"
	"github.com/udrain/udrain/internal/testkit/kube"
	"github.com/udrain/udrain/topology"
)

// update rewrites the golden files: go test ./cmd/udrain/app -update
var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// testNow is the fake clock's time in every test.
var testNow = time.Date(2026, 7, 1, 10, 0, 0, 0, time.UTC)

const testNS = "inference"

var (
	podsGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	pdbsGVR = schema.GroupVersionResource{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"}
)

// cluster is a fake cluster of two upgrade domains:
//
//	ud-1: cpu-1, gpu-1, gpu-2   LWS group llama-0 (leader on gpu-1, worker on gpu-2),
//	                            a ReplicaSet pod web-1 on cpu-1, a DaemonSet pod on gpu-1
//	ud-2: gpu-3, gpu-4          LWS group llama-1; gpu-4 advertises no GPUs
//
// with a PDB over the llama leaders, and an NVIDIA device plugin DaemonSet
// that does not tolerate the GPU nodes' taint. Evictions are answered by
// package evictiontest's fake API server (429 when the budget allows no
// disruption, else the budget spent and the pod deleted); with recreate,
// the pod comes back at once with a new UID, Running and Ready, as a
// StatefulSet and a kubelet would bring it back, and its budget gets the
// disruption back, as the disruption controller would give it.
type cluster struct {
	client *fake.Clientset

	mu        sync.Mutex
	recreate  bool
	evictions []string
	uidSeq    int
}

type clusterOption func(*clusterObjects)

type clusterObjects struct {
	nodes []*corev1.Node
	pods  []*corev1.Pod
	pdbs  []*policyv1.PodDisruptionBudget
	dss   []*appsv1.DaemonSet
}

// gpuNode is a node of the fixture's GPU pool: eight H100s, the GPU taint,
// Ready for 30 days; it advertises them when advertised.
func gpuNode(name, domain string, advertised bool) *corev1.Node {
	opts := []kube.NodeOption{
		kube.InDomain(domain), kube.EightH100s,
		kube.WithLabels(map[string]string{"nvidia.com/gpu.memory": "81559", "kubernetes.io/hostname": name, "node.kubernetes.io/instance": "gpu"}),
		kube.WithTaints(corev1.Taint{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}),
		kube.ReadySince(testNow.Add(-30 * 24 * time.Hour)),
	}
	if advertised {
		opts = append(opts, kube.AdvertisesGPUs(8))
	}
	return kube.Node(name, opts...)
}

// cpuNode is a node without GPUs, Ready for 30 days.
func cpuNode(name, domain string) *corev1.Node {
	return kube.Node(name, kube.InDomain(domain), kube.ReadySince(testNow.Add(-30*24*time.Hour)))
}

func controller(kind, name string) []metav1.OwnerReference {
	yes := true
	return []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: name, UID: types.UID(kind + "-" + name), Controller: &yes}}
}

func readyStatus() corev1.PodStatus {
	return corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
		{Type: corev1.ContainersReady, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: corev1.ConditionTrue},
	}}
}

// lwsPod is member worker of LeaderWorkerSet lws's group g (size 2) on
// node, owned by the LeaderWorkerSet controller's StatefulSets.
func lwsPod(lws string, g, worker int, node string) *corev1.Pod {
	return kube.LWSPod(lws, g, worker, 2, kube.OnNode(node), kube.OwnedByStatefulSets)
}

// leaderPDB is the budget over the leaders of LWS lws's two groups
// (kube.LeaderPDB), allowing allowed disruptions.
func leaderPDB(lws string, allowed int32) *policyv1.PodDisruptionBudget {
	return kube.LeaderPDB(lws, 2, allowed)
}

func defaultObjects() *clusterObjects {
	o := &clusterObjects{
		nodes: []*corev1.Node{cpuNode("cpu-1", "ud-1"), gpuNode("gpu-1", "ud-1", true), gpuNode("gpu-2", "ud-1", true), gpuNode("gpu-3", "ud-2", true), gpuNode("gpu-4", "ud-2", false)},
		pods: []*corev1.Pod{
			lwsPod("llama", 0, 0, "gpu-1"), lwsPod("llama", 0, 1, "gpu-2"),
			lwsPod("llama", 1, 0, "gpu-3"), lwsPod("llama", 1, 1, "gpu-4"),
			{
				ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "web-1", UID: "uid-web-1", OwnerReferences: controller("ReplicaSet", "web")},
				Spec:       corev1.PodSpec{NodeName: "cpu-1"}, Status: readyStatus(),
			},
			{
				ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "node-exporter-gpu-1", UID: "uid-ne", OwnerReferences: controller("DaemonSet", "node-exporter")},
				Spec:       corev1.PodSpec{NodeName: "gpu-1"}, Status: readyStatus(),
			},
		},
		pdbs: []*policyv1.PodDisruptionBudget{leaderPDB("llama", 1)},
		dss: []*appsv1.DaemonSet{
			{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "node-exporter"}},
			{
				ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "nvidia-device-plugin-daemonset"},
				Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "plugin", Image: "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"}},
				}}},
			},
		},
	}
	return o
}

// withPDBAllowing sets the leaders' budget to allow n disruptions.
func withPDBAllowing(n int32) clusterOption {
	return func(o *clusterObjects) { o.pdbs[0] = leaderPDB("llama", n) }
}

// withGPULoss makes each llama pod of ud-1 request a whole node's 8 GPUs
// while gpu-2 advertises only 6: its pod would not fit back.
func withGPULoss() clusterOption {
	return func(o *clusterObjects) {
		for _, p := range o.pods {
			if p.Spec.NodeName == "gpu-1" || p.Spec.NodeName == "gpu-2" {
				if p.Labels[topology.LWSNameLabel] == "" {
					continue
				}
				q := resource.MustParse("8")
				p.Spec.Containers = []corev1.Container{{Name: "vllm", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{"nvidia.com/gpu": q}, Limits: corev1.ResourceList{"nvidia.com/gpu": q}}}}
			}
		}
		for _, n := range o.nodes {
			if n.Name == "gpu-2" {
				n.Status.Allocatable["nvidia.com/gpu"] = resource.MustParse("6")
			}
		}
	}
}

// withViolations adds a LeaderWorkerSet group spanning both domains (a
// Pack error) and a Ray cluster whose head no PDB selects (an
// UnprotectedLeader error).
func withViolations() clusterOption {
	return func(o *clusterObjects) {
		o.pods = append(o.pods, lwsPod("llama", 2, 0, "gpu-2"), lwsPod("llama", 2, 1, "gpu-3"))
		o.pdbs[0].Status.ExpectedPods, o.pdbs[0].Status.CurrentHealthy = 3, 3
		o.pods = append(o.pods, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ray", Name: "rc-head", UID: "uid-rc-head", OwnerReferences: controller("ReplicaSet", "rc-head"),
				Labels: map[string]string{topology.RayClusterLabel: "rc", topology.RayNodeTypeLabel: topology.RayNodeTypeHead}},
			Spec: corev1.PodSpec{NodeName: "cpu-1"}, Status: readyStatus(),
		})
	}
}

// withSpareDomain adds domain ud-3 of one CPU node and no pods: room
// for the llama groups, which request nothing there.
func withSpareDomain() clusterOption {
	return func(o *clusterObjects) { o.nodes = append(o.nodes, cpuNode("cpu-3", "ud-3")) }
}

func newCluster(t *testing.T, opts ...clusterOption) *cluster {
	t.Helper()
	o := defaultObjects()
	for _, opt := range opts {
		opt(o)
	}
	var objs []runtime.Object
	for _, n := range o.nodes {
		objs = append(objs, n)
	}
	for _, p := range o.pods {
		objs = append(objs, p)
	}
	for _, p := range o.pdbs {
		objs = append(objs, p)
	}
	for _, d := range o.dss {
		objs = append(objs, d)
	}
	c := &cluster{client: fake.NewClientset(objs...)}
	evictiontest.Install(c.client, evictiontest.Options{OnEvicted: c.evicted1})
	return c
}

// evicted1 records a pod the API removed and, with recreate, brings it
// back (evictiontest's OnEvicted).
func (c *cluster) evicted1(tr k8stesting.ObjectTracker, pod *corev1.Pod) error {
	c.mu.Lock()
	c.evictions = append(c.evictions, pod.Namespace+"/"+pod.Name)
	recreate := c.recreate
	c.uidSeq++
	uid := types.UID(fmt.Sprintf("%s-new-%d", pod.UID, c.uidSeq))
	c.mu.Unlock()
	if !recreate {
		return nil
	}
	p := pod.DeepCopy()
	p.UID, p.ResourceVersion = uid, ""
	if err := tr.Add(p); err != nil {
		return err
	}
	list, err := tr.List(pdbsGVR, schema.GroupVersionKind{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget"}, pod.Namespace)
	if err != nil {
		return err
	}
	for _, b := range list.(*policyv1.PodDisruptionBudgetList).Items {
		if _, spent := b.Status.DisruptedPods[pod.Name]; spent {
			delete(b.Status.DisruptedPods, pod.Name)
			b.Status.DisruptionsAllowed++
			if err := tr.Update(pdbsGVR, &b, b.Namespace); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *cluster) evicted() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.evictions...)
}

// node reads a node from the fake cluster.
func (c *cluster) node(t *testing.T, name string) *corev1.Node {
	t.Helper()
	n, err := c.client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// testConfig connects the commands to client, a fake clock at testNow and
// no terminal.
func testConfig(client kubernetes.Interface) (Config, *clocktesting.FakeClock) {
	clk := clocktesting.NewFakeClock(testNow)
	return Config{
		Name:       "udrain",
		NewClient:  func(genericclioptions.RESTClientGetter) (kubernetes.Interface, error) { return client, nil },
		Clock:      clk,
		IsTerminal: func(io.Writer) bool { return false },
		Environ:    func() []string { return []string{"PATH=" + os.Getenv("PATH")} },
		LookupEnv:  func(string) (string, bool) { return "", false },
	}, clk
}

// result is what a command line did.
type result struct {
	code           int
	stdout, stderr string
}

// run runs a command line in-process with cfg.
func run(t *testing.T, ctx context.Context, cfg Config, args ...string) result {
	t.Helper()
	var out, errOut testkit.SyncBuffer
	streams := genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut}
	code := Run(ctx, args, streams, cfg)
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

// runOn runs a command line against c with the test config.
func runOn(t *testing.T, c *cluster, args ...string) result {
	t.Helper()
	cfg, _ := testConfig(c.client)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return run(t, ctx, cfg, args...)
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/udrain/app -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s differs from the golden file (-want +got); if the change is intended, run go test ./cmd/udrain/app -update and document it in docs/CLI.md:\n%s", name, diff)
	}
}

// normalize replaces what varies between runs (ports, elapsed times) in
// output compared with golden files.
func normalize(s string, res ...[2]string) string {
	for _, r := range res {
		s = regexp.MustCompile(r[0]).ReplaceAllString(s, r[1])
	}
	return s
}

// cordon marks a node unschedulable, as someone other than udrain would.
func cordon(t *testing.T, c *cluster, name string) {
	t.Helper()
	n := c.node(t, name)
	n.Spec.Unschedulable = true
	if _, err := c.client.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// withUnlabeledNode adds a node without the domain label.
func withUnlabeledNode() clusterOption {
	return func(o *clusterObjects) {
		n := cpuNode("stray-1", "")
		delete(n.Labels, topology.DefaultDomainLabel)
		o.nodes = append(o.nodes, n)
	}
}

func streamsOf(out, errOut io.Writer) genericiooptions.IOStreams {
	return genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: out, ErrOut: errOut}
}

// contextWithCancel is a context for one command, canceled at the end of
// the test at the latest.
func contextWithCancel(t *testing.T) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx, cancel
}

// runInBackground runs a command line in-process with cfg in another
// goroutine; done receives its exit code.
func runInBackground(ctx context.Context, cfg Config, args ...string) (out, errOut *testkit.SyncBuffer, done <-chan int) {
	out, errOut = &testkit.SyncBuffer{}, &testkit.SyncBuffer{}
	code := make(chan int, 1)
	go func() {
		code <- Run(ctx, args, streamsOf(out, errOut), cfg)
	}()
	return out, errOut, code
}
