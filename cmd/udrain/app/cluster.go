package app

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

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
	return nil
}

func (f *domainFlags) layoutOptions() topology.LayoutOptions {
	p, _ := f.policy()
	return topology.LayoutOptions{LabelKey: f.label, Unlabeled: p}
}

// clusterState is what the read-only commands list.
type clusterState struct {
	Nodes []corev1.Node
	// Pods point into lists or a watch cache: they must not be changed.
	Pods       []*corev1.Pod
	PDBs       []policyv1.PodDisruptionBudget
	PodGroups  []schedulingv1beta1.PodGroup
	DaemonSets []appsv1.DaemonSet
}

// what clusterState lists besides nodes.
type listWhat struct {
	pods, pdbs, daemonSets bool
}

// listCluster lists nodes and what asks for, in pages.
func listCluster(ctx context.Context, client kubernetes.Interface, what listWhat) (*clusterState, error) {
	s := &clusterState{}
	err := pages(ctx, "nodes", func(opts metav1.ListOptions) (string, error) {
		l, err := client.CoreV1().Nodes().List(ctx, opts)
		if err != nil {
			return "", err
		}
		s.Nodes = append(s.Nodes, l.Items...)
		return l.Continue, nil
	})
	if err != nil {
		return nil, err
	}
	if what.pods {
		err := pages(ctx, "pods", func(opts metav1.ListOptions) (string, error) {
			l, err := client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, opts)
			if err != nil {
				return "", err
			}
			s.Pods = append(s.Pods, topology.PodPointers(l.Items)...)
			return l.Continue, nil
		})
		if err != nil {
			return nil, err
		}
		s.PodGroups = listPodGroups(ctx, client)
	}
	if what.pdbs {
		err := pages(ctx, "PodDisruptionBudgets", func(opts metav1.ListOptions) (string, error) {
			l, err := client.PolicyV1().PodDisruptionBudgets(metav1.NamespaceAll).List(ctx, opts)
			if err != nil {
				return "", err
			}
			s.PDBs = append(s.PDBs, l.Items...)
			return l.Continue, nil
		})
		if err != nil {
			return nil, err
		}
	}
	if what.daemonSets {
		err := pages(ctx, "DaemonSets", func(opts metav1.ListOptions) (string, error) {
			l, err := client.AppsV1().DaemonSets(metav1.NamespaceAll).List(ctx, opts)
			if err != nil {
				return "", err
			}
			s.DaemonSets = append(s.DaemonSets, l.Items...)
			return l.Continue, nil
		})
		if apierrors.IsForbidden(err) {
			klog.FromContext(ctx).Info("Cannot list DaemonSets; GPU nodes without their resource are reported without the device plugin's diagnosis (grant list on daemonsets.apps to get it)", "err", err)
			err = nil
		}
		if err != nil {
			return nil, err
		}
	}
	return s, nil
}

// pages calls list until the continue token is empty.
func pages(ctx context.Context, what string, list func(metav1.ListOptions) (string, error)) error {
	for cont := ""; ; {
		next, err := list(metav1.ListOptions{Limit: listPageSize, Continue: cont})
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("listing %s: %w", what, err)
		}
		if next == "" {
			return nil
		}
		cont = next
	}
}

// listPodGroups lists native PodGroups; a cluster that does not serve
// scheduling.k8s.io/v1beta1 (the GenericWorkload gate is off) has none.
func listPodGroups(ctx context.Context, client kubernetes.Interface) []schedulingv1beta1.PodGroup {
	var out []schedulingv1beta1.PodGroup
	err := pages(ctx, "PodGroups", func(opts metav1.ListOptions) (string, error) {
		l, err := client.SchedulingV1beta1().PodGroups(metav1.NamespaceAll).List(ctx, opts)
		if err != nil {
			return "", err
		}
		out = append(out, l.Items...)
		return l.Continue, nil
	})
	if err != nil {
		klog.FromContext(ctx).V(2).Info("No native PodGroups; grouping by labels only", "reason", err.Error())
		return nil
	}
	return out
}

// groups finds the groups among the state's pods with the groupers
// package eviction uses: LeaderWorkerSet, Ray, then native PodGroups.
func (s *clusterState) groups() []topology.Group {
	groupers := append(topology.DefaultGroupers(), topology.ByPodGroup(s.PodGroups))
	return topology.FindGroups(s.Pods, groupers...)
}
