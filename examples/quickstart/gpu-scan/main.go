// Command gpu-scan lists the GPU nodes that need action, on package gpu:
// a node whose GPUs are not advertised (and the device plugin's taint or
// affinity that keeps it off), unhealthy devices, a GPU node without
// labels.
//
//	go run ./examples/quickstart/gpu-scan --kubeconfig ~/.kube/config
//
// It exits 0 when every GPU node is fine, 3 when some need action.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/udrain/udrain/gpu"
)

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig file")
	flag.Parse()
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	var problems int
	if err == nil {
		var client *kubernetes.Clientset
		if client, err = kubernetes.NewForConfig(cfg); err == nil {
			problems, err = scan(context.Background(), client, os.Stdout)
		}
	}
	switch {
	case err != nil:
		fmt.Fprintln(os.Stderr, "gpu-scan:", err)
		os.Exit(1)
	case problems > 0:
		os.Exit(3)
	}
}

// scan classifies every node, with the cluster's DaemonSets as they are
// (gpu finds the device plugins among them), and prints the problems of
// each node that needs action. It returns how many nodes do.
func scan(ctx context.Context, client kubernetes.Interface, out io.Writer) (int, error) {
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	daemonSets, err := client.AppsV1().DaemonSets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	s := gpu.Summarize(pointers(nodes.Items), pointers(daemonSets.Items), gpu.Options{})
	for _, p := range s.Pools {
		fmt.Fprintf(out, "%s: %d nodes, %d of %d GPUs advertised\n", p.Kind, len(p.Nodes), p.AdvertisedGPUs, p.GPUs)
	}
	for _, p := range s.Problems {
		fmt.Fprintf(out, "%s %s %s: %s\n", p.Node, p.Severity, p.Code, p.Message)
	}
	return len(s.ProblemNodes()), nil
}

// pointers returns pointers to a list's items, as a lister gives them.
func pointers[T corev1.Node | appsv1.DaemonSet](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}
