package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/udrain/udrain/cmd/udrain/app"
	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/health"
	"github.com/udrain/udrain/report"
	"github.com/udrain/udrain/topology"
)

// Run executes a command line in-process, as an end-to-end test or a
// wrapper program would, and returns its exit code. Config.NewClient
// substitutes the cluster (here a fake clientset with two labelled nodes).
func ExampleRun() {
	client := fake.NewClientset(
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-1", Labels: map[string]string{topology.DefaultDomainLabel: "ud-1"}}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-2", Labels: map[string]string{topology.DefaultDomainLabel: "ud-2"}}},
	)
	cfg := app.Config{
		Name:      "udrain",
		NewClient: func(genericclioptions.RESTClientGetter) (kubernetes.Interface, error) { return client, nil },
	}
	var out, errOut bytes.Buffer
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: &out, ErrOut: &errOut}

	code := app.Run(context.Background(), []string{"domains", "-o", "json"}, streams, cfg)
	var list report.DomainList
	if err := json.Unmarshal(out.Bytes(), &list); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("exit code", code, list.Kind, len(list.Items), "domains")

	code = app.Run(context.Background(), []string{"plan", "ud-3"}, streams, cfg)
	fmt.Println("exit code", code)
	// Output:
	// exit code 0 DomainList 2 domains
	// exit code 2
}

// ExitCode maps the errors of the libraries to the documented exit codes.
func ExampleExitCode() {
	fmt.Println(app.ExitCode(nil))
	fmt.Println(app.ExitCode(&topology.UnknownDomainError{Domain: "ud-9"}))
	fmt.Println(app.ExitCode(&eviction.DomainError{Domain: "ud-1", Stage: eviction.StagePhase1, Block: &eviction.BlockInfo{BudgetRef: health.BudgetRef{PDB: "leaders"}}, Err: context.DeadlineExceeded}))
	fmt.Println(app.ExitCode(&topology.ContractError{}))
	fmt.Println(app.ExitCode(context.Canceled))
	// Output:
	// 0
	// 2
	// 3
	// 4
	// 130
}

// The help texts name the program as it was invoked; as the kubectl
// plugin, "kubectl udrain".
func ExampleDisplayName() {
	fmt.Println(app.DisplayName("/usr/local/bin/kubectl-udrain"))
	fmt.Println(app.DisplayName("./bin/udrain"))
	// Output:
	// kubectl udrain
	// udrain
}
