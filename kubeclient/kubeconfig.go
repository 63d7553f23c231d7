package kubeclient

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/udrain/udrain"
)

// Selection names the entries of a kubeconfig that a connection uses, as
// kubectl's --context, --cluster and --user flags do. An empty name picks
// the one the current context (or Context) gives.
type Selection struct {
	Context string
	Cluster string
	User    string
}

// CheckSelection returns a *udrain.ConfigError (Field
// "kubeclient.Selection.Context", "kubeclient.Selection.Cluster" or
// "kubeclient.Selection.User") when sel names an entry that kubeconfig does
// not have, listing the names it has, so that a mistyped name is reported
// as such before any request; nil otherwise.
func CheckSelection(kubeconfig clientcmdapi.Config, sel Selection) error {
	for _, e := range []struct {
		field, kind, name string
		known             []string
	}{
		{"Context", "context", sel.Context, slices.Collect(maps.Keys(kubeconfig.Contexts))},
		{"Cluster", "cluster", sel.Cluster, slices.Collect(maps.Keys(kubeconfig.Clusters))},
		{"User", "user", sel.User, slices.Collect(maps.Keys(kubeconfig.AuthInfos))},
	} {
		if e.name == "" || slices.Contains(e.known, e.name) {
			continue
		}
		slices.Sort(e.known)
		has := "none"
		if len(e.known) > 0 {
			has = strings.Join(e.known, ", ")
		}
		return &udrain.ConfigError{Field: "kubeclient.Selection." + e.field, Problem: fmt.Sprintf("%q: the kubeconfig has no such %s (it has: %s)", e.name, e.kind, has)}
	}
	return nil
}

// ConfigFromFlags returns the client configuration of kubectl's connection
// flags (--kubeconfig, --context, --server, ...: flags, as a kubectl plugin
// registers them) with the settings of opts (Config). A --context,
// --cluster or --user that the kubeconfig does not have is a
// *udrain.ConfigError (CheckSelection), before any request; a kubeconfig
// that cannot be loaded is flags.ToRESTConfig's error.
func ConfigFromFlags(flags *genericclioptions.ConfigFlags, opts Options) (*rest.Config, error) {
	if raw, err := flags.ToRawKubeConfigLoader().RawConfig(); err == nil {
		sel := Selection{Context: ptr.Deref(flags.Context, ""), Cluster: ptr.Deref(flags.ClusterName, ""), User: ptr.Deref(flags.AuthInfoName, "")}
		if err := CheckSelection(raw, sel); err != nil {
			return nil, err
		}
	}
	base, err := flags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	return Config(base, opts)
}
