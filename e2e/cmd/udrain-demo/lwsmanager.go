package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/udrain/udrain/e2e/testbed"
)

// lwsReadyLine starts the line lws-manager prints once the API server calls
// the manager's webhooks: the demo script creates LeaderWorkerSets only
// after it.
const lwsReadyLine = "LeaderWorkerSet manager ready"

// runLWSManager runs the LeaderWorkerSet manager of lwsDir (hack/lws.sh's
// cache) out of cluster, as the e2e testbed does (testbed.LWSSetup): its
// CRDs applied, its configuration and a serving certificate for 127.0.0.1
// in workDir, its webhooks registered with url clientConfigs; the
// manager's output goes to stderr. It prints lwsReadyLine once the webhooks
// are called, runs until ctx ends, then deletes the webhook configurations
// (a cluster left with webhooks nobody serves refuses every
// LeaderWorkerSet pod) and stops the manager.
func runLWSManager(ctx context.Context, cs clients, lwsDir, workDir string, stdout, stderr io.Writer) error {
	if cs.cfg == nil {
		return errors.New("lws-manager needs a kubeconfig file")
	}
	setup, err := testbed.NewLWSSetup(lwsDir, workDir, cs.kubeconfig)
	if err != nil {
		return err
	}
	if err := setup.InstallCRDs(ctx, cs.cfg); err != nil {
		return err
	}
	argv := setup.Command()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = stderr, stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the LeaderWorkerSet manager: %w", err)
	}
	exit := make(chan struct{})
	var exitErr error
	go func() { exitErr = cmd.Wait(); close(exit) }()
	exited := func() (bool, error) {
		select {
		case <-exit:
			return true, exitErr
		default:
			return false, nil
		}
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exit:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-exit
		}
	}()
	defer deleteWebhooks(cs, setup, stderr)
	if err := setup.Start(ctx, cs.cfg, exited); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: webhooks on %s\n", lwsReadyLine, setup.WebhookHost())
	select {
	case <-ctx.Done():
		return nil
	case <-exit:
		return fmt.Errorf("the LeaderWorkerSet manager exited: %v", exitErr)
	}
}

// deleteWebhooks deletes the webhook configurations setup applied.
func deleteWebhooks(cs clients, setup *testbed.LWSSetup, stderr io.Writer) {
	configs, err := setup.WebhookConfigurations()
	if err != nil {
		fmt.Fprintf(stderr, "udrain-demo: %v\n", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a := cs.kube.AdmissionregistrationV1()
	for _, c := range configs {
		var err error
		if c.GetKind() == "MutatingWebhookConfiguration" {
			err = a.MutatingWebhookConfigurations().Delete(ctx, c.GetName(), metav1.DeleteOptions{})
		} else {
			err = a.ValidatingWebhookConfigurations().Delete(ctx, c.GetName(), metav1.DeleteOptions{})
		}
		if err != nil && !apierrors.IsNotFound(err) {
			fmt.Fprintf(stderr, "udrain-demo: delete %s %s: %v\n", c.GetKind(), c.GetName(), err)
		}
	}
}
