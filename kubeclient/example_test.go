package kubeclient_test

import (
	"fmt"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/udrain/udrain/kubeclient"
)

// A client whose every request ends within 10 seconds (a watch: until it
// starts), at udrain's rate limits, built from the configuration a program
// already has (clientcmd.BuildConfigFromFlags, rest.InClusterConfig).
func ExampleConfig() {
	base := &rest.Config{Host: "https://10.0.0.1:6443"}
	cfg, err := kubeclient.Config(base, kubeclient.Options{
		RequestTimeout: 10 * time.Second,
		UserAgent:      kubeclient.UserAgent("my-upgrader", "v1.2.3"),
	})
	if err != nil {
		panic(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		panic(err)
	}
	_ = client // pass it to eviction.New or eviction.NewReader
	fmt.Println(cfg.QPS, cfg.Burst, cfg.Timeout)
	// Output: 50 100 0s
}
