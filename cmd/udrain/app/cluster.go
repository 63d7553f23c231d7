package app

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/pager"
	"k8s.io/klog/v2"

	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/topology"
)

// listPageSize bounds each list call, so that a large cluster is read in
// pages rather than in one response.
const listPageSize = 500

// domainFlags are --domain-label and --unlabeled, on every command that
// names domains.
type domainFlags struct {
	label     string
	unlabeled string
}

func (f *domainFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.label, "domain-label", topology.DefaultDomainLabel, "Node label whose value names a node's upgrade domain (any key works: a zone, a node pool)")
	cmd.Flags().StringVar(&f.unlabeled, "unlabeled", "error", "What to do with nodes without the domain label: error, skip (leave them out), or own-domain (each node its own domain)")
}

func (f *domainFlags) policy() (topology.UnlabeledPolicy, error) {
	switch f.unlabeled {
	case "error":
		return topology.UnlabeledError, nil
	case "skip":
		return topology.UnlabeledSkip, nil
	case "own-domain":
		return topology.UnlabeledOwnDomain, nil
	}
	return 0, usageErrorf("--unlabeled=%q: use error, skip or own-domain", f.unlabeled)
}

func (f *domainFlags) validate() error {
	if err := f.validateLabel(); err != nil {
		return err
	}
	_, err := f.policy()
	return err
}

// validateLabel checks --domain-label alone (gpu has no --unlabeled).
func (f *domainFlags) validateLabel() error {
	if f.label == "" {
		return usageErrorf("--domain-label is empty: name the node label of the upgrade domains, e.g. %s", topology.DefaultDomainLabel)
	}
	if errs := validation.IsQualifiedName(f.label); len(errs) > 0 {
		return usageErrorf("--domain-label=%q is not a label key: %s", f.label, strings.Join(errs, "; "))
	}
	return nil
}

func (f *domainFlags) layoutOptions() topology.LayoutOptions {
	p, _ := f.policy()
	return topology.LayoutOptions{LabelKey: f.label, Unlabeled: p}
}

// listNodes lists the cluster's nodes in pages (the commands that need
// only nodes start no informers), within connect (connectTimeout).
func (o *options) listNodes(ctx context.Context, client kubernetes.Interface, connect time.Duration) ([]corev1.Node, error) {
	var out []corev1.Node
	err := o.eachItem(ctx, client, connect, "nodes", func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return client.CoreV1().Nodes().List(ctx, opts)
	}, func(obj runtime.Object) { out = append(out, *obj.(*corev1.Node)) })
	return out, err
}

// listDaemonSets lists the cluster's DaemonSets in pages, within connect;
// without the permission to, it logs why and returns none.
func (o *options) listDaemonSets(ctx context.Context, client kubernetes.Interface, connect time.Duration) ([]appsv1.DaemonSet, error) {
	var out []appsv1.DaemonSet
	err := o.eachItem(ctx, client, connect, "DaemonSets", func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return client.AppsV1().DaemonSets(metav1.NamespaceAll).List(ctx, opts)
	}, func(obj runtime.Object) { out = append(out, *obj.(*appsv1.DaemonSet)) })
	if apierrors.IsForbidden(err) {
		klog.FromContext(ctx).Info("Cannot list DaemonSets; GPU nodes without their resource are reported without the device plugin's diagnosis (grant list on daemonsets.apps to get it)", "err", err)
		return nil, nil
	}
	return out, err
}

// connectTimeout is how long a command waits for an API server that does
// not serve it before it fails with an *eviction.UnreachableError:
// eviction.DefaultConnectTimeout, or the command's --timeout if shorter
// (zero: none given).
func connectTimeout(timeout time.Duration) time.Duration {
	if timeout > 0 {
		return min(eviction.DefaultConnectTimeout, timeout)
	}
	return eviction.DefaultConnectTimeout
}

// eachItem lists with client-go's pager, listPageSize items at a time,
// within connect: an API server that does not serve the list within it
// (refused, no answer, 5xx or 429 every time) is an
// *eviction.UnreachableError.
func (o *options) eachItem(ctx context.Context, client kubernetes.Interface, connect time.Duration, what string, list func(context.Context, metav1.ListOptions) (runtime.Object, error), each func(runtime.Object)) error {
	lctx, cancel := context.WithTimeout(ctx, connect)
	defer cancel()
	start := time.Now()
	p := pager.New(pager.SimplePageFunc(func(opts metav1.ListOptions) (runtime.Object, error) { return list(lctx, opts) }))
	p.PageSize = listPageSize
	err := p.EachListItem(lctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		each(obj)
		return nil
	})
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err):
		return &eviction.PermissionError{Err: err}
	}
	if ue := o.unreachableError(client, err, time.Since(start)); ue != nil {
		return ue
	}
	return fmt.Errorf("listing %s: %w", what, err)
}
