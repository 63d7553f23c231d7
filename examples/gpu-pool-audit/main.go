package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/udrain/udrain/gpu"
	"github.com/udrain/udrain/report"
)

// Exit codes, stable for scripts.
const (
	exitOK       = 0
	exitFailed   = 1
	exitUsage    = 2
	exitProblems = 3
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr, clientFromKubeconfig))
}

// newClientFunc builds a clientset from a kubeconfig path ("" for the
// default loading rules); tests substitute a fake clientset.
type newClientFunc func(kubeconfig string) (kubernetes.Interface, error)

func clientFromKubeconfig(kubeconfig string) (kubernetes.Interface, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig: %w (pass --kubeconfig or set KUBECONFIG)", err)
	}
	return kubernetes.NewForConfig(cfg)
}

// run parses args, audits the cluster and prints the summary; it returns
// the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, newClient newClientFunc) int {
	fs := flag.NewFlagSet("gpu-pool-audit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kubeconfig := fs.String("kubeconfig", "", "path to the kubeconfig; default $KUBECONFIG or ~/.kube/config")
	output := fs.String("o", "text", "output format: text or json")
	grace := fs.Duration("grace-period", gpu.DefaultGracePeriod, "how long a GPU node may go without advertising its devices after it became Ready")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if *output != "text" && *output != "json" {
		fmt.Fprintf(stderr, "gpu-pool-audit: unknown output format %q; use -o text or -o json\n", *output)
		return exitUsage
	}
	if *grace <= 0 {
		fmt.Fprintf(stderr, "gpu-pool-audit: --grace-period must be positive, got %s\n", *grace)
		return exitUsage
	}
	client, err := newClient(*kubeconfig)
	if err != nil {
		fmt.Fprintln(stderr, "gpu-pool-audit:", err)
		return exitFailed
	}
	s, err := audit(ctx, client, gpu.Options{GracePeriod: *grace}, func(msg string) {
		fmt.Fprintln(stderr, "gpu-pool-audit: warning:", msg)
	})
	if err != nil {
		fmt.Fprintln(stderr, "gpu-pool-audit:", err)
		return exitFailed
	}
	if *output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(s)
	} else {
		// The table udrain gpu prints (package report).
		err = report.GPUSummary{Summary: s}.WriteTable(stdout, report.TableOptions{})
	}
	if err != nil {
		fmt.Fprintln(stderr, "gpu-pool-audit: write output:", err)
		return exitFailed
	}
	if len(s.Problems) > 0 {
		return exitProblems
	}
	return exitOK
}

// listPageSize bounds each list call, so that a cluster of thousands of
// nodes is read in pages instead of one large response.
const listPageSize = 500

// audit lists the nodes and the DaemonSets and summarises them (gpu picks
// the device plugins among the DaemonSets). When DaemonSets may not be
// listed, it warns and summarises the nodes alone.
func audit(ctx context.Context, client kubernetes.Interface, opts gpu.Options, warn func(string)) (gpu.Summary, error) {
	var nodes []*corev1.Node
	for cont := ""; ; {
		list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{Limit: listPageSize, Continue: cont})
		if err != nil {
			return gpu.Summary{}, fmt.Errorf("list nodes: %w", err)
		}
		for i := range list.Items {
			nodes = append(nodes, &list.Items[i])
		}
		if cont = list.Continue; cont == "" {
			break
		}
	}
	var daemonSets []*appsv1.DaemonSet
	for cont := ""; ; {
		list, err := client.AppsV1().DaemonSets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{Limit: listPageSize, Continue: cont})
		if apierrors.IsForbidden(err) {
			warn(fmt.Sprintf("cannot list DaemonSets (%v); GPU nodes without their resource are reported without the device plugin's diagnosis. Grant list on daemonsets.apps to get it.", err))
			daemonSets = nil
			break
		}
		if err != nil {
			return gpu.Summary{}, fmt.Errorf("list DaemonSets: %w", err)
		}
		for i := range list.Items {
			daemonSets = append(daemonSets, &list.Items[i])
		}
		if cont = list.Continue; cont == "" {
			break
		}
	}
	return gpu.Summarize(nodes, daemonSets, opts), nil
}
