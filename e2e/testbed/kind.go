package testbed

import (
	"context"

	"sigs.k8s.io/e2e-framework/support"
	"sigs.k8s.io/e2e-framework/support/kind"
)

// kindCluster makes a kind cluster through e2e-framework's kind provider.
type kindCluster struct {
	name     string
	provider support.E2EClusterProvider
}

func newKindCluster(o Options) *kindCluster {
	return &kindCluster{name: o.ClusterName, provider: kind.NewProvider().WithName(o.ClusterName)}
}

func (k *kindCluster) up(ctx context.Context) (string, error) { return k.provider.Create(ctx) }

func (k *kindCluster) down(ctx context.Context) error { return k.provider.Destroy(ctx) }

func (k *kindCluster) reaper() []string {
	return []string{"kind", "delete", "cluster", "--name", k.name}
}

func (k *kindCluster) copyLogs(ctx context.Context, dest string) error {
	return k.provider.ExportLogs(ctx, dest)
}
