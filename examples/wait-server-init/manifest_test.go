package main

import (
	"context"
	"errors"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/bootstrap"
)

// worker.yaml must be a valid StatefulSet whose init container runs
// "udrain wait-server URL --timeout 10m" against the server's Service in the
// worker's namespace, the same server the worker registers with.
func TestManifestInitContainer(t *testing.T) {
	data, err := os.ReadFile("worker.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var sts appsv1.StatefulSet
	if err := yaml.UnmarshalStrict(data, &sts); err != nil {
		t.Fatalf("worker.yaml is not a StatefulSet (strict): %v", err)
	}
	if sts.Kind != "StatefulSet" || sts.APIVersion != "apps/v1" {
		t.Fatalf("kind %s/%s, want apps/v1 StatefulSet", sts.APIVersion, sts.Kind)
	}
	spec := sts.Spec.Template.Spec
	if len(spec.InitContainers) != 1 {
		t.Fatalf("%d init containers, want 1", len(spec.InitContainers))
	}
	init := spec.InitContainers[0]
	if init.Name != "wait-for-server" {
		t.Errorf("init container %q, want wait-for-server", init.Name)
	}
	wantCmd := []string{"udrain", "wait-server", "http://gpustack-server." + sts.Namespace + ".svc:80/healthz", "--timeout", "10m"}
	if diff := cmp.Diff(wantCmd, append(append([]string(nil), init.Command...), init.Args...)); diff != "" {
		t.Errorf("init container command (-want +got):\n%s", diff)
	}

	// The URL is one WaitForServer accepts: with a canceled context it
	// stops before the first attempt, so only invalid input would differ.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = bootstrap.WaitForServer(ctx, init.Args[1], bootstrap.Options{})
	var we *bootstrap.WaitError
	var invalid *udrain.ConfigError
	if !errors.As(err, &we) || errors.As(err, &invalid) {
		t.Errorf("WaitForServer rejects the manifest's target %q: %v", init.Args[1], err)
	}
	if d, err := time.ParseDuration(init.Args[3]); err != nil || d != 10*time.Minute {
		t.Errorf("--timeout %q, want 10m", init.Args[3])
	}

	// The worker container registers with the server the init container
	// waited for.
	var serverURL string
	for i, a := range spec.Containers[0].Args {
		if a == "--server-url" && i+1 < len(spec.Containers[0].Args) {
			serverURL = spec.Containers[0].Args[i+1]
		}
	}
	waited, _ := url.Parse(init.Args[1])
	registers, err := url.Parse(serverURL)
	if err != nil || registers.Host != waited.Host || registers.Scheme != waited.Scheme {
		t.Errorf("worker registers with %q but the init container waits for %q", serverURL, init.Args[1])
	}
}
