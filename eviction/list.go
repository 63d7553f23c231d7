package eviction

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/pager"
)

// listPageSize bounds each list request of the Drainer's own, so that a
// large cluster is read in pages rather than in one answer.
const listPageSize = 500

// listNodes returns the cluster's nodes, ordered by name: from the
// caller's informer, or listed in pages (Uncordon and Drainer.Nodes
// need nothing else, so they start no informers).
func (d *Drainer) listNodes(ctx context.Context) ([]corev1.Node, error) {
	var nodes []corev1.Node
	if d.s.Informers != nil {
		v, err := d.sharedView(ctx)
		if err != nil {
			return nil, err
		}
		defer v.Stop()
		nodes = v.NodeList()
	} else {
		err := d.eachListed(ctx, "nodes", func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return d.client.CoreV1().Nodes().List(ctx, opts)
		}, func(obj runtime.Object) { nodes = append(nodes, *obj.(*corev1.Node)) })
		if err != nil {
			return nil, err
		}
	}
	slices.SortFunc(nodes, func(a, b corev1.Node) int { return cmp.Compare(a.Name, b.Name) })
	return nodes, nil
}

// listDaemonSets returns the DaemonSets of every namespace, ordered by
// namespace and name: from the caller's DaemonSet informer, or listed in
// pages.
func (d *Drainer) listDaemonSets(ctx context.Context) ([]appsv1.DaemonSet, error) {
	var out []appsv1.DaemonSet
	if in := d.s.Informers; in != nil && in.DaemonSets != nil {
		v, err := d.sharedView(ctx)
		if err != nil {
			return nil, err
		}
		defer v.Stop()
		for _, o := range v.DaemonSetObjects() {
			if ds, ok := o.(*appsv1.DaemonSet); ok {
				out = append(out, *ds)
			}
		}
	} else {
		err := d.eachListed(ctx, "DaemonSets", func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return d.client.AppsV1().DaemonSets(metav1.NamespaceAll).List(ctx, opts)
		}, func(obj runtime.Object) { out = append(out, *obj.(*appsv1.DaemonSet)) })
		if err != nil {
			return nil, err
		}
	}
	slices.SortFunc(out, func(a, b appsv1.DaemonSet) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out, nil
}

// eachListed lists with client-go's pager, listPageSize items a page, and
// hands each item to each. Every page is a request of the Drainer's own
// (bounded): an API server that does not serve one within ConnectTimeout
// (refused, no answer, 5xx or 429 every time) ends the list with an
// *RetryError (ReasonUnreachable); a refusal for lack of permission is a
// *PermissionError. what names the list in other errors.
func (d *Drainer) eachListed(ctx context.Context, what string, list func(context.Context, metav1.ListOptions) (runtime.Object, error), each func(runtime.Object)) error {
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		var page runtime.Object
		err := d.bounded(ctx, func(ctx context.Context) (err error) {
			page, err = list(ctx, opts)
			return err
		})
		return page, err
	})
	p.PageSize = listPageSize
	err := p.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		each(obj)
		return nil
	})
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err):
		return &PermissionError{Reason: ReasonForbidden, Err: err}
	case errors.Is(err, &RetryError{Reason: ReasonUnreachable}):
		return err
	}
	return fmt.Errorf("listing %s: %w", what, err)
}
