package topology_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/udrain/udrain/topology"
)

func ExampleBuildLayout() {
	var nodes []corev1.Node
	for _, n := range []struct{ name, ud string }{{"gpu-10", "ud-10"}, {"gpu-2", "ud-2"}, {"gpu-1", "ud-2"}} {
		nodes = append(nodes, corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name: n.name, Labels: map[string]string{topology.DefaultDomainLabel: n.ud},
		}})
	}
	layout, err := topology.BuildLayout(nodes, topology.LayoutOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, d := range layout.Domains {
		fmt.Println(d.Name, d.Nodes)
	}
	// Output:
	// ud-2 [gpu-1 gpu-2]
	// ud-10 [gpu-10]
}

func ExampleFindGroups() {
	member := func(name, worker string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Namespace: "inference", Name: name,
			Labels: map[string]string{
				topology.LWSNameLabel:        "llama",
				topology.LWSGroupIndexLabel:  "0",
				topology.LWSWorkerIndexLabel: worker,
			},
			Annotations: map[string]string{topology.LWSSizeAnnotation: "3"},
		}}
	}
	pods := []corev1.Pod{member("llama-0-1", "1"), member("llama-0", "0")}
	for _, g := range topology.FindGroups(topology.PodPointers(pods)) {
		fmt.Printf("%s leader=%s members=%v expected=%d\n", g.ID, g.Leader.Name, g.MemberNames(), g.ExpectedSize())
	}
	// Output:
	// inference/llama-0 leader=llama-0 members=[llama-0 llama-0-1] expected=3
}

func ExampleAudit() {
	nodes := []corev1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{topology.DefaultDomainLabel: "ud-a"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "b", Labels: map[string]string{topology.DefaultDomainLabel: "ud-b"}}},
	}
	layout, _ := topology.BuildLayout(nodes, topology.LayoutOptions{})
	leader := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "inference", Name: "llama-0", Labels: map[string]string{
			topology.LWSNameLabel: "llama", topology.LWSGroupIndexLabel: "0", topology.LWSWorkerIndexLabel: "0",
		}},
		Spec: corev1.PodSpec{NodeName: "a"},
	}
	worker := leader
	worker.Name, worker.Spec.NodeName = "llama-0-1", "b"
	worker.Labels = map[string]string{topology.LWSNameLabel: "llama", topology.LWSGroupIndexLabel: "0", topology.LWSWorkerIndexLabel: "1"}
	pods := []corev1.Pod{leader, worker}

	ptrs := topology.PodPointers(pods)
	report := topology.Audit(topology.AuditInput{Layout: layout, Groups: topology.FindGroups(ptrs), Pods: ptrs})
	for _, f := range report.Findings {
		fmt.Println(f.Severity, f.Code, f.Group, f.Domains)
	}
	// Output:
	// Error Pack llama-0 [ud-a ud-b]
	// Error UnprotectedLeader llama-0 [ud-a]
}
