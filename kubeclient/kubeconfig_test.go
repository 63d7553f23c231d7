package kubeclient_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/kubeclient"
)

func TestCheckSelection(t *testing.T) {
	kubeconfig := clientcmdapi.Config{
		Contexts:  map[string]*clientcmdapi.Context{"b": {}, "a": {}},
		Clusters:  map[string]*clientcmdapi.Cluster{"a": {}},
		AuthInfos: map[string]*clientcmdapi.AuthInfo{},
	}
	for name, tc := range map[string]struct {
		sel  kubeclient.Selection
		want *udrain.ConfigError
	}{
		"none named":     {kubeclient.Selection{}, nil},
		"known names":    {kubeclient.Selection{Context: "b", Cluster: "a"}, nil},
		"a context":      {kubeclient.Selection{Context: "nosuch"}, &udrain.ConfigError{Field: "kubeclient.Selection.Context", Problem: `"nosuch": the kubeconfig has no such context (it has: a, b)`}},
		"a cluster":      {kubeclient.Selection{Context: "a", Cluster: "b"}, &udrain.ConfigError{Field: "kubeclient.Selection.Cluster", Problem: `"b": the kubeconfig has no such cluster (it has: a)`}},
		"a user of none": {kubeclient.Selection{User: "u"}, &udrain.ConfigError{Field: "kubeclient.Selection.User", Problem: `"u": the kubeconfig has no such user (it has: none)`}},
		"the first":      {kubeclient.Selection{Context: "x", User: "u"}, &udrain.ConfigError{Field: "kubeclient.Selection.Context", Problem: `"x": the kubeconfig has no such context (it has: a, b)`}},
	} {
		t.Run(name, func(t *testing.T) {
			err := kubeclient.CheckSelection(kubeconfig, tc.sel)
			var got *udrain.ConfigError
			if err != nil && !errors.As(err, &got) {
				t.Fatalf("%v (%T), want a *udrain.ConfigError", err, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// ConfigFromFlags: the connection flags pick the kubeconfig's entries,
// with Config's settings applied; a name the kubeconfig lacks is refused.
func TestConfigFromFlags(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters:
- {name: a, cluster: {server: "https://a.example:6443"}}
- {name: b, cluster: {server: "https://b.example:6443"}}
users:
- {name: u, user: {token: t}}
contexts:
- {name: a, context: {cluster: a, user: u}}
- {name: b, context: {cluster: b, user: u}}
current-context: a
`), 0o600); err != nil {
		t.Fatal(err)
	}
	type config struct {
		Host      string
		QPS       float32
		Burst     int
		UserAgent string
	}
	for name, tc := range map[string]struct {
		context, cluster string
		want             config
		wantField        string
	}{
		"the current context": {want: config{"https://a.example:6443", 50, 100, "agent"}},
		"--context":           {context: "b", want: config{"https://b.example:6443", 50, 100, "agent"}},
		"--cluster":           {cluster: "b", want: config{"https://b.example:6443", 50, 100, "agent"}},
		"unknown --context":   {context: "c", wantField: "kubeclient.Selection.Context"},
		"unknown --cluster":   {cluster: "c", wantField: "kubeclient.Selection.Cluster"},
	} {
		t.Run(name, func(t *testing.T) {
			flags := genericclioptions.NewConfigFlags(false)
			*flags.KubeConfig, *flags.Context, *flags.ClusterName = kubeconfig, tc.context, tc.cluster
			cfg, err := kubeclient.ConfigFromFlags(flags, kubeclient.Options{UserAgent: "agent"})
			if tc.wantField != "" {
				var ce *udrain.ConfigError
				if !errors.As(err, &ce) || ce.Field != tc.wantField {
					t.Fatalf("error %v, want a *udrain.ConfigError of %s", err, tc.wantField)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, config{cfg.Host, cfg.QPS, cfg.Burst, cfg.UserAgent}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
