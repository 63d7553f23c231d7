package topology

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// DefaultDomainLabel is the node label that names a node's upgrade domain
// when the caller names no other key.
const DefaultDomainLabel = "topology.udrain.dev/upgrade-domain"

// ControlPlaneLabel marks control-plane nodes; the audit counts them per
// domain to protect etcd quorum.
const ControlPlaneLabel = "node-role.kubernetes.io/control-plane"

// UnlabeledPolicy says what BuildLayout does with nodes that lack the domain
// label.
type UnlabeledPolicy int

const (
	// UnlabeledError makes BuildLayout fail with an *UnlabeledNodesError that
	// lists the nodes. It is the default: a node in no domain would never be
	// drained, which is rarely what an upgrade wants. Control-plane nodes
	// (ControlPlaneLabel) without the label are the exception: node-pool
	// upgrades do not take them, and most clusters do not label them, so
	// they are left out and listed in Layout.Unlabeled; an unlabelled
	// worker is still an error.
	UnlabeledError UnlabeledPolicy = iota
	// UnlabeledSkip leaves such nodes out of every domain; they are listed in
	// Layout.Unlabeled.
	UnlabeledSkip
	// UnlabeledOwnDomain gives each such node a domain of its own, named
	// after the node.
	UnlabeledOwnDomain
)

// LayoutOptions configures BuildLayout. The zero value uses
// DefaultDomainLabel, leaves out control-plane nodes without the label and
// rejects other unlabeled nodes.
type LayoutOptions struct {
	// LabelKey is the node label whose value names the domain (a zone, a
	// node pool, ...). Empty means DefaultDomainLabel.
	LabelKey string
	// Unlabeled says what to do with nodes without the label.
	Unlabeled UnlabeledPolicy
}

func (o LayoutOptions) labelKey() string {
	if o.LabelKey == "" {
		return DefaultDomainLabel
	}
	return o.LabelKey
}

// Domain is one upgrade domain: the nodes drained and upgraded together.
type Domain struct {
	// Name is the label value shared by the domain's nodes.
	Name string `json:"name"`
	// Nodes are the names of the domain's nodes, sorted naturally.
	Nodes []string `json:"nodes"`
	// ControlPlaneNodes are the nodes of Nodes that carry ControlPlaneLabel.
	ControlPlaneNodes []string `json:"controlPlaneNodes,omitempty"`
}

// Layout is the partition of a cluster's nodes into upgrade domains.
type Layout struct {
	// LabelKey is the node label the layout was built from.
	LabelKey string `json:"labelKey"`
	// Domains are sorted by name in natural order ("ud-2" before "ud-10").
	Domains []Domain `json:"domains"`
	// Unlabeled lists the nodes without the label left out of every
	// domain: all of them under UnlabeledSkip, the control-plane ones
	// under UnlabeledError.
	Unlabeled []string `json:"unlabeled,omitempty"`
	// ControlPlaneTotal counts the control-plane nodes among all nodes,
	// unlabeled ones included.
	ControlPlaneTotal int `json:"controlPlaneTotal"`

	nodeDomain map[string]string
	index      map[string]int
}

// BuildLayout groups nodes into upgrade domains by the value of the domain
// label. The result does not depend on the order of nodes.
func BuildLayout(nodes []corev1.Node, opts LayoutOptions) (*Layout, error) {
	key := opts.labelKey()
	l := &Layout{LabelKey: key, nodeDomain: make(map[string]string, len(nodes)), index: map[string]int{}}
	byDomain := map[string]*Domain{}
	var unlabeled, skippedCP []string // skippedCP: control-plane nodes left out under UnlabeledError
	for i := range nodes {
		n := &nodes[i]
		if _, cp := n.Labels[ControlPlaneLabel]; cp {
			l.ControlPlaneTotal++
		}
		name, ok := n.Labels[key]
		if !ok || name == "" {
			switch opts.Unlabeled {
			case UnlabeledSkip:
				unlabeled = append(unlabeled, n.Name)
				continue
			case UnlabeledOwnDomain:
				name = n.Name
			default:
				if _, cp := n.Labels[ControlPlaneLabel]; cp {
					skippedCP = append(skippedCP, n.Name)
				} else {
					unlabeled = append(unlabeled, n.Name)
				}
				continue
			}
		}
		d := byDomain[name]
		if d == nil {
			d = &Domain{Name: name}
			byDomain[name] = d
		}
		d.Nodes = append(d.Nodes, n.Name)
		if _, cp := n.Labels[ControlPlaneLabel]; cp {
			d.ControlPlaneNodes = append(d.ControlPlaneNodes, n.Name)
		}
		l.nodeDomain[n.Name] = name
	}
	sortNatural(unlabeled)
	if len(unlabeled) > 0 && opts.Unlabeled == UnlabeledError {
		return nil, &UnlabeledNodesError{LabelKey: key, Nodes: unlabeled}
	}
	if len(skippedCP) > 0 {
		sortNatural(skippedCP)
		unlabeled = skippedCP
	}
	l.Unlabeled = unlabeled
	l.Domains = make([]Domain, 0, len(byDomain))
	for _, d := range byDomain {
		sortNatural(d.Nodes)
		sortNatural(d.ControlPlaneNodes)
		l.Domains = append(l.Domains, *d)
	}
	sort.Slice(l.Domains, func(i, j int) bool { return NaturalLess(l.Domains[i].Name, l.Domains[j].Name) })
	for i, d := range l.Domains {
		l.index[d.Name] = i
	}
	return l, nil
}

// DomainOf returns the domain of the named node, and false when the node is
// in no domain of the layout.
func (l *Layout) DomainOf(node string) (string, bool) {
	d, ok := l.nodeDomain[node]
	return d, ok
}

// Domain returns the named domain, or an *UnknownDomainError that lists the
// domains the layout has.
func (l *Layout) Domain(name string) (Domain, error) {
	i, ok := l.index[name]
	if !ok {
		return Domain{}, &UnknownDomainError{Domain: name, LabelKey: l.LabelKey, Known: l.Names()}
	}
	return l.Domains[i], nil
}

// Names returns the domain names in natural order.
func (l *Layout) Names() []string {
	names := make([]string, len(l.Domains))
	for i, d := range l.Domains {
		names[i] = d.Name
	}
	return names
}

func sortNatural(s []string) {
	sort.Slice(s, func(i, j int) bool { return NaturalLess(s[i], s[j]) })
}

// UnlabeledNodesError reports nodes that carry no domain label.
type UnlabeledNodesError struct {
	LabelKey string
	Nodes    []string
}

func (e *UnlabeledNodesError) Error() string {
	return fmt.Sprintf("%d node(s) have no upgrade-domain label %q: %s; label them (kubectl label node NAME %s=DOMAIN), or choose to skip them or to give each its own domain",
		len(e.Nodes), e.LabelKey, abbreviate(e.Nodes, 10), e.LabelKey)
}

// UnknownDomainError reports a domain name that no node carries.
type UnknownDomainError struct {
	Domain   string
	LabelKey string
	Known    []string
}

func (e *UnknownDomainError) Error() string {
	if len(e.Known) == 0 {
		return fmt.Sprintf("unknown upgrade domain %q: no node carries the label %q", e.Domain, e.LabelKey)
	}
	return fmt.Sprintf("unknown upgrade domain %q (label %q); known domains: %s", e.Domain, e.LabelKey, abbreviate(e.Known, 20))
}

// abbreviate joins at most max names and says how many more there are.
func abbreviate(names []string, max int) string {
	if len(names) <= max {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:max], ", "), len(names)-max)
}
